//! Workspace files in the Generator's answer. A task that needs files describes them under a
//! top-level `workspace_files:` (`crate::workspace_files`: a text, a CSV's rows, SQLite
//! tables, a PDF's pages, an image's drawing, never bytes); here the block is read, the files
//! rendered into a staging folder, and the answer given `files:` entries that copy them to
//! `/workspace`, so that the task is loaded, covered and proven feasible with its files
//! present. The block's lines are made comments, not removed: every other line keeps its
//! number, and a problem fed back to the model points where it wrote it. An accepted task's files are
//! written beside it (`fixtures/<task id>/…`, ClawEnvKit's layout) by [`Staged::write`].

use std::path::{Path, PathBuf};

use crate::task::{Position, Problem};
use crate::workspace_files::{self, FIELD, Limits};

/// The rendered files of one answer, in a folder of their own until the task is accepted.
pub(super) struct Staged {
    folder: tempfile::TempDir,
    /// Each file's path under `/workspace` and bytes, in the answer's order.
    files: Vec<(String, Vec<u8>)>,
}

/// Where a task's files are kept, relative to the task's folder.
fn source(id: &str, path: &str) -> String {
    format!("fixtures/{id}/{path}")
}

impl Staged {
    /// Where the answer is loaded from: beside its staged files.
    pub(super) fn task_path(&self, path: &Path) -> PathBuf {
        self.folder
            .path()
            .join(path.file_name().unwrap_or_else(|| "task.yaml".as_ref()))
    }

    /// Writes the files beside the task file `path` (whose id is `id`), each through
    /// `persist::write` (never through a link).
    pub(super) fn write(&self, path: &Path, id: &str) -> Result<(), super::GenerateError> {
        let folder = path.parent().unwrap_or(Path::new(""));
        for (relative, bytes) in &self.files {
            let target = folder.join(source(id, relative));
            crate::persist::write(&target, bytes, crate::persist::Durability::Recording).map_err(
                |error| super::GenerateError::Write {
                    path: target.clone(),
                    error,
                },
            )?;
        }
        Ok(())
    }
}

/// The answer's text to load (its `workspace_files` block blanked and `files:` entries added)
/// and its files staged; the text unchanged and nothing staged when it describes no files; or
/// every problem with the block, located.
pub(super) fn stage(text: &str, id: &str) -> Result<(String, Option<Staged>), Vec<Problem>> {
    let lines: Vec<&str> = text.split('\n').collect();
    let Some(start) = lines
        .iter()
        .position(|line| line.starts_with("workspace_files:"))
    else {
        if text.contains(FIELD) {
            return Err(vec![
                Problem::new(
                    FIELD,
                    "`workspace_files` must be a top-level block of the task.yaml",
                    None,
                )
                .with_help(
                    "write `workspace_files:` at the start of a line, its files indented below it",
                ),
            ]);
        }
        return Ok((text.to_owned(), None));
    };
    let end = lines[start + 1..]
        .iter()
        .position(|line| line.starts_with(|c: char| !matches!(c, ' ' | '\t' | '-' | '#')))
        .map_or(lines.len(), |offset| start + 1 + offset);
    let at = |line: u64| {
        Some(Position {
            line: start as u64 + line,
            column: 1,
            span: None,
        })
    };
    let block = lines[start..end].join("\n");
    let value: serde_json::Value =
        super::ingest::read_value::<serde_json::Value>(&block).map_err(|problem| {
            let line = problem.position.map_or(1, |position| position.line);
            vec![Problem::new(FIELD, problem.message, at(line))]
        })?;
    let described = value.get(FIELD).cloned().unwrap_or_default();
    let limits = Limits::default();
    let placed = |error: workspace_files::SpecError| {
        Problem::new(error.field, error.message, at(1)).with_help(
            "describe each file by one of text, csv, json, sqlite, pdf or image (see the prompt's Files section)",
        )
    };
    let specs = workspace_files::read_all(&described, &limits)
        .map_err(|errors| errors.into_iter().map(placed).collect::<Vec<_>>())?;
    if specs.is_empty() {
        let mut kept: Vec<&str> = lines.clone();
        kept[start..end].fill("#");
        return Ok((kept.join("\n"), None));
    }
    if let Some(line) = lines.iter().position(|line| line.starts_with("files:")) {
        return Err(vec![
            Problem::new(
                "files",
                "`files` is written by clawtest from `workspace_files`",
                at(line as u64 + 1 - start as u64),
            )
            .with_help("remove `files:`; describe every file under `workspace_files`"),
        ]);
    }
    let rendered =
        workspace_files::render_all(&specs, &limits).map_err(|error| vec![placed(error)])?;
    let folder = tempfile::Builder::new()
        .prefix("clawtest-generated-files-")
        .tempdir()
        .map_err(|error| {
            vec![Problem::new(
                FIELD,
                format!("cannot make a staging folder: {error}"),
                None,
            )]
        })?;
    let staged = Staged {
        folder,
        files: specs
            .into_iter()
            .map(|spec| spec.path)
            .zip(rendered)
            .collect(),
    };
    let mut kept: Vec<String> = lines.iter().map(|line| (*line).to_owned()).collect();
    kept[start..end].fill("#".into());
    kept.push("files:".into());
    for (path, bytes) in &staged.files {
        let place = staged.folder.path().join(source(id, path));
        crate::persist::write(&place, bytes, crate::persist::Durability::Report).map_err(
            |error| {
                vec![Problem::new(
                    FIELD,
                    format!("cannot stage `{path}`: {error}"),
                    None,
                )]
            },
        )?;
        kept.push(format!(
            "  - {{source: {}, target: {}}}",
            serde_json::Value::from(source(id, path)),
            serde_json::Value::from(format!("/workspace/{path}"))
        ));
    }
    Ok((kept.join("\n"), Some(staged)))
}
