//! A validated [`Task`] written back as task.yaml text, in ClawEnvKit's format: the fields its
//! generator writes, in its layout (`yaml.dump`: block style, top-level and check keys sorted,
//! `tools` and `files` always present), each check with the canonical spelling of its
//! parameters (`count`, not `min_count`), and clawtest's extensions only where the task has
//! them. Loading the text again gives the same task; the task-format corpus tests (tests/task_format.rs) that round trip.
//!
//! What a [`Task`] does not keep is not written: comments, unknown keys, the alias a parameter
//! was spelt with, `reference_solution` and `claw_eval_id`. Text is quoted rather than folded
//! at 80 columns as PyYAML does: the same values, on longer lines.

mod evaluation;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Map, Value};

use super::{Check, Checkpoint, SafetyCheck, Task, TaskLimits};

/// Why a task could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// `files[].source` must be relative to the task's folder, and this one is not inside it.
    #[error("files[].source `{}` is not inside the task's folder `{}`", source_path.display(), folder.display())]
    SourceOutsideFolder {
        /// The file's absolute path on the host, as the task holds it.
        source_path: PathBuf,
        /// The task's folder, which every `files[].source` is written relative to.
        folder: PathBuf,
    },
    /// The YAML serializer refused the document (its message).
    #[error("cannot write YAML: {0}")]
    Yaml(String),
}

/// The task as task.yaml text; `files[].source` is written relative to the task's folder.
pub fn to_yaml(task: &Task) -> Result<String, WriteError> {
    text(&document(task)?)
}

/// A task.yaml document (as [`document`] builds it) as text, in the layout [`to_yaml`] writes.
pub(crate) fn text(document: &Value) -> Result<String, WriteError> {
    let options = serde_saphyr::ser_options! {
        // Quoted scalars, never `|` or `>` blocks: what PyYAML writes, and exact on reload.
        prefer_block_scalars: false,
    };
    serde_saphyr::to_string_with_options(document, options)
        .map_err(|error| WriteError::Yaml(error.to_string()))
}

/// The task as the JSON value of its task.yaml, keys in the order they are written.
pub(crate) fn document(task: &Task) -> Result<Value, WriteError> {
    let mut top: BTreeMap<&str, Value> = BTreeMap::new();
    top.insert("task_id", Value::from(task.id.as_str()));
    top.insert("task_name", Value::from(task.name.as_str()));
    top.insert("prompt", Value::from(task.prompt.as_str()));
    if !task.fixtures.is_null() {
        top.insert("fixtures", task.fixtures.clone());
    }
    top.insert(
        "tools",
        task.tools
            .iter()
            .map(|tool| {
                let mut entry = sorted([
                    ("name", Value::from(tool.name.as_str())),
                    ("service", Value::from(tool.service.as_str())),
                    ("endpoint", Value::from(tool.endpoint.as_str())),
                    ("method", Value::from(tool.method.name())),
                ]);
                if !tool.description.is_empty() {
                    entry.insert("description".into(), Value::from(tool.description.as_str()));
                }
                Value::Object(sort(entry))
            })
            .collect(),
    );
    top.insert("files", files_entry(task)?);
    top.insert(
        "scoring_components",
        task.components
            .iter()
            .map(|component| {
                Value::Object(sorted([
                    ("name", Value::from(component.name.as_str())),
                    ("weight", Value::from(component.weight)),
                    ("check", check(&component.check)),
                ]))
            })
            .collect(),
    );
    top.insert(
        "safety_checks",
        task.safety
            .iter()
            .map(|safety| safety_check(&safety.check))
            .collect(),
    );
    if let Some(category) = &task.category {
        top.insert("category", Value::from(category.as_str()));
    }
    if let Some(difficulty) = &task.difficulty {
        top.insert("difficulty", Value::from(difficulty.name()));
    }
    // clawtest's extensions.
    if let Some(capability) = &task.capability {
        top.insert("capability", Value::from(capability.name()));
    }
    if task.limits != TaskLimits::default() {
        top.insert(
            "limits",
            Value::Object(sorted([
                (
                    "timeout_seconds",
                    seconds(task.limits.timeout.as_secs_f64()),
                ),
                ("max_turns", Value::from(task.limits.max_turns)),
            ])),
        );
    }
    if let Some(threshold) = task.pass_threshold {
        top.insert("pass_threshold", Value::from(threshold));
    }
    if let Some(injection) = &task.error_injection {
        let mut entry = serde_json::Map::new();
        if let Some(rate) = injection.rate {
            entry.insert("rate".into(), Value::from(rate));
        }
        if let Some(mode) = injection.mode {
            entry.insert("mode".into(), Value::from(mode.name()));
        }
        if let Some(seed) = injection.seed {
            entry.insert("seed".into(), Value::from(seed));
        }
        if let Some(reason) = &injection.reason {
            entry.insert("reason".into(), Value::from(reason.as_str()));
        }
        top.insert("error_injection", Value::Object(sort(entry)));
    }
    if let Some(services) = services(task)? {
        top.insert("services", services);
    }
    if !task.checkpoints.is_empty() {
        top.insert(
            "checkpoints",
            task.checkpoints.iter().map(checkpoint).collect(),
        );
    }
    if let Some(feedback) = &task.feedback {
        top.insert("feedback", feedback_entry(feedback));
    }
    if let Some(oracle) = &task.oracle {
        top.insert("oracle", oracle_entry(oracle));
    }
    Ok(Value::Object(
        top.into_iter()
            .map(|(key, value)| (key.to_string(), value))
            .collect(),
    ))
}

/// `files:`, each source relative to the folder it was found in.
fn files_entry(task: &Task) -> Result<Value, WriteError> {
    let mut files = Vec::new();
    for file in &task.files {
        let relative =
            file.source
                .strip_prefix(&file.root)
                .map_err(|_| WriteError::SourceOutsideFolder {
                    source_path: file.source.clone(),
                    folder: file.root.clone(),
                })?;
        files.push(Value::Object(sorted([
            ("source", Value::from(relative.to_string_lossy().as_ref())),
            (
                "target",
                Value::from(format!("/workspace/{}", file.target.to_string_lossy())),
            ),
        ])));
    }
    Ok(Value::Array(files))
}

/// `feedback:` with the keys that differ from their defaults.
fn feedback_entry(feedback: &super::Feedback) -> Value {
    let mut entry = Map::new();
    entry.insert("max_rounds".into(), Value::from(feedback.max_rounds));
    if !feedback.messages.is_empty() {
        entry.insert("messages".into(), Value::from(feedback.messages.clone()));
    }
    if let Some(persona) = &feedback.persona {
        entry.insert("persona".into(), Value::from(persona.as_str()));
    }
    if feedback.simulator == super::SimulatorKind::Llm {
        entry.insert("simulator".into(), Value::from("llm"));
    }
    if feedback.barrier != super::Barrier::default_for(feedback.simulator) {
        let barrier = match feedback.barrier {
            super::Barrier::Strict => "strict",
            super::Barrier::Guided => "guided",
        };
        entry.insert("barrier".into(), Value::from(barrier));
    }
    if let Some(model) = &feedback.model {
        entry.insert("model".into(), Value::from(model.as_str()));
    }
    for (key, limit) in [
        ("round_timeout_seconds", feedback.round_timeout),
        ("total_timeout_seconds", feedback.total_timeout),
    ] {
        if let Some(limit) = limit {
            entry.insert(key.into(), Value::from(limit.as_secs_f64()));
        }
    }
    if feedback.supervisor == super::SupervisorKind::Model {
        entry.insert("supervisor".into(), Value::from("model"));
    }
    if let Some(model) = &feedback.supervisor_model {
        entry.insert("supervisor_model".into(), Value::from(model.as_str()));
    }
    if let Some(evaluation) = &feedback.evaluation {
        entry.insert("evaluation".into(), evaluation::entry(evaluation));
    }
    Value::Object(sort(entry))
}

/// `oracle:` with the parts its author wrote.
fn oracle_entry(oracle: &crate::task::Oracle) -> Value {
    let mut entry = Map::new();
    if let Some(calls) = &oracle.calls {
        let calls = calls
            .iter()
            .map(|call| {
                Value::Object(sorted([
                    ("tool", Value::from(call.tool.as_str())),
                    ("arguments", Value::Object(call.arguments.clone())),
                ]))
            })
            .collect();
        entry.insert("calls".into(), Value::Array(calls));
    }
    if let Some(answer) = &oracle.answer {
        entry.insert("answer".into(), Value::from(answer.as_str()));
    }
    if !oracle.files.is_empty() {
        let files = oracle
            .files
            .iter()
            .map(|file| {
                Value::Object(sorted([
                    ("path", Value::from(format!("/workspace/{}", file.path))),
                    ("content", Value::from(file.content.as_str())),
                ]))
            })
            .collect();
        entry.insert("files".into(), Value::Array(files));
    }
    Value::Object(sort(entry))
}

/// `services:`, when the task needs it to load the same: it defines services of its own, or
/// uses services its tools do not reach (declared, or audited by a task without tools).
/// Catalogue names first, then the task's own definitions in their order.
fn services(task: &Task) -> Result<Option<Value>, WriteError> {
    let reached: Vec<&str> = {
        let mut names: Vec<&str> = task
            .tools
            .iter()
            .map(|tool| tool.service.as_str())
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    };
    let all: Vec<&str> = task.services.iter().map(String::as_str).collect();
    if task.local_services.is_empty() && all == reached {
        return Ok(None);
    }
    let mut list: Vec<Value> = task
        .services
        .iter()
        .filter(|name| !task.local_services.iter().any(|local| &local.name == *name))
        .map(|name| Value::from(name.as_str()))
        .collect();
    for local in &task.local_services {
        list.push(
            serde_json::to_value(local).map_err(|error| WriteError::Yaml(error.to_string()))?,
        );
    }
    Ok(Some(Value::Array(list)))
}

fn checkpoint(checkpoint: &Checkpoint) -> Value {
    let mut entry = sorted([
        ("name", Value::from(checkpoint.name.as_str())),
        ("weight", Value::from(checkpoint.weight)),
        ("check", check(&checkpoint.check)),
    ]);
    if let Some(reference) = &checkpoint.reference {
        entry.insert("reference".into(), Value::from(reference.as_str()));
    }
    if let Some(turn) = checkpoint.after_turn {
        entry.insert("after_turn".into(), Value::from(turn));
    }
    if let Some(feedback) = &checkpoint.feedback {
        entry.insert("feedback".into(), Value::from(feedback.as_str()));
    }
    if let Some(cap) = checkpoint.cap {
        entry.insert("cap".into(), Value::from(cap));
    }
    if checkpoint.unrecoverable {
        entry.insert("unrecoverable".into(), Value::from(true));
    }
    Value::Object(sort(entry))
}

/// A scoring check as a `check:` map, with the canonical parameter names.
fn check(check: &Check) -> Value {
    let text = |value: &str| Value::from(value);
    let mut entry = Map::new();
    entry.insert("type".into(), text(check.type_name()));
    let mut put = |key: &str, value: Value| {
        entry.insert(key.to_string(), value);
    };
    match check {
        Check::AuditActionExists {
            service,
            action,
            field_match,
        } => {
            put("service", text(service));
            put("action", text(action));
            if !field_match.is_empty() {
                put("field_match", pairs(field_match));
            }
        }
        Check::AuditFieldEquals {
            service,
            action,
            field,
            value,
        } => {
            put("service", text(service));
            put("action", text(action));
            put("field", text(field));
            put("value", value.clone());
        }
        Check::AuditFieldContains {
            service,
            action,
            field,
            contains,
        } => {
            put("service", text(service));
            put("action", text(action));
            put("field", text(field));
            put("contains", text(contains));
        }
        Check::AuditCountGte {
            service,
            action,
            count,
        }
        | Check::AuditCountEquals {
            service,
            action,
            count,
        } => {
            put("service", text(service));
            put("action", text(action));
            put("count", Value::from(*count));
        }
        Check::AuditSequence { service, actions } => {
            put("service", text(service));
            put(
                "actions",
                actions
                    .iter()
                    .map(|step| {
                        // A bare action name, as the generator writes it, unless it filters.
                        if step.field_match.is_empty() {
                            text(&step.action)
                        } else {
                            Value::Object(sorted([
                                ("action", text(&step.action)),
                                ("field_match", pairs(&step.field_match)),
                            ]))
                        }
                    })
                    .collect(),
            );
        }
        Check::KeywordsPresent { keywords, source }
        | Check::KeywordsAbsent { keywords, source } => {
            put("keywords", Value::from(keywords.clone()));
            if let super::OutputSource::Other(other) = source {
                put("in", text(other));
            }
        }
        Check::PatternMatch { pattern } => put("pattern", text(pattern)),
        Check::MinLength { min_length } => put("min_length", Value::from(*min_length)),
        Check::FileExists { path } => put("path", text(path)),
        Check::FileHashEquals { path, hash } => {
            put("path", text(path));
            put("hash", text(hash));
        }
        Check::ExitCode { cmd, expected_exit } => {
            put("cmd", text(cmd));
            put("expected_exit", Value::from(*expected_exit));
        }
        Check::PytestPass {
            test_file,
            pytest_args,
        } => {
            put("test_file", text(test_file));
            // ClawEnvKit's default; written only when the task chose other arguments.
            if pytest_args != "-v --tb=short" {
                put("pytest_args", text(pytest_args));
            }
        }
        Check::LlmJudge { rubric } => put("rubric", text(rubric)),
    }
    Value::Object(sort(entry))
}

fn safety_check(check: &SafetyCheck) -> Value {
    let mut entry = Map::new();
    entry.insert("type".into(), Value::from(check.type_name()));
    let reason = match check {
        SafetyCheck::ToolNotCalled { tool_name, reason } => {
            entry.insert("tool_name".into(), Value::from(tool_name.as_str()));
            reason
        }
        SafetyCheck::KeywordsNotInOutput { keywords, reason } => {
            entry.insert("keywords".into(), Value::from(keywords.clone()));
            reason
        }
    };
    if let Some(reason) = reason {
        entry.insert("reason".into(), Value::from(reason.as_str()));
    }
    Value::Object(sort(entry))
}

fn pairs(pairs: &BTreeMap<String, Value>) -> Value {
    Value::Object(
        pairs
            .iter()
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect(),
    )
}

/// Whole seconds as an integer (`timeout_seconds: 120`), others as they are.
fn seconds(value: f64) -> Value {
    if value.fract() == 0.0 && value >= 0.0 && value <= u64::MAX as f64 {
        Value::from(value as u64)
    } else {
        Value::from(value)
    }
}

fn sorted<const N: usize>(entries: [(&str, Value); N]) -> Map<String, Value> {
    sort(
        entries
            .into_iter()
            .map(|(key, value)| (key.to_string(), value))
            .collect(),
    )
}

/// The map with its keys in sorted order (the maps keep insertion order), as `yaml.dump` writes.
fn sort(map: Map<String, Value>) -> Map<String, Value> {
    let ordered: BTreeMap<String, Value> = map.into_iter().collect();
    ordered.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::services::Catalogue;
    use crate::task::parse;

    fn load(text: &str) -> Task {
        parse(
            Path::new("task.yaml"),
            text.to_string(),
            &Catalogue::builtin(),
        )
        .unwrap_or_else(|invalid| panic!("{}", invalid.plain()))
    }

    const TASK: &str = "task_id: t
task_name: T
prompt: Review the board.
scoring_components:
  - {name: listed, weight: 0.4, check: {type: audit_action_exists, service: todo, action: list_tasks}}
  - {name: said, weight: 0.3, check: {type: keywords_present, keywords: [done]}}
  - {name: judged, weight: 0.3, check: {type: llm_judge, rubric: Is it right?}}
safety_checks:
  - {type: tool_not_called, tool_name: delete_task}
";

    #[test]
    fn text_that_yaml_would_misread_is_quoted() {
        let awkward = [
            "yes",
            "0.5",
            "null",
            "- a list?",
            "key: value # not a comment",
            "  leading and trailing spaces  ",
            "line one\nline two\n\n",
            "quotes ' and \" and \\ backslash",
            "Launch — Atlas 2.0, naïve café",
            "{flow: map}",
            "@at and `tick`",
            "",
        ];
        for prompt in awkward {
            let mut task = load(TASK);
            task.prompt = prompt.to_string();
            task.name = prompt.to_string();
            let written = to_yaml(&task).expect("writable");
            let again: serde_json::Value =
                serde_saphyr::from_str(&written).expect("the written text is YAML");
            assert_eq!(again["prompt"], prompt, "{written}");
            assert_eq!(again["task_name"], prompt, "{written}");
        }
    }

    #[test]
    fn a_task_without_tools_declares_the_services_its_checks_audit() {
        let task = load(TASK);
        assert!(task.tools.is_empty());
        let written = to_yaml(&task).expect("writable");
        assert!(written.contains("services:\n- todo\n"), "{written}");
        let again = load(&written);
        assert_eq!(again.services, task.services);
        assert_eq!(again.components.len(), 3);
    }

    #[test]
    fn a_file_source_outside_the_task_folder_cannot_be_written() {
        let mut task = load(TASK);
        task.folder = "tasks/one".into();
        task.files.push(crate::task::FileCopy {
            source: "elsewhere/data.csv".into(),
            target: "data.csv".into(),
            root: "tasks/one".into(),
        });
        assert!(matches!(
            to_yaml(&task),
            Err(WriteError::SourceOutsideFolder { .. })
        ));
    }
}
