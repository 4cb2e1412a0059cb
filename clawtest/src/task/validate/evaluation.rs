//! `feedback.evaluation`: the model supervisor's hidden evaluation spec, UniClawBench's
//! `eval_rule.md` as YAML (docs/closed-loop.md, "The model supervisor"). Written in the task
//! as a map, or as the name of a file beside the task, read here: a regular file inside the
//! task's folder, bounded, UTF-8 YAML. Every mistake is reported at its field; a mistake in
//! the file is reported at `feedback.evaluation` in the task, naming the file's own line,
//! column and field.

use std::path::{Path, PathBuf};

use serde_json::Value;
use serde_saphyr::Spanned;

pub(super) use super::evaluation_spec::Context;
use super::evaluation_spec::spec;
use super::{Findings, at};
use crate::task::error::Problem;
use crate::task::evaluation::Evaluation;
use crate::task::file_copy::{SourceRefused, resolve};
use crate::task::raw::Node;

/// The largest evaluation file read: far above any rubric (UniClawBench's longest
/// `eval_rule.md` is a few KiB).
pub(crate) const MAX_EVALUATION_BYTES: u64 = 1024 * 1024;

/// `feedback.evaluation` (`value`): the spec written in the task, or read from the file it
/// names; `None` after reporting what is wrong.
pub(super) fn validate_evaluation(
    value: &Spanned<Node>,
    context: &Context<'_>,
    findings: &mut Findings,
) -> Option<Evaluation> {
    let field = "feedback.evaluation";
    match &value.value {
        Node::Map(_) => spec(value, &format!("{field}."), None, context, findings),
        Node::Scalar(Value::String(name)) if !name.trim().is_empty() => {
            from_file(value, name, context, findings)
        }
        _ => {
            findings.error(
                Problem::new(
                    field,
                    "expected the evaluation spec: a map, or the name of a YAML file beside the task",
                    at(value),
                )
                .with_help("e.g. `evaluation: eval_rule.yml` (a file the harness never sees), or `evaluation: {contract: ..., ground_truth: ..., checkpoints: [...]}`"),
            );
            None
        }
    }
}

/// The spec in the file `name` beside the task; its problems are reported at `value` (the
/// task's `feedback.evaluation`), each naming the file's line, column and field.
fn from_file(
    value: &Spanned<Node>,
    name: &str,
    context: &Context<'_>,
    findings: &mut Findings,
) -> Option<Evaluation> {
    let refuse = |findings: &mut Findings, message: String, help: &str| {
        findings.error(Problem::new("feedback.evaluation", message, at(value)).with_help(help));
    };
    let relative = PathBuf::from(name);
    if relative.is_absolute() {
        refuse(
            findings,
            format!(
                "`{name}` is an absolute path; the evaluation file is named relative to the task's folder"
            ),
            "write the file's name beside the task, e.g. `evaluation: eval_rule.yml`",
        );
        return None;
    }
    let resolved = match resolve(context.folder, &relative) {
        Ok(resolved) => resolved,
        Err(refused) => {
            let message = match refused {
                SourceRefused::Missing => format!(
                    "there is no file `{name}` beside the task (in {})",
                    context.folder.display()
                ),
                SourceRefused::Outside(place) => format!(
                    "`{name}` resolves to {}, outside the task's folder",
                    place.display()
                ),
                SourceRefused::NotARegularFile => format!("`{name}` is not a regular file"),
            };
            refuse(
                findings,
                message,
                "put the evaluation spec in a YAML file inside the task's folder",
            );
            return None;
        }
    };
    let text = crate::task::read::read_regular(&resolved.source, MAX_EVALUATION_BYTES)
        .map_err(|error| error.to_string())
        .and_then(|bytes| String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".into()));
    let text = match text {
        Ok(text) => text,
        Err(message) => {
            refuse(
                findings,
                format!("cannot read `{name}`: {message}"),
                "the evaluation file is UTF-8 YAML of at most 1 MiB",
            );
            return None;
        }
    };
    let mut inner = Findings::default();
    let evaluation = match crate::task::read::yaml::<Spanned<Node>>(&text) {
        Ok(document) => spec(&document, "", Some(relative), context, &mut inner),
        Err(problem) => {
            inner.error(*problem);
            None
        }
    };
    for problem in inner.errors {
        findings.error(in_file(problem, name, value));
    }
    for problem in inner.warnings {
        findings.warn(in_file(problem, name, value));
    }
    evaluation
}

/// A problem of the evaluation file `name`, reported at the task's `feedback.evaluation`.
fn in_file(problem: Problem, name: &str, value: &Spanned<Node>) -> Problem {
    let place = problem
        .position
        .map(|position| format!(":{}:{}", position.line, position.column))
        .unwrap_or_default();
    let reported = Problem::new(
        "feedback.evaluation",
        format!("{name}{place}: {}: {}", problem.field, problem.message),
        at(value),
    );
    match problem.help {
        Some(help) => reported.with_help(help),
        None => reported,
    }
}

/// The evaluation file is never one of the task's `files`: those are copied into the
/// workspace, where the harness would read the hidden spec.
pub(super) fn kept_out_of_the_workspace(
    raw: &crate::task::raw::RawTask,
    feedback: Option<&crate::task::Feedback>,
    folder: &Path,
    findings: &mut Findings,
) {
    let Some(file) = feedback
        .and_then(|feedback| feedback.evaluation.as_ref())
        .and_then(|evaluation| evaluation.file.as_ref())
    else {
        return;
    };
    let Ok(hidden) = resolve(folder, file) else {
        return;
    };
    for (index, entry) in raw.files.iter().flatten().enumerate() {
        let Some(source) = &entry.value.source else {
            continue;
        };
        let copied = resolve(folder, Path::new(&source.value));
        if copied.is_ok_and(|copied| copied.source == hidden.source) {
            findings.error(
                Problem::new(
                    format!("files[{index}].source"),
                    format!(
                        "is the hidden evaluation spec (`feedback.evaluation: {}`): copied into the workspace, the harness would read it",
                        file.display()
                    ),
                    at(source),
                )
                .with_help("the evaluation spec stays beside the task; copy other files"),
            );
        }
    }
}
