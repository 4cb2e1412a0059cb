//! Files copied into the workspace: sources inside the task's folder, targets under
//! `/workspace`, and `/workspace/…` references that need `files` (check 12).

use std::path::{Component as PathPart, Path};

use serde_json::Value;
use serde_saphyr::Spanned;

use super::{Findings, at};
use crate::task::FileCopy;
use crate::task::error::{Position, Problem};
use crate::task::file_copy::{self, SourceRefused};
use crate::task::raw::{Node, RawTask};

/// Check 12: a prompt or fixture that names `/workspace/…` needs `files` that put it there.
pub(super) fn workspace_references(
    raw: &RawTask,
    document: Option<&Node>,
    findings: &mut Findings,
) {
    if raw.files.as_ref().is_some_and(|files| !files.is_empty()) {
        return;
    }
    let fixtures = raw
        .fixtures
        .as_ref()
        .map(Value::to_string)
        .unwrap_or_default();
    let prompt = raw
        .prompt
        .as_ref()
        .map(|prompt| prompt.value.as_str())
        .unwrap_or_default();
    // Paths that a scoring check looks for are what the agent is asked to produce, not inputs
    // that must be copied in (ClawEnvKit flags those too; a task that asks for a report file
    // is not missing an asset).
    let produced: String = raw
        .scoring_components
        .iter()
        .flat_map(|components| components.value.iter())
        .filter_map(|component| {
            component
                .check
                .as_ref()
                .map(|check| check.value.to_json().to_string())
        })
        .collect();
    let reference = [prompt, fixtures.as_str()]
        .into_iter()
        .flat_map(|text| {
            text.match_indices("/workspace/")
                .map(move |(start, _)| &text[start..])
        })
        .map(|rest| {
            rest.split(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == ',')
                .next()
                .unwrap_or("/workspace/")
                // Sentence punctuation after a path is not part of it.
                .trim_end_matches(['.', ';', ':', ')', ']', '}', '!', '?'])
                .to_string()
        })
        .find(|reference| !produced.contains(reference.as_str()));
    if let Some(reference) = reference {
        // Where the reference is written: the prompt first, then the fixtures.
        let place = ["prompt", "fixtures"]
            .into_iter()
            .filter_map(|key| document.and_then(|document| document.entry(key)))
            .find_map(|(_, value)| text_containing(value, &reference))
            .or_else(|| raw.prompt.as_ref().and_then(at));
        findings.error(
            Problem::new(
                "files",
                format!("the prompt or fixtures refer to `{reference}` but `files` is empty, so it will not exist"),
                place,
            )
            .with_help(format!(
                "add `files: [{{source: <file in the task's folder>, target: {reference}}}]`"
            )),
        );
    }
}

/// Where the first text value under `node` that contains `needle` was written.
fn text_containing(node: &Spanned<Node>, needle: &str) -> Option<Position> {
    match &node.value {
        Node::Scalar(Value::String(text)) if text.contains(needle) => at(node),
        Node::Scalar(_) => None,
        Node::List(items) => items.iter().find_map(|item| text_containing(item, needle)),
        Node::Map(entries) => entries
            .iter()
            .find_map(|(_, value)| text_containing(value, needle)),
    }
}

pub(super) fn validate_files(
    raw: &RawTask,
    folder: &Path,
    dataset: Option<&Path>,
    findings: &mut Findings,
) -> Vec<FileCopy> {
    let mut files = Vec::new();
    for (index, entry) in raw.files.iter().flatten().enumerate() {
        let position = at(entry);
        let field = |name: &str| format!("files[{index}].{name}");
        let (Some(source), Some(target)) = (&entry.value.source, &entry.value.target) else {
            let missing = if entry.value.source.is_none() {
                "source"
            } else {
                "target"
            };
            findings.error(
                Problem::new(field(missing), "missing required field", position).with_help(
                    "each file needs `source` (relative to the task's folder) and `target` (under /workspace)",
                ),
            );
            continue;
        };
        let relative_source = Path::new(&source.value);
        if relative_source.is_absolute() || escapes(relative_source) {
            findings.error(
                Problem::new(
                    field("source"),
                    format!("`{}` must stay inside the task's folder", source.value),
                    at(source),
                )
                .with_help("copy the file into the task's folder and give its path relative to it"),
            );
            continue;
        }
        let resolved = match look_up(folder, dataset, relative_source) {
            Ok(resolved) => resolved,
            Err(refused) => {
                let (message, help) = refusal(&source.value, dataset.is_some(), refused);
                findings.error(Problem::new(field("source"), message, at(source)).with_help(help));
                continue;
            }
        };
        let target_path = Path::new(&target.value);
        let inside = target_path
            .strip_prefix("/workspace")
            .map(Path::to_path_buf)
            .unwrap_or_else(|_| target_path.to_path_buf());
        if inside.is_absolute() || escapes(&inside) || inside.as_os_str().is_empty() {
            findings.error(
                Problem::new(
                    field("target"),
                    format!("`{}` must be a file under /workspace", target.value),
                    at(target),
                )
                .with_help("e.g. `target: /workspace/data.csv`"),
            );
            continue;
        }
        files.push(FileCopy {
            target: inside,
            ..resolved
        });
    }
    files
}

/// Where ClawEnvKit's harness looks for a `files[].source`, in its order: beside the task
/// file, in the `fixtures/` folder beside it (Auto-ClawEval's layout), then, in the dataset
/// it was run on, `<dataset>/<task folder's name>/fixtures/<source>` and
/// `<dataset>/<task folder's name>/<source>` (fixtures kept in a folder named like the task's
/// folder, away from the tasks). The first that exists is taken; each place must resolve to a
/// regular file inside its own root (the task's folder, or the dataset), so a link cannot
/// reach out of either. A place that exists but is refused stops the search: a later
/// candidate is never taken over a refused one.
fn look_up(
    folder: &Path,
    dataset: Option<&Path>,
    source: &Path,
) -> Result<FileCopy, SourceRefused> {
    let mut places = vec![
        (folder.to_path_buf(), source.to_path_buf()),
        (folder.to_path_buf(), Path::new("fixtures").join(source)),
    ];
    // The folder's own name, read from its resolved path (`.` or an empty parent has none).
    let named = std::path::absolute(folder)
        .ok()
        .and_then(|folder| folder.canonicalize().ok())
        .and_then(|folder| folder.file_name().map(ToOwned::to_owned));
    if let (Some(dataset), Some(name)) = (dataset, named) {
        let under = Path::new(&name);
        places.push((dataset.to_path_buf(), under.join("fixtures").join(source)));
        places.push((dataset.to_path_buf(), under.join(source)));
    }
    let mut last = SourceRefused::Missing;
    for (root, relative) in places {
        match file_copy::resolve(&root, &relative) {
            Err(SourceRefused::Missing) => last = SourceRefused::Missing,
            found => return found,
        }
    }
    Err(last)
}

/// The error and its help for a source [`look_up`] refused.
fn refusal(source: &str, in_dataset: bool, refused: SourceRefused) -> (String, String) {
    match refused {
        SourceRefused::Missing if in_dataset => (
            format!(
                "`{source}` exists neither in the task's folder, nor in its `fixtures/` folder, \
                 nor under the suite's `<task folder's name>/fixtures/` or `<task folder's name>/`"
            ),
            "`source` is relative to the folder of the task file (or to the `fixtures/` folder \
             beside it, or to `<suite root>/<task folder's name>/fixtures/`)"
                .to_owned(),
        ),
        SourceRefused::Missing => (
            format!("`{source}` exists neither in the task's folder nor in its `fixtures/` folder"),
            "`source` is relative to the folder of the task file (or to the `fixtures/` folder \
             beside it)"
                .to_owned(),
        ),
        SourceRefused::Outside(place) => (
            format!(
                "`{source}` is a link to `{}`, outside the task's folder",
                place.display()
            ),
            "copy the file itself into the task's folder: a link out of it could hand host \
             files to the agent"
                .to_owned(),
        ),
        SourceRefused::NotARegularFile => (
            format!("`{source}` is not a regular file"),
            "`source` names one file (a folder, device or pipe cannot be copied)".to_owned(),
        ),
    }
}

/// True when a relative path climbs out of its root with `..`.
pub(super) fn escapes(path: &Path) -> bool {
    let mut depth: i64 = 0;
    for part in path.components() {
        match part {
            PathPart::ParentDir => depth -= 1,
            PathPart::Normal(_) => depth += 1,
            _ => {}
        }
        if depth < 0 {
            return true;
        }
    }
    false
}
