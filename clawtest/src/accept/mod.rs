//! The one accept pipeline for the tasks clawtest writes itself: tasks generated from a
//! sentence (`generate`) and variants of tasks (`vary`, `run --variants`). Each candidate goes
//! through the same steps, in this order:
//!
//! 1. **load**: the candidate as a task, loaded from a text as any task file is (a model's
//!    answer; a variant's document written back with `task::write` and [`reload`]ed);
//! 2. **new** ([`novelty`]): it repeats no task it must not, at the caller's [`Distance`];
//! 3. **feasible**: the oracle proves it can be passed and told from doing nothing
//!    (`oracle::check`), each reason at its line in the text it was loaded from;
//! 4. **write back and reload** ([`reload`]): the document as task.yaml text, loaded again
//!    from where it will live (and, with [`Reloaded::settle`], written and loaded once more
//!    to the same text), so the file stands on its own;
//! 5. **write with provenance** ([`Provenance`], [`write`]): comments saying where it came
//!    from, then the text.
//!
//! Steps 2 and 3 are [`accept`]; generation and variants differ only in what they pass it.

pub mod novelty;

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::services::Catalogue;
use crate::task::{self, InvalidTask, Position, Problem, Task};
pub use novelty::{Distance, Fingerprint, Repeat};

/// What a candidate is accepted against.
pub struct Rules<'a> {
    /// The services it may use, for the feasibility proof.
    pub catalogue: &'a Catalogue,
    /// The suite's pass threshold, for the feasibility proof.
    pub threshold: f64,
    /// The tasks it must not repeat.
    pub known: &'a [Fingerprint],
    /// How far from each of them it must be.
    pub distance: Distance,
    /// Where the feasibility proof runs its commands (`sandbox::commands`), by the rule for
    /// who wrote them.
    pub commands: &'a crate::sandbox::commands::Commands,
}

/// Steps 2 and 3: every reason `task` (loaded from `source`) is not accepted under `rules`,
/// after the caller's own `problems`. A task that repeats a known one, or that the caller
/// already refused, is not played; none when it is accepted.
pub fn accept(
    task: &Task,
    source: &str,
    rules: &Rules<'_>,
    problems: Vec<Problem>,
) -> Vec<Problem> {
    let mut problems = problems;
    let at = Some(Position {
        line: task.line,
        column: 1,
        span: None,
    });
    let fingerprint = Fingerprint::of(task);
    problems.extend(
        fingerprint
            .repeats_any(rules.known, rules.distance)
            .into_iter()
            .map(|repeat| repeat.into_problem(at)),
    );
    if !problems.is_empty() {
        return problems;
    }
    let feasibility = crate::oracle::check(task, rules.catalogue, rules.threshold, rules.commands);
    problems.extend(
        feasibility
            .problems
            .into_iter()
            .map(|infeasible| infeasible.into_problem(source)),
    );
    problems
}

/// A document written back as task.yaml text and loaded again.
#[derive(Debug, Clone)]
pub struct Reloaded {
    /// The task as loaded from [`Reloaded::text`].
    pub task: Task,
    /// The text it was loaded from.
    pub text: String,
}

/// Why a document could not be written back and loaded again.
#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    /// The document could not be written as task.yaml.
    #[error(transparent)]
    Write(#[from] task::write::WriteError),
    /// The text written is not a valid task.
    #[error("the written task is not valid: {}", .0.plain())]
    Invalid(Box<InvalidTask>),
    /// Written again from what was loaded, it gives another text.
    #[error("the task does not load back as it was written")]
    Unsettled,
}

/// Step 4: `document` written as task.yaml and loaded again as `path` with `catalogue`.
pub fn reload(
    document: &Value,
    path: &Path,
    catalogue: &Catalogue,
) -> Result<Reloaded, ReloadError> {
    let text = task::write::text(document)?;
    load(text, path, catalogue)
}

fn load(text: String, path: &Path, catalogue: &Catalogue) -> Result<Reloaded, ReloadError> {
    let task = task::parse(path, text.clone(), catalogue)
        .map_err(|invalid| ReloadError::Invalid(Box::new(invalid)))?;
    Ok(Reloaded { task, text })
}

impl Reloaded {
    /// The task written from what was loaded, loaded again, and written once more to the same
    /// text: a fixed point of the round trip, so the file reads back as it is.
    pub fn settle(self, path: &Path, catalogue: &Catalogue) -> Result<Reloaded, ReloadError> {
        let written = task::write::to_yaml(&self.task)?;
        let settled = load(written, path, catalogue)?;
        if task::write::to_yaml(&settled.task)? != settled.text {
            return Err(ReloadError::Unsettled);
        }
        Ok(settled)
    }
}

/// Where a written task came from: the comments that open its file (which ClawEnvKit and
/// every YAML reader ignore).
#[derive(Debug, Clone)]
pub struct Provenance {
    /// The command that wrote it, after `cargo clawtest ` (`generate`, `vary`).
    pub command: &'static str,
    /// What follows the command on the first line.
    pub about: String,
    /// The lines after the first, each one comment.
    pub lines: Vec<String>,
}

impl Provenance {
    /// The comments, each line ending in a newline.
    pub fn header(&self) -> String {
        let mut header = format!(
            "# Generated by `cargo clawtest {}`{}\n",
            self.command, self.about
        );
        for line in &self.lines {
            header.push_str("# ");
            header.push_str(line);
            header.push('\n');
        }
        header
    }
}

/// A file that could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write `{}`: {error}", path.display())]
pub struct WriteFailure {
    /// The file or folder.
    pub path: PathBuf,
    /// What the system said.
    pub error: std::io::Error,
}

/// Step 5: `text` (provenance and task) written as `path`, its folder made first (never
/// through a link).
pub fn write(path: &Path, text: &str) -> Result<(), WriteFailure> {
    // A generated task costs model calls to make again: synced, never written through a link.
    crate::persist::write(path, text.as_bytes(), crate::persist::Durability::Recording).map_err(
        |error| WriteFailure {
            path: path.to_path_buf(),
            error,
        },
    )
}

#[cfg(test)]
mod tests;
