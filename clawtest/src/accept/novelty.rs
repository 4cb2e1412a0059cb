//! The one definition of "new" for a task clawtest writes: a candidate is new when it is at
//! the required [`Distance`] from every task it must not repeat. What is compared is a
//! [`Fingerprint`], made the same way for a generated task and a variant: the task.yaml
//! document's normalised content (without `task_id`, `task_name` and `error_injection`), its
//! prompt's words, and its surface (the prompt and the fixtures as written).
//!
//! Two distances, because generation and variants want different things from the same
//! comparison: a generated task must be another *scenario* than every task of the suite and
//! of its run (other content, and a prompt whose words overlap none by [`SIMILARITY`]); a
//! variant is the same scenario on purpose, and must be another *surface* than its source and
//! every earlier variant (another prompt and other fixtures, or at least one of them).

use std::collections::BTreeSet;
use std::fmt;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::task::{self, Position, Problem, Task};

/// Two prompts whose word sets overlap this much (Jaccard) are the same scenario.
pub const SIMILARITY: f64 = 0.8;

/// What "new" compares of a task.
#[derive(Debug, Clone)]
pub struct Fingerprint {
    /// Its `task_id`.
    pub id: String,
    /// Its `task_name`, for a generator's "do not repeat" line.
    pub name: String,
    /// The hash of its normalised content ([`content_hash`]).
    pub hash: String,
    /// Its prompt's words ([`words`]).
    pub words: BTreeSet<String>,
    /// Its prompt as written (JSON text).
    pub prompt: String,
    /// Its fixtures as written (JSON text; empty without fixtures).
    pub fixtures: String,
}

impl Fingerprint {
    /// The fingerprint of `task`, through its written form.
    pub fn of(task: &Task) -> Fingerprint {
        let document = task::write::document(task).unwrap_or_default();
        Fingerprint::of_document(&document)
    }

    /// The fingerprint of a task.yaml document (as `task::write::document` builds it).
    pub fn of_document(document: &Value) -> Fingerprint {
        let text = |key: &str| document.get(key).map(Value::to_string).unwrap_or_default();
        let plain = |key: &str| {
            document
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        Fingerprint {
            id: plain("task_id"),
            name: plain("task_name"),
            hash: document_hash(document),
            words: words(&plain("prompt")),
            prompt: text("prompt"),
            fixtures: text("fixtures"),
        }
    }
}

/// How far a candidate must be from each task it must not repeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distance {
    /// Another scenario (generation): other content, and prompt words overlapping less than
    /// [`SIMILARITY`].
    Scenario,
    /// Another surface of the same scenario (variants): another prompt and other fixtures.
    Surface,
    /// At least a partly other surface: another prompt or other fixtures.
    PartSurface,
}

/// How a candidate repeats a task it must not.
#[derive(Debug, Clone, PartialEq)]
pub enum Repeat {
    /// The same normalised content under another name.
    Content {
        /// The task repeated.
        id: String,
    },
    /// A prompt whose words overlap the task's by at least [`SIMILARITY`].
    Prompt {
        /// The task repeated.
        id: String,
        /// The overlap (Jaccard, 0–1).
        similarity: f64,
    },
    /// The same prompt or the same fixtures (what [`Distance::Surface`] needs changed).
    Surface {
        /// The task repeated.
        id: String,
    },
}

impl Fingerprint {
    /// How `self` repeats `known` at `distance`, if it does.
    pub fn repeats(&self, known: &Fingerprint, distance: Distance) -> Option<Repeat> {
        let id = known.id.clone();
        match distance {
            Distance::Scenario => {
                if known.hash == self.hash {
                    return Some(Repeat::Content { id });
                }
                let similarity = similarity(&known.words, &self.words);
                (similarity >= SIMILARITY).then_some(Repeat::Prompt { id, similarity })
            }
            Distance::Surface => (known.prompt == self.prompt || known.fixtures == self.fixtures)
                .then_some(Repeat::Surface { id }),
            Distance::PartSurface => (known.prompt == self.prompt
                && known.fixtures == self.fixtures)
                .then_some(Repeat::Surface { id }),
        }
    }

    /// Every way `self` repeats one of `known` at `distance`, in `known`'s order.
    pub fn repeats_any(&self, known: &[Fingerprint], distance: Distance) -> Vec<Repeat> {
        known
            .iter()
            .filter_map(|known| self.repeats(known, distance))
            .collect()
    }

    /// Whether `self` is new: it repeats none of `known` at `distance`.
    pub fn is_new(&self, known: &[Fingerprint], distance: Distance) -> bool {
        known
            .iter()
            .all(|known| self.repeats(known, distance).is_none())
    }
}

impl Repeat {
    /// As a validation problem at `at` (the task's first line), with what to do.
    pub fn into_problem(self, at: Option<Position>) -> Problem {
        match &self {
            Repeat::Content { .. } => Problem::new("task_id", self.to_string(), at)
                .with_help("write a different scenario"),
            Repeat::Prompt { .. } => Problem::new("prompt", self.to_string(), at)
                .with_help("write a different scenario, with other people, things and steps"),
            Repeat::Surface { .. } => Problem::new("prompt", self.to_string(), at)
                .with_help("draw again with another seed"),
        }
    }
}

impl fmt::Display for Repeat {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Repeat::Content { id } => write!(
                formatter,
                "the task repeats `{id}` (the same content under another name)"
            ),
            Repeat::Prompt { id, similarity } => write!(
                formatter,
                "the prompt is {:.0} % like `{id}`'s: the same scenario",
                100.0 * similarity
            ),
            Repeat::Surface { id } => write!(
                formatter,
                "the task repeats the surface (prompt or fixtures) of `{id}`"
            ),
        }
    }
}

/// The hash of what a task is, whatever it is called and whatever faults it runs under: its
/// written form without its id, name and `error_injection` (generation writes the suite's
/// faults into every task it writes, after comparing), lower case, with every run of white
/// space one space.
pub fn content_hash(task: &Task) -> String {
    document_hash(&task::write::document(task).unwrap_or_default())
}

fn document_hash(document: &Value) -> String {
    let mut document = document.clone();
    if let Some(map) = document.as_object_mut() {
        // Kept in order (a removal that moved the last key would change the text hashed). Names,
        // fault settings and grouping labels are not what a task asks: the same task under
        // another name or in another group is a repeat.
        map.retain(|key, _| {
            !matches!(
                key.as_str(),
                "task_id" | "task_name" | "error_injection" | "category" | "capability"
            )
        });
    }
    let text = document.to_string().to_lowercase();
    let normalised = text.split_whitespace().collect::<Vec<_>>().join(" ");
    Sha256::digest(normalised.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// A prompt's words: lower case, letters and digits, three characters or more.
pub fn words(prompt: &str) -> BTreeSet<String> {
    prompt
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| word.chars().count() >= 3)
        .map(str::to_owned)
        .collect()
}

/// The Jaccard similarity of two word sets (1 for two empty ones).
pub fn similarity(left: &BTreeSet<String>, right: &BTreeSet<String>) -> f64 {
    let union = left.union(right).count();
    if union == 0 {
        return 1.0;
    }
    left.intersection(right).count() as f64 / union as f64
}
