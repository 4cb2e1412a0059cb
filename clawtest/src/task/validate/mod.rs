//! Raw task → validated [`Task`]: ClawEnvKit's 12 structural checks (required fields;
//! scoring structure; check types and parameters; the judge-weight cap; safety structure;
//! known services; real endpoints; canonical action names; cross-service tools; action-name
//! collisions; safety/scoring contradictions; `/workspace/…` references without `files`),
//! plus clawtest's own (regexes, file paths, limits, extensions). Each problem is located at
//! the value it is about; all are collected and none stops the rest. Warnings (unknown keys,
//! weights slightly off) are kept apart from errors.
//!
//! The required fields and the top-level values are checked here; the rest by field:
//! `components` (scoring), `checkpoints`, `safety`, `services` (services and tools),
//! `files`, `extensions` (limits, error injection, feedback), `evaluation` (the model
//! supervisor's hidden spec, in the task or a file beside it). A check map of a component or
//! a checkpoint is read by `checks`, its parameter problems located by `parameters`, the
//! request fields it names judged against its route by `fields` and its regex judged by
//! `patterns`.

mod checkpoints;
mod checks;
mod components;
mod evaluation;
mod evaluation_spec;
mod extensions;
mod fields;
mod files;
mod oracle;
mod parameters;
mod patterns;
mod safety;
mod services;

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;
use serde_saphyr::Spanned;

use checkpoints::validate_checkpoints;
use components::validate_components;
use extensions::{validate_error_injection, validate_feedback, validate_limits};
use files::{validate_files, workspace_references};
use safety::validate_safety;
use services::{validate_services, validate_task_services, validate_tools};

use super::check::{self, Check};
use super::error::{Position, Problem};
use super::raw::{KNOWN_KEYS, Node, RawTask};
use super::{Capability, Task, Tool};
use crate::difficulty::Difficulty;
use crate::services::Catalogue;

/// Weights must sum to 1.0 within this tolerance (ClawEnvKit's rule).
pub(crate) const WEIGHT_TOLERANCE: f64 = 0.05;
/// At least this many scoring components (ClawEnvKit's rule).
pub(crate) const MIN_COMPONENTS: usize = 3;

/// `llm_judge` weights may sum to at most this when the task offers tools (ClawEnvKit's cap)…
pub(crate) const JUDGE_CAP_WITH_TOOLS: f64 = 0.55;
/// …and at most this without tools (file tasks need more judgement).
pub(crate) const JUDGE_CAP_WITHOUT_TOOLS: f64 = 0.65;
/// The `capability` values clawtest knows (docs/task-format.md).
pub(crate) const CAPABILITIES: [&str; 5] = [
    Capability::SkillUsage.name(),
    Capability::Exploration.name(),
    Capability::LongContext.name(),
    Capability::Multimodal.name(),
    Capability::CrossPlatform.name(),
];
const DIFFICULTIES: [&str; 3] = [
    Difficulty::Easy.name(),
    Difficulty::Medium.name(),
    Difficulty::Hard.name(),
];

/// A task that failed validation: every error, and the warnings found on the way.
#[derive(Debug, Clone, Default)]
pub(crate) struct Rejected {
    /// Every error, sorted by where it was written (never empty).
    pub(crate) errors: Vec<Problem>,
    /// What is questionable but not wrong, kept to be shown beside the errors.
    pub(crate) warnings: Vec<Problem>,
}

fn at<T>(spanned: &Spanned<T>) -> Option<Position> {
    Position::from_location(spanned.referenced)
}

/// Where the value of a check's `parameter` (e.g. `actions[].action`) was written, else the
/// check itself.
fn parameter_at(check: &Spanned<Node>, parameter: &str) -> Option<Position> {
    let key = parameter.split(['.', '[']).next().unwrap_or(parameter);
    check
        .value
        .entry(key)
        .and_then(|(_, value)| at(value))
        .or_else(|| at(check))
}

/// "did you mean `x`?" or the full list.
fn suggestion(word: &str, candidates: &[&str], list_intro: &str) -> String {
    crate::spelling::suggestion(word, candidates, list_intro)
}

/// The longest prompt a harness can be started with: Linux caps one environment string
/// (`CLAWTEST_PROMPT=…` and its NUL) at 128 KiB (`MAX_ARG_STRLEN`); past it every trial
/// failed to start with E2BIG.
pub const MAX_PROMPT_BYTES: usize = 128 * 1024 - "CLAWTEST_PROMPT=".len() - 1;

/// A task's id names files and folders (its cassette, trajectories, snapshot), so it must be
/// one plain file name: `/abs/path` or `../..` would read and write outside the suite.
fn task_id_is_a_file_name(id: &str, place: Option<Position>, findings: &mut Findings) {
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if id.is_empty() || (id.chars().all(plain) && !id.chars().all(|c| c == '.')) {
        return;
    }
    let message = match id.chars().find(|c| !plain(*c)) {
        Some(c) => {
            format!("`{id}` holds {c:?}; a task id may hold only letters, digits, `.`, `_` and `-`")
        }
        None => format!("`{id}` is not a name; a task id needs a letter or digit"),
    };
    findings.error(Problem::new("task_id", message, place).with_help(
        "the id names the task's cassette, trajectories and snapshot files: write e.g. `todo-001`",
    ));
}

/// What a required top-level field holds, for help text.
fn describe(field: &str) -> &'static str {
    match field {
        "task_id" => "identifier, e.g. `todo-001`,",
        "task_name" => "title",
        _ => "instruction to the agent",
    }
}

/// A whole number from 5 to 100 written where a share of 1 belongs, as that share (`75` →
/// 0.75); smaller values (1.5, 2) are not read as percentages, they are likelier slips.
fn percentage(value: f64) -> Option<f64> {
    (value.fract() == 0.0 && (5.0..=100.0).contains(&value)).then(|| round(value / 100.0))
}

fn round(value: f64) -> f64 {
    (value * 1000.0).round() / 1000.0
}

/// Everything validation found so far.
#[derive(Default)]
struct Findings {
    errors: Vec<Problem>,
    warnings: Vec<Problem>,
}

impl Findings {
    fn error(&mut self, problem: Problem) {
        self.errors.push(problem);
    }

    fn warn(&mut self, problem: Problem) {
        self.warnings.push(problem);
    }
}

/// A check of the task after parsing, with where it was written.
struct LocatedCheck<'a> {
    /// `scoring_components[2].check` or `checkpoints[0].check`.
    field: String,
    node: &'a Spanned<Node>,
    check: Check,
}

/// Validates a parsed task; `path` is the task file (its folder anchors `files[].source`),
/// `dataset` the root of the suite it was found in (where ClawEnvKit's harness looks for a
/// source last), `document` the same text as a located tree (for unknown keys).
pub(crate) fn validate(
    path: &Path,
    dataset: Option<&Path>,
    raw: &RawTask,
    document: Option<&Node>,
    catalogue: &Catalogue,
) -> Result<Task, Rejected> {
    let mut findings = Findings::default();
    let (id, name, prompt) = required_fields(raw, document, &mut findings);
    let line = raw
        .task_id
        .as_ref()
        .and_then(at)
        .map_or(1, |position| position.line);

    if let Some(document) = document {
        unknown_keys(document, &mut findings);
    }

    // Task-local services extend the catalogue for everything below.
    let (local_services, declared) = validate_services(raw, catalogue, &mut findings);
    let extended = catalogue
        .with(local_services.clone())
        .unwrap_or_else(|_| catalogue.clone());
    let catalogue = &extended;

    let tools = validate_tools(raw, catalogue, &mut findings);
    let mut checks = Vec::new();
    let components = validate_components(
        raw,
        catalogue,
        !tools.is_empty(),
        &mut findings,
        &mut checks,
    );
    let checkpoints = validate_checkpoints(raw, &components, catalogue, &mut findings, &mut checks);
    validate_task_services(raw, &tools, &declared, &checks, catalogue, &mut findings);
    let safety = validate_safety(raw, &tools, &checks, catalogue, &mut findings);
    let folder = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let context = evaluation::Context {
        folder: &folder,
        catalogue,
        taken: components
            .iter()
            .map(|component| component.name.clone())
            .collect(),
    };
    let feedback = validate_feedback(raw, !checkpoints.is_empty(), &context, &mut findings);
    let oracle = oracle::validate_oracle(raw, &tools, catalogue, &mut findings);

    let services = task_services(&tools, &declared, &checks, catalogue);

    let files = validate_files(raw, &folder, dataset, &mut findings);
    evaluation::kept_out_of_the_workspace(raw, feedback.as_ref(), &folder, &mut findings);
    workspace_references(raw, document, &mut findings);

    let limits = validate_limits(raw, &mut findings);
    let pass_threshold = validate_pass_threshold(raw, &mut findings);
    let error_injection = validate_error_injection(raw, &mut findings);
    validate_labels(raw, &mut findings);

    let warnings = findings.into_result()?;
    Ok(Task {
        id,
        name,
        path: path.to_path_buf(),
        folder,
        prompt,
        prompt_line: raw
            .prompt
            .as_ref()
            .and_then(at)
            .map(|position| position.line),
        components,
        safety,
        fixtures: raw.fixtures.clone().unwrap_or(Value::Null),
        tools,
        documents: super::documents::file_documents(&services, &files),
        services,
        files,
        category: raw.category.clone(),
        // An unknown difficulty is a warning (ClawEnvKit's files have others) and no value.
        difficulty: raw
            .difficulty
            .as_ref()
            .and_then(|difficulty| Difficulty::from_name(&difficulty.value)),
        // An unknown capability is an error above.
        capability: raw
            .capability
            .as_ref()
            .and_then(|capability| Capability::from_name(&capability.value)),
        limits,
        pass_threshold,
        error_injection,
        local_services,
        checkpoints,
        feedback,
        oracle,
        warnings,
        line,
    })
}

impl Findings {
    /// The errors (a rejection) or the warnings, each in file order, as a reader goes through
    /// the file (the sort is stable: one value's problems keep their order).
    fn into_result(mut self) -> Result<Vec<Problem>, Rejected> {
        let place = |problem: &Problem| {
            problem
                .position
                .map(|position| (position.line, position.column))
        };
        self.errors.sort_by_key(place);
        self.warnings.sort_by_key(place);
        if !self.errors.is_empty() {
            return Err(Rejected {
                errors: self.errors,
                warnings: self.warnings,
            });
        }
        Ok(self.warnings)
    }
}

/// `task_id`, `task_name` and `prompt`: present and not empty; the id a file name, the prompt
/// short enough for an environment variable.
fn required_fields(
    raw: &RawTask,
    document: Option<&Node>,
    findings: &mut Findings,
) -> (String, String, String) {
    let mut required = |field: &str, value: &Option<Spanned<String>>| -> String {
        match value {
            Some(text) if !text.value.trim().is_empty() => text.value.clone(),
            Some(text) => {
                findings.error(
                    Problem::new(field, "must not be empty", at(text)).with_help(format!(
                        "write the task's {} after `{field}:`",
                        describe(field)
                    )),
                );
                String::new()
            }
            // Written as `field:` with nothing after it: the typed form cannot tell that from
            // absent, the located tree can.
            None => match document.and_then(|document| document.entry(field)) {
                Some((key, _)) => {
                    findings.error(
                        Problem::new(field, "has no value", at(key))
                            .with_help(format!("write the value after `{field}:`")),
                    );
                    String::new()
                }
                None => {
                    findings.error(
                        Problem::new(field, "missing required field", Some(Position::START))
                            .with_help(format!("add `{field}:` at the top level")),
                    );
                    String::new()
                }
            },
        }
    };
    let id = required("task_id", &raw.task_id);
    let name = required("task_name", &raw.task_name);
    let prompt = required("prompt", &raw.prompt);
    task_id_is_a_file_name(&id, raw.task_id.as_ref().and_then(at), findings);
    if prompt.len() > MAX_PROMPT_BYTES {
        findings.error(
            Problem::new(
                "prompt",
                format!(
                    "is {} bytes; a harness is given the prompt in CLAWTEST_PROMPT, and Linux \
                     refuses to start a program with a variable over 128 KiB",
                    prompt.len()
                ),
                raw.prompt.as_ref().and_then(at),
            )
            .with_help(format!(
                "keep the prompt under {MAX_PROMPT_BYTES} bytes: put long material in a file \
                 (`files:`) and name it in the prompt"
            )),
        );
    }
    (id, name, prompt)
}

/// The services a trial serves: those of the tools, those declared, those a check names.
fn task_services(
    tools: &[Tool],
    declared: &[(String, Option<Position>)],
    checks: &[LocatedCheck<'_>],
    catalogue: &Catalogue,
) -> Vec<String> {
    let mut services: BTreeSet<String> = tools.iter().map(|tool| tool.service.clone()).collect();
    services.extend(declared.iter().map(|(name, _)| name.clone()));
    for located in checks {
        if let Some(service) = check_service(&located.check)
            && catalogue.get(service).is_some()
        {
            services.insert(service.to_string());
        }
    }
    services.into_iter().collect()
}

/// `pass_threshold`: between 0 and 1 (a percentage is named as one).
fn validate_pass_threshold(raw: &RawTask, findings: &mut Findings) -> Option<f64> {
    match &raw.pass_threshold {
        Some(threshold) if !(0.0..=1.0).contains(&threshold.value) => {
            findings.error(
                Problem::new(
                    "pass_threshold",
                    format!("must be between 0 and 1, found {}", threshold.value),
                    at(threshold),
                )
                .with_help(match percentage(threshold.value) {
                    Some(share) => format!(
                        "{} looks like a percentage: write `pass_threshold: {share}`",
                        threshold.value
                    ),
                    None => {
                        "a final score at or above this passes a trial, e.g. `pass_threshold: 0.75`"
                            .to_string()
                    }
                }),
            );
            None
        }
        other => other.as_ref().map(|threshold| threshold.value),
    }
}

/// `capability` (an error when unknown) and `difficulty` (a warning when unknown).
fn validate_labels(raw: &RawTask, findings: &mut Findings) {
    if let Some(capability) = &raw.capability
        && Capability::from_name(&capability.value).is_none()
    {
        findings.error(
            Problem::new(
                "capability",
                format!("unknown capability `{}`", capability.value),
                at(capability),
            )
            .with_help(suggestion(&capability.value, &CAPABILITIES, "one of")),
        );
    }
    if let Some(difficulty) = &raw.difficulty
        && Difficulty::from_name(&difficulty.value).is_none()
    {
        findings.warn(
            Problem::new(
                "difficulty",
                format!("`{}` is not one of easy, medium, hard", difficulty.value),
                at(difficulty),
            )
            .with_help(suggestion(&difficulty.value, &DIFFICULTIES, "one of")),
        );
    }
}

/// Top-level keys clawtest does not read: a warning (ClawEnvKit files may carry extra keys),
/// with the nearest known key, since a misspelt key silently loses its value.
fn unknown_keys(document: &Node, findings: &mut Findings) {
    let Node::Map(entries) = document else {
        return;
    };
    for (key, _) in entries {
        if KNOWN_KEYS.contains(&key.value.as_str()) {
            continue;
        }
        let mut problem = Problem::new(
            key.value.clone(),
            "unknown top-level key; clawtest ignores it",
            at(key),
        );
        if let Some(near) = check::nearest(&key.value, &KNOWN_KEYS) {
            problem = problem.with_help(format!("did you mean `{near}`?"));
        }
        findings.warn(problem);
    }
}

fn check_service(check: &Check) -> Option<&str> {
    match check {
        Check::AuditActionExists { service, .. }
        | Check::AuditFieldEquals { service, .. }
        | Check::AuditFieldContains { service, .. }
        | Check::AuditCountGte { service, .. }
        | Check::AuditCountEquals { service, .. }
        | Check::AuditSequence { service, .. } => Some(service),
        _ => None,
    }
}

/// The actions an audit check requires, with the parameter that names each.
fn check_actions(check: &Check) -> Vec<(&str, String)> {
    match check {
        Check::AuditActionExists { action, .. }
        | Check::AuditFieldEquals { action, .. }
        | Check::AuditFieldContains { action, .. }
        | Check::AuditCountGte { action, .. }
        | Check::AuditCountEquals { action, .. } => vec![(action.as_str(), "action".to_string())],
        Check::AuditSequence { actions, .. } => actions
            .iter()
            .enumerate()
            .map(|(index, step)| (step.action.as_str(), format!("actions[{index}]")))
            .collect(),
        _ => Vec::new(),
    }
}

fn unknown_service(
    field: String,
    service: &str,
    catalogue: &Catalogue,
    position: Option<Position>,
) -> Problem {
    let names: Vec<&str> = catalogue.names().collect();
    Problem::new(field, format!("unknown service `{service}`"), position).with_help(suggestion(
        service,
        &names,
        "the services are",
    ))
}
