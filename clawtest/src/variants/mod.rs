//! Variants of a task without a model: the same skills tested on a different surface, so a
//! suite can be regenerated on every release and no model can have memorised it. Each kind of
//! perturbation ([`Kind`]) can be switched on or off; all of them are drawn from one seed, so
//! the same seed gives the same bytes. Each draw must be another surface than the source and
//! every earlier variant; the variant then goes through the accept pipeline generated tasks
//! go through (`accept`): written back as task.yaml, loaded again as any task file is,
//! checked to be a fixed point of that round trip, new, and proven feasible by the oracle
//! before it is handed out; a variant that fails any of these is reported with the reason,
//! never handed out.
//!
//! `perturb.rs` finds the values and rewrites them; `text.rs` holds the seeded draws,
//! whole-token replacement and date arithmetic; `pools.rs` the built-in names.

mod edit;
mod fields;
mod files;
mod perturb;
mod pools;
mod survey;
mod text;

use std::fmt;
use std::path::Path;

use serde_json::Value;

use crate::accept::{self, Distance, Fingerprint, Provenance, Rules};
use crate::sandbox::commands::Commands;
use crate::services::Catalogue;
use crate::task::{self, Task};
use survey::Survey;

pub use files::{Expanded, Expansion, FromFile, WriteError, expand, from_paths, write};

/// One kind of perturbation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// People, companies and e-mail addresses renamed from built-in pools.
    Names,
    /// Ids (`msg_101`, `t-1`) renumbered.
    Ids,
    /// ISO dates shifted by a whole number of weeks (the weekday kept).
    Dates,
    /// Amounts in the fixtures scaled, where no check, safety check, oracle or prompt pins one.
    Amounts,
    /// The fixtures' lists of records put in another order.
    Shuffle,
    /// Records added to the fixtures that no check refers to.
    Distractors,
    /// An opening line before the prompt that changes no instruction.
    Wording,
}

impl Kind {
    /// Every kind, in the order they are applied.
    pub const ALL: [Kind; 7] = [
        Kind::Names,
        Kind::Ids,
        Kind::Dates,
        Kind::Amounts,
        Kind::Shuffle,
        Kind::Distractors,
        Kind::Wording,
    ];

    /// The kind's name on the command line and in provenance.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Names => "names",
            Kind::Ids => "ids",
            Kind::Dates => "dates",
            Kind::Amounts => "amounts",
            Kind::Shuffle => "shuffle",
            Kind::Distractors => "distractors",
            Kind::Wording => "wording",
        }
    }

    /// The kind a name stands for.
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|kind| kind.name() == name)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// The kinds switched on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kinds(u8);

impl Kinds {
    /// Every kind.
    pub fn all() -> Kinds {
        Kinds::only(&Kind::ALL)
    }

    /// These kinds alone.
    pub fn only(kinds: &[Kind]) -> Kinds {
        Kinds(kinds.iter().fold(0, |bits, kind| bits | 1 << *kind as u8))
    }

    /// The same without `kind`.
    pub fn without(self, kind: Kind) -> Kinds {
        Kinds(self.0 & !(1 << kind as u8))
    }

    /// Whether `kind` is on.
    pub fn has(self, kind: Kind) -> bool {
        self.0 & (1 << kind as u8) != 0
    }

    /// Whether none is on.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// What to generate.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Variants per task.
    pub count: u32,
    /// The seed every draw comes from.
    pub seed: u64,
    /// The kinds of perturbation switched on.
    pub kinds: Kinds,
    /// The suite's pass threshold, for the feasibility proof.
    pub threshold: f64,
}

/// The seed when none is given.
pub const DEFAULT_SEED: u64 = 1;

/// The most variants of one task (`vary --count`, `run --variants`). `run --variants` draws
/// them one at a time as its trials start, so memory does not bound them; each must differ
/// from every earlier variant of its task, so drawing N compares N²/2 surfaces: this keeps the
/// longest at about a second of comparing, beside the N feasibility proofs.
pub const MAX_VARIANTS: u32 = 1000;

/// One variant, loaded, feasible, and its text.
#[derive(Debug, Clone)]
pub struct Variant {
    /// The variant as a validated task (`task_id` is the source's id with `.v<N>`).
    pub task: Task,
    /// Its task.yaml: a provenance comment, then the source's text with the changed values
    /// edited in place (its key order, style and comments kept).
    pub yaml: String,
    /// What was changed, one line per kind.
    pub applied: Vec<String>,
}

/// A variant that could not be handed out, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// The id the variant would have had.
    pub id: String,
    /// Why: the validation problems, the infeasibility reasons, or a repeated surface.
    pub reason: String,
}

/// What generating the variants of one task gave.
#[derive(Debug, Clone, Default)]
pub struct Generated {
    /// The variants, in order.
    pub variants: Vec<Variant>,
    /// The variants that failed.
    pub failures: Vec<Failure>,
    /// Why the task was skipped as a whole, if it was.
    pub skipped: Option<String>,
    /// Values left alone (in a regex, a hash's file, a command, a workspace file) and why.
    pub left_alone: Vec<String>,
}

/// How many seeds a variant may try before its surface differs from the source's and every
/// earlier variant's.
const ATTEMPTS: u64 = 16;

/// Generates `options.count` variants of `task` (its services looked up in `catalogue`), the
/// feasibility proof running their commands where `commands` says (the rule for variants).
pub fn generate(
    task: &Task,
    catalogue: &Catalogue,
    options: &Options,
    commands: &Commands,
) -> Generated {
    let mut generated = Generated::default();
    let mut drawer = match Drawer::new(task, options) {
        Ok(drawer) => drawer,
        Err((reason, left_alone)) => {
            generated.skipped = Some(reason);
            generated.left_alone = left_alone;
            return generated;
        }
    };
    generated.left_alone = drawer.survey.left_alone.clone();
    while let Some(drawn) = drawer.next(catalogue, options, commands) {
        match drawn {
            Ok(variant) => generated.variants.push(variant),
            Err(failure) => generated.failures.push(failure),
        }
    }
    generated
}

/// One task's variants, drawn one at a time: what every draw reads (the task, the text it was
/// loaded from, its document and survey), and the surfaces drawn so far, which the next must
/// differ from. Only these fingerprints grow with the count.
struct Drawer {
    task: Task,
    text: String,
    document: Value,
    survey: Survey,
    seen: Vec<Fingerprint>,
    index: u32,
}

impl Drawer {
    /// Ready to draw `task`'s variants; else why it is skipped, and the values left alone.
    fn new(task: &Task, options: &Options) -> Result<Drawer, (String, Vec<String>)> {
        if options.kinds.is_empty() {
            return Err((
                "every kind of perturbation is switched off".into(),
                Vec::new(),
            ));
        }
        let document = task::write::document(task).map_err(|error| {
            (
                format!("the task cannot be written back: {error}"),
                Vec::new(),
            )
        })?;
        // The variant is the source's text edited: the text the task was loaded from.
        let text = task::read::read_bytes(&task.path)
            .ok()
            .and_then(|bytes| task::read::text(bytes).ok())
            .ok_or_else(|| {
                let reason = format!("its file `{}` cannot be read again", task.path.display());
                (reason, Vec::new())
            })?;
        let survey = Survey::new(task, &document, &workspace_files(task));
        // A draw that changes nothing means no draw will: the task is skipped, with the reason.
        let probe = perturb::perturb(task, &survey, options.kinds, options.seed);
        if probe.applied.is_empty() {
            let mut reason = "nothing the chosen kinds of perturbation can change".to_owned();
            if !survey.left_alone.is_empty() {
                reason.push_str("; left alone: ");
                reason.push_str(&survey.left_alone.join(", "));
            }
            return Err((reason, survey.left_alone));
        }
        Ok(Drawer {
            seen: vec![Fingerprint::of_document(&document)],
            task: task.clone(),
            text,
            document,
            survey,
            index: 0,
        })
    }

    /// The next variant, or why it could not be handed out; `None` after `options.count`.
    fn next(
        &mut self,
        catalogue: &Catalogue,
        options: &Options,
        commands: &Commands,
    ) -> Option<Result<Variant, Failure>> {
        if self.index >= options.count {
            return None;
        }
        self.index += 1;
        let (task, index) = (&self.task, self.index);
        let id = format!("{}.v{index}", task.id);
        // Prompt and fixtures both new if any draw gives that, else at least one of them.
        let draw = |distance: Distance, seen: &[Fingerprint]| {
            (0..ATTEMPTS).find_map(|attempt| {
                let seed = text::hash(&task.id)
                    ^ options.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)
                    ^ u64::from(index).wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
                    ^ attempt.wrapping_mul(0x1656_67B1_9E37_79F9);
                let perturbed = perturb::perturb(task, &self.survey, options.kinds, seed);
                let document = task::write::document(&perturbed.task).ok()?;
                let fingerprint = Fingerprint::of_document(&document);
                fingerprint
                    .is_new(seen, distance)
                    .then_some(((document, perturbed), fingerprint))
            })
        };
        let seen = &self.seen;
        let drawn = draw(Distance::Surface, seen).or_else(|| draw(Distance::PartSurface, seen));
        let Some((perturbed, mut fingerprint)) = drawn else {
            return Some(Err(Failure {
                id,
                reason: "every draw repeated the surface of the source or an earlier variant"
                    .into(),
            }));
        };
        let source = Source {
            task,
            text: &self.text,
            document: &self.document,
        };
        let finished = finish(
            &source, catalogue, options, commands, index, &id, perturbed, seen,
        )
        .map_err(|reason| Failure {
            id: id.clone(),
            reason,
        });
        fingerprint.id = id;
        self.seen.push(fingerprint);
        Some(finished)
    }
}

/// The task a variant is drawn from: the task, the text it was loaded from, its document.
struct Source<'a> {
    task: &'a Task,
    text: &'a str,
    document: &'a Value,
}

/// The perturbed document as a variant, through the accept pipeline: the source's text edited
/// to it, loaded beside its source, checked to load as exactly the perturbed document, new
/// against `seen` (its source and the earlier variants: another surface), proven feasible.
#[allow(clippy::too_many_arguments)]
fn finish(
    source: &Source<'_>,
    catalogue: &Catalogue,
    options: &Options,
    commands: &Commands,
    index: u32,
    id: &str,
    (mut document, perturbed): (Value, perturb::Perturbed),
    seen: &[Fingerprint],
) -> Result<Variant, String> {
    let task = source.task;
    document["task_id"] = Value::from(id);
    let hints = edit::Hints {
        replacements: &perturbed.replacements,
        opening: perturbed.opening.as_deref(),
    };
    let text = edit::rewrite(
        source.text,
        source.document,
        &document,
        &perturbed.shape,
        &hints,
    )
    .map_err(|reason| format!("the variant cannot be written like its source: {reason}"))?;
    // Loaded from beside the source, so `files[].source` resolves as the source's does.
    let path = task.folder.join(format!("{id}.yaml"));
    let loaded = task::parse(&path, text.clone(), catalogue).map_err(|invalid| {
        let problems: Vec<String> = invalid
            .problems
            .iter()
            .map(|problem| problem.plain(&path))
            .collect();
        format!("the variant is not a valid task: {}", problems.join("; "))
    })?;
    if task::write::document(&loaded).ok().as_ref() != Some(&document) {
        return Err("the variant's text does not load as the variant it was drawn as".into());
    }
    let rules = Rules {
        catalogue,
        threshold: options.threshold,
        known: seen,
        distance: Distance::PartSurface,
        commands,
    };
    let problems = accept::accept(&loaded, &text, &rules, Vec::new());
    if !problems.is_empty() {
        let reasons: Vec<String> = problems
            .iter()
            .map(|problem| format!("{}: {}", problem.field, problem.message))
            .collect();
        return Err(format!(
            "the variant is not feasible: {}",
            reasons.join("; ")
        ));
    }
    let mut variant = loaded;
    variant.path = task.path.clone();
    let header = provenance(task, options, index, &perturbed.applied).header();
    Ok(Variant {
        task: variant,
        yaml: format!("{header}{text}"),
        applied: perturbed.applied,
    })
}

/// The comments that open a variant's file: where it came from and how it was made.
fn provenance(task: &Task, options: &Options, index: u32, applied: &[String]) -> Provenance {
    let kinds: Vec<&str> = Kind::ALL
        .iter()
        .filter(|kind| options.kinds.has(**kind))
        .map(|kind| kind.name())
        .collect();
    let mut lines = vec![format!(
        "seed: {}; kinds: {}",
        options.seed,
        kinds.join(", ")
    )];
    lines.extend(applied.iter().map(|line| format!("perturbed: {line}")));
    Provenance {
        command: "vary",
        about: format!(
            ": variant {index} of `{}` ({}).",
            task.id,
            task.path.display()
        ),
        lines,
    }
}

/// The text of the task's `files:` (what no value may be changed in): read from the host,
/// lossily, at most 1 MiB each.
fn workspace_files(task: &Task) -> Vec<(String, String)> {
    task.files
        .iter()
        .filter_map(|file| {
            let bytes = read_prefix(&file.source, 1 << 20)?;
            let shown = file
                .source
                .strip_prefix(&file.root)
                .unwrap_or(&file.source)
                .display()
                .to_string();
            Some((shown, String::from_utf8_lossy(&bytes).into_owned()))
        })
        .collect()
}

fn read_prefix(path: &Path, limit: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(limit)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(bytes)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod written_tests;
