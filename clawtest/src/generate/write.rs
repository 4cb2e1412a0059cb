//! A generated task written (the accept pipeline's last steps, `accept`): its `task_id` made the run's (`<name>-NNN`), the
//! provenance as comments before it (which ClawEnvKit and every YAML reader ignore), the text
//! loaded again with the suite's catalogue (the built-in services and the library, where the
//! services this run generated were written: a task names them, as it names a built-in one), and
//! its intent atoms beside it (`<id>.atoms.yaml`, for `validate --coverage`). The suite's fault
//! settings are written into the task (`error_injection`), whatever the model wrote there: a
//! generated task never opts out of faults on its own; and its `category` and `capability`,
//! when the answer named none (`grouping`).

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use super::GenerateError;
use super::parse::Intent;
use crate::accept::{self, ReloadError, WriteFailure};
use crate::fault::FaultSettings;
use crate::services::Catalogue;
use crate::task::{self, Task};

/// Where a task came from.
pub(super) struct Provenance<'a> {
    pub(super) request: &'a str,
    pub(super) model: &'a str,
    pub(super) seed: u64,
    pub(super) number: u32,
    pub(super) count: u32,
    pub(super) attempts: u32,
    pub(super) focus: &'a str,
    /// The cassette, relative to the suite root.
    pub(super) cassette: &'a str,
}

impl Provenance<'_> {
    fn header(&self) -> String {
        let request = self
            .request
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        accept::Provenance {
            command: "generate",
            about: " (clawtest provenance; ClawEnvKit ignores comments).".into(),
            lines: vec![
                format!("request: {request}"),
                format!("model: {}; cassette: {}", self.model, self.cassette),
                format!(
                    "seed: {}; task {} of {}; focus: {}; attempts: {}",
                    self.seed, self.number, self.count, self.focus, self.attempts
                ),
            ],
        }
        .header()
    }
}

/// What a generated task is written with besides itself.
pub(super) struct Written<'a> {
    /// Its id (`<name>-NNN`).
    pub(super) id: &'a str,
    /// The suite's catalogue: the built-in services and the library's.
    pub(super) catalogue: &'a Catalogue,
    /// The intent whose atoms go beside it.
    pub(super) intent: &'a Intent,
    /// The suite's `[faults]`, written as its `error_injection`.
    pub(super) faults: &'a FaultSettings,
}

/// Writes `task` as `path` with `written`'s id, faults and atoms; gives the task as
/// loaded back from the written file.
pub(super) fn write(
    task: &Task,
    written: &Written<'_>,
    provenance: &Provenance<'_>,
    path: &Path,
) -> Result<Task, GenerateError> {
    let Written {
        id,
        catalogue,
        intent,
        faults,
    } = *written;
    let failed = |message: String| GenerateError::Write {
        path: path.to_path_buf(),
        error: std::io::Error::other(message),
    };
    let mut document = task::write::document(task).map_err(|error| failed(error.to_string()))?;
    document["task_id"] = Value::from(id);
    document["error_injection"] = fault_block(faults);
    // Every generated task is grouped in the results: what the answer named, else what its
    // services say.
    if task.category.is_none() {
        document["category"] = Value::from(super::grouping::category(&task.services));
    }
    if task.capability.is_none() {
        document["capability"] = Value::from(super::grouping::capability(&task.services).name());
    }
    // Loaded again with the suite's catalogue: the file must stand on it.
    let reloaded = accept::reload(&document, path, catalogue).map_err(|error| match error {
        ReloadError::Invalid(invalid) => failed(format!(
            "the written task does not load with the suite's services: {}",
            invalid.plain()
        )),
        other => failed(other.to_string()),
    })?;
    let failure_of = |failure: WriteFailure| GenerateError::Write {
        path: failure.path,
        error: failure.error,
    };
    accept::write(path, &format!("{}{}", provenance.header(), reloaded.text))
        .map_err(failure_of)?;
    let atoms = path.with_file_name(format!("{id}.atoms.yaml"));
    accept::write(&atoms, &atoms_text(intent)).map_err(failure_of)?;
    Ok(reloaded.task)
}

/// The suite's fault settings as a task's `error_injection` block (its mix and delays stay the
/// suite's: a task names only rate, mode and seed).
fn fault_block(faults: &FaultSettings) -> Value {
    let mut block = serde_json::Map::new();
    block.insert("rate".into(), Value::from(faults.rate));
    block.insert("mode".into(), Value::from(faults.mode.name()));
    if let Some(seed) = faults.seed {
        block.insert("seed".into(), Value::from(seed));
    }
    if faults.rate == 0.0 {
        block.insert(
            "reason".into(),
            Value::from("the suite's [faults] rate was 0 when this task was generated"),
        );
    }
    Value::Object(block)
}

/// The intent's atoms as the coverage sidecar reads them.
fn atoms_text(intent: &Intent) -> String {
    let mut text = String::from(
        "# The intent atoms this task was generated to cover (`validate --coverage`).\natoms:\n",
    );
    for atom in &intent.atoms {
        let _ = writeln!(
            text,
            "  - {{type: {}, name: {}, description: {}}}",
            super::parse::kind_name(atom.kind),
            Value::from(atom.name.as_str()),
            Value::from(atom.description.as_str())
        );
    }
    text
}
