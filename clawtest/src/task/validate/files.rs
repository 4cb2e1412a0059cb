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
        // Where ClawEnvKit's harness looks: beside the task file, then in the `fixtures/` folder
        // beside it (Auto-ClawEval's layout). Both stay inside the task's folder.
        let resolved = match file_copy::resolve(folder, relative_source).or_else(|refused| {
            match refused {
                SourceRefused::Missing => {
                    file_copy::resolve(folder, &Path::new("fixtures").join(relative_source))
                }
                refused => Err(refused),
            }
        }) {
            Ok(resolved) => resolved,
            Err(refused) => {
                let (message, help) = match refused {
                    SourceRefused::Missing => (
                        format!(
                            "`{}` exists neither in the task's folder nor in its `fixtures/` folder",
                            source.value
                        ),
                        "`source` is relative to the folder of the task file (or to the \
                         `fixtures/` folder beside it)"
                            .to_owned(),
                    ),
                    SourceRefused::Outside(place) => (
                        format!(
                            "`{}` is a link to `{}`, outside the task's folder",
                            source.value,
                            place.display()
                        ),
                        "copy the file itself into the task's folder: a link out of it could \
                         hand host files to the agent"
                            .to_owned(),
                    ),
                    SourceRefused::NotARegularFile => (
                        format!("`{}` is not a regular file", source.value),
                        "`source` names one file (a folder, device or pipe cannot be copied)"
                            .to_owned(),
                    ),
                };
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
