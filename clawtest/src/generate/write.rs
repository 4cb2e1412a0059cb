//! A generated task written (the accept pipeline's last steps, `accept`): its `task_id` made the run's (`<name>-NNN`), the generated
//! services it uses put inline in `services:` (data in the file, so it runs anywhere), the
//! provenance as comments before it (which ClawEnvKit and every YAML reader ignore), the text
//! loaded again with the built-in catalogue alone to prove the file stands on its own, and
//! its intent atoms beside it (`<id>.atoms.yaml`, for `validate --coverage`).

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use super::GenerateError;
use super::parse::Intent;
use crate::accept::{self, ReloadError, WriteFailure};
use crate::services::{Catalogue, ServiceDescription};
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

/// Writes `task` as `path` under the id `id`, with the generated services in `local` that it
/// uses inline; gives the task as loaded back from the written file.
pub(super) fn write(
    task: &Task,
    id: &str,
    local: &[ServiceDescription],
    intent: &Intent,
    provenance: &Provenance<'_>,
    path: &Path,
) -> Result<Task, GenerateError> {
    let failed = |message: String| GenerateError::Write {
        path: path.to_path_buf(),
        error: std::io::Error::other(message),
    };
    let mut document = task::write::document(task).map_err(|error| failed(error.to_string()))?;
    document["task_id"] = Value::from(id);
    let used: Vec<&ServiceDescription> = local
        .iter()
        .filter(|service| task.services.contains(&service.name))
        .collect();
    if !used.is_empty() {
        let mut entries: Vec<Value> = task
            .services
            .iter()
            .filter(|name| !used.iter().any(|service| &service.name == *name))
            .map(|name| Value::from(name.as_str()))
            .collect();
        for service in used {
            entries.push(serde_json::to_value(service).map_err(|error| failed(error.to_string()))?);
        }
        document["services"] = Value::Array(entries);
    }
    // Loaded again with the built-in catalogue alone: the file must stand on its own.
    let reloaded =
        accept::reload(&document, path, &Catalogue::builtin()).map_err(|error| match error {
            ReloadError::Invalid(invalid) => failed(format!(
                "the written task does not load on its own: {}",
                invalid.plain()
            )),
            other => failed(other.to_string()),
        })?;
    let written = |failure: WriteFailure| GenerateError::Write {
        path: failure.path,
        error: failure.error,
    };
    accept::write(path, &format!("{}{}", provenance.header(), reloaded.text)).map_err(written)?;
    let atoms = path.with_file_name(format!("{id}.atoms.yaml"));
    accept::write(&atoms, &atoms_text(intent)).map_err(written)?;
    Ok(reloaded.task)
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
