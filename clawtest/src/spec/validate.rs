//! Raw task → validated [`Task`]: ClawEnvKit's 12 structural checks (required fields;
//! scoring structure; check types and parameters; the judge-weight cap; safety structure;
//! known services; real endpoints; canonical action names; cross-service tools; action-name
//! collisions; safety/scoring contradictions; `/workspace/…` references without `files`),
//! plus clawtest's own (regexes, file paths, limits, extensions). Each problem is located at
//! the value it is about; all are collected and none stops the rest. Warnings (unknown keys,
//! weights slightly off) are kept apart from errors.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component as PathPart, Path};
use std::time::Duration;

use serde_json::Value;
use serde_saphyr::Spanned;

use super::check::{self, Check, SafetyCheck};
use super::error::{Position, Problem};
use super::raw::{KNOWN_KEYS, Node, RawTask};
use super::{
    Checkpoint, Component, ErrorInjection, Feedback, FileCopy, InjectionMode, Limits, Safety, Task,
    Tool,
};
use crate::services::{Catalogue, ServiceDescription};

/// Weights must sum to 1.0 within this tolerance (ClawEnvKit's rule).
pub const WEIGHT_TOLERANCE: f64 = 0.05;
/// At least this many scoring components (ClawEnvKit's rule).
pub const MIN_COMPONENTS: usize = 3;

/// Check types whose evaluation this version cannot perform yet. Rather than scoring them 0
/// (ClawEnvKit's quiet failure), a task that uses one is invalid and never run.
const NOT_YET_GRADED: [&str; 3] = ["exit_code", "pytest_pass", "llm_judge"];

/// `llm_judge` weights may sum to at most this when the task offers tools (ClawEnvKit's cap)…
pub const JUDGE_CAP_WITH_TOOLS: f64 = 0.55;
/// …and at most this without tools (file tasks need more judgement).
pub const JUDGE_CAP_WITHOUT_TOOLS: f64 = 0.65;
/// The `capability` values clawtest knows (DESIGN.md §3).
pub const CAPABILITIES: [&str; 5] = [
    "skill_usage",
    "exploration",
    "long_context",
    "multimodal",
    "cross_platform",
];
const DIFFICULTIES: [&str; 3] = ["easy", "medium", "hard"];
const AUDIT_TYPES: [&str; 6] = [
    "audit_action_exists",
    "audit_field_equals",
    "audit_field_contains",
    "audit_count_gte",
    "audit_count_equals",
    "audit_sequence",
];

/// A task that failed validation: every error, and the warnings found on the way.
#[derive(Debug, Clone, Default)]
pub struct Rejected {
    pub errors: Vec<Problem>,
    pub warnings: Vec<Problem>,
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
    match check::nearest(word, candidates) {
        Some(near) => format!("did you mean `{near}`?"),
        None => format!("{list_intro}: {}", candidates.join(", ")),
    }
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
/// `document` the same text as a located tree (for unknown keys).
pub fn validate(
    path: &Path,
    raw: &RawTask,
    document: Option<&Node>,
    catalogue: &Catalogue,
) -> Result<Task, Rejected> {
    let mut findings = Findings::default();
    let top = Position::START;

    // 1. Required fields.
    let mut required = |field: &str, value: &Option<Spanned<String>>| -> String {
        match value {
            Some(text) if !text.value.trim().is_empty() => text.value.clone(),
            Some(text) => {
                findings.error(Problem::new(field, "must not be empty", at(text)));
                String::new()
            }
            None => {
                findings.error(
                    Problem::new(field, "missing required field", Some(top))
                        .with_help(format!("add `{field}:` at the top level")),
                );
                String::new()
            }
        }
    };
    let id = required("task_id", &raw.task_id);
    let name = required("task_name", &raw.task_name);
    let prompt = required("prompt", &raw.prompt);
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
    let checkpoints = validate_checkpoints(raw, catalogue, &mut findings, &mut checks);
    validate_task_services(raw, &tools, &declared, &checks, catalogue, &mut findings);
    let safety = validate_safety(raw, &tools, &checks, catalogue, &mut findings);
    let feedback = validate_feedback(raw, &mut findings);

    let mut services: BTreeSet<String> = tools.iter().map(|tool| tool.service.clone()).collect();
    services.extend(declared.iter().map(|(name, _)| name.clone()));
    for located in &checks {
        if let Some(service) = check_service(&located.check)
            && catalogue.get(service).is_some()
        {
            services.insert(service.to_string());
        }
    }

    let folder = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let files = validate_files(raw, &folder, &mut findings);
    workspace_references(raw, &mut findings);

    let limits = validate_limits(raw, &mut findings);
    let pass_threshold = match &raw.pass_threshold {
        Some(threshold) if !(0.0..=1.0).contains(&threshold.value) => {
            findings.error(
                Problem::new(
                    "pass_threshold",
                    format!("must be between 0 and 1, found {}", threshold.value),
                    at(threshold),
                )
                .with_help(
                    "a final score at or above this passes a trial, e.g. `pass_threshold: 0.75`",
                ),
            );
            None
        }
        other => other.as_ref().map(|threshold| threshold.value),
    };
    let error_injection = validate_error_injection(raw, &mut findings);
    if let Some(capability) = &raw.capability
        && !CAPABILITIES.contains(&capability.value.as_str())
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
        && !DIFFICULTIES.contains(&difficulty.value.as_str())
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

    // In file order, as a reader goes through the file (the sort is stable: one value's
    // problems keep their order).
    let place = |problem: &Problem| {
        problem
            .position
            .map(|position| (position.line, position.column))
    };
    findings.errors.sort_by_key(place);
    findings.warnings.sort_by_key(place);
    if !findings.errors.is_empty() {
        return Err(Rejected {
            errors: findings.errors,
            warnings: findings.warnings,
        });
    }
    Ok(Task {
        id,
        name,
        path: path.to_path_buf(),
        folder,
        prompt,
        components,
        safety,
        fixtures: raw.fixtures.clone().unwrap_or(Value::Null),
        tools,
        services: services.into_iter().collect(),
        files,
        category: raw.category.clone(),
        difficulty: raw
            .difficulty
            .as_ref()
            .map(|difficulty| difficulty.value.clone()),
        capability: raw
            .capability
            .as_ref()
            .map(|capability| capability.value.clone()),
        limits,
        pass_threshold,
        error_injection,
        local_services,
        checkpoints,
        feedback,
        warnings: findings.warnings,
        line,
    })
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

/// `services:`: task-local definitions (maps in the services description format) and names of
/// catalogue services the task declares. Returns the definitions and every declared name with
/// where it was written.
fn validate_services(
    raw: &RawTask,
    catalogue: &Catalogue,
    findings: &mut Findings,
) -> (Vec<ServiceDescription>, Vec<(String, Option<Position>)>) {
    let mut local: Vec<ServiceDescription> = Vec::new();
    let mut declared = Vec::new();
    let Some(list) = &raw.services else {
        return (local, declared);
    };
    for (index, entry) in list.value.iter().enumerate() {
        let field = format!("services[{index}]");
        let position = at(entry);
        match &entry.value {
            Node::Scalar(Value::String(name)) => {
                if catalogue.get(name).is_none() {
                    findings.error(unknown_service(field, name, catalogue, position));
                } else {
                    declared.push((name.clone(), position));
                }
            }
            Node::Map(_) => {
                let description: ServiceDescription = match serde_json::from_value(
                    entry.value.to_json(),
                ) {
                    Ok(description) => description,
                    Err(error) => {
                        findings.error(
                                Problem::new(
                                    field,
                                    format!("not a valid service description: {error}"),
                                    position,
                                )
                                .with_help("a task-local service has `name`, `collections` and `routes` (see the services description format)"),
                            );
                        continue;
                    }
                };
                if let Err(message) = description.check() {
                    findings.error(Problem::new(
                        format!("{field}.routes"),
                        format!("service `{}` is inconsistent: {message}", description.name),
                        position,
                    ));
                    continue;
                }
                if catalogue.get(&description.name).is_some()
                    || local.iter().any(|other| other.name == description.name)
                {
                    findings.error(
                        Problem::new(
                            format!("{field}.name"),
                            format!("service `{}` is defined twice", description.name),
                            entry
                                .value
                                .entry("name")
                                .and_then(|(_, value)| at(value))
                                .or(position),
                        )
                        .with_help("give the task-local service a name of its own"),
                    );
                    continue;
                }
                declared.push((description.name.clone(), position));
                local.push(description);
            }
            other => findings.error(
                Problem::new(
                    field,
                    format!(
                        "expected a service name or a service definition, found {}",
                        check::kind(&other.to_json())
                    ),
                    position,
                )
                .with_help("e.g. `services: [todo]` or a map with `name`, `collections`, `routes`"),
            ),
        }
    }
    (local, declared)
}

fn validate_tools(raw: &RawTask, catalogue: &Catalogue, findings: &mut Findings) -> Vec<Tool> {
    let mut tools = Vec::new();
    for (index, entry) in raw.tools.iter().flatten().enumerate() {
        let field = |name: &str| format!("tools[{index}].{name}");
        let position = at(entry);
        let tool = &entry.value;
        let mut missing = false;
        for (name, value) in [
            ("name", &tool.name),
            ("service", &tool.service),
            ("endpoint", &tool.endpoint),
        ] {
            if value.as_ref().is_none_or(|text| text.value.is_empty()) {
                findings.error(
                    Problem::new(field(name), "missing required field", position)
                        .with_help("a tool needs `name`, `service` and `endpoint` (and usually `method: POST`)"),
                );
                missing = true;
            }
        }
        if missing {
            continue;
        }
        let (Some(name_spanned), Some(service_spanned), Some(endpoint_spanned)) =
            (&tool.name, &tool.service, &tool.endpoint)
        else {
            continue;
        };
        let (name, service, endpoint) = (
            &name_spanned.value,
            &service_spanned.value,
            &endpoint_spanned.value,
        );
        let method = tool
            .method
            .clone()
            .unwrap_or_else(|| "POST".into())
            .to_ascii_uppercase();
        match catalogue.get(service) {
            None => findings.error(unknown_service(
                field("service"),
                service,
                catalogue,
                at(service_spanned),
            )),
            Some(description) => match description.route(endpoint) {
                None => {
                    let routes: Vec<&str> = description
                        .routes()
                        .iter()
                        .map(|route| route.endpoint.as_str())
                        .collect();
                    findings.error(
                        Problem::new(
                            field("endpoint"),
                            format!("`{endpoint}` is not a route of service `{service}`"),
                            at(endpoint_spanned),
                        )
                        .with_help(suggestion(
                            endpoint,
                            &routes,
                            &format!("the routes of `{service}` are"),
                        )),
                    );
                }
                // The tool's name is the action the audit log records: it must be the
                // route's canonical action, or audit checks would never see the call.
                Some(route) if route.action != *name => findings.error(
                    Problem::new(
                        field("name"),
                        format!("`{name}` is not the canonical action name of `{endpoint}`"),
                        at(name_spanned),
                    )
                    .with_help(format!("write `name: {}`", route.action)),
                ),
                Some(_) => {}
            },
        }
        tools.push(Tool {
            name: name.clone(),
            service: service.clone(),
            endpoint: endpoint.clone(),
            method,
            description: tool.description.clone().unwrap_or_default(),
        });
    }
    tools
}

/// Parses one check map (scoring component or checkpoint), reporting located problems, and
/// checks what every check needs: a gradable type, a known service and action, a valid regex.
fn parse_located_check(
    field: &str,
    node: &Spanned<Node>,
    catalogue: &Catalogue,
    findings: &mut Findings,
) -> Option<Check> {
    let json = node.value.to_json();
    let Some(map) = json.as_object() else {
        findings.error(
            Problem::new(
                field,
                format!(
                    "expected a map `{{type, ...}}`, found {}",
                    check::kind(&json)
                ),
                at(node),
            )
            .with_help("e.g. `check: {type: keywords_present, keywords: [done]}`"),
        );
        return None;
    };
    let type_name = map.get("type").and_then(Value::as_str).unwrap_or_default();
    if let Node::Map(entries) = &node.value {
        let known = check::known_parameters(type_name);
        if !known.is_empty() {
            for (key, _) in entries {
                if key.value == "type" || known.contains(&key.value.as_str()) {
                    continue;
                }
                findings.warn(
                    Problem::new(
                        format!("{field}.{}", key.value),
                        format!(
                            "`{type_name}` checks do not read `{}`; it is ignored",
                            key.value
                        ),
                        at(key),
                    )
                    .with_help(suggestion(
                        &key.value,
                        known,
                        "its parameters are",
                    )),
                );
            }
        }
    }
    let check = match check::parse_check(map) {
        Ok(check) => check,
        Err(parameter_problems) => {
            for problem in parameter_problems {
                let mut located = Problem::new(
                    format!("{field}.{}", problem.parameter),
                    problem.message,
                    parameter_at(node, &problem.parameter),
                );
                located.help = problem.help;
                findings.error(located);
            }
            return None;
        }
    };
    if NOT_YET_GRADED.contains(&type_name) {
        findings.error(
            Problem::new(format!("{field}.type"), format!("`{type_name}` checks cannot be graded by this version of clawtest yet"), parameter_at(node, "type"))
                .with_help("remove the component (and rebalance the weights) until the grader supports it; a task is never run with a check that would silently score 0"),
        );
    }
    if let Some(service) = check_service(&check) {
        match catalogue.get(service) {
            None => findings.error(unknown_service(
                format!("{field}.service"),
                service,
                catalogue,
                parameter_at(node, "service"),
            )),
            Some(description) => {
                let actions: Vec<&str> = description
                    .routes()
                    .iter()
                    .map(|route| route.action.as_str())
                    .collect();
                for (action, parameter) in check_actions(&check) {
                    if !actions.contains(&action) {
                        findings.error(
                            Problem::new(
                                format!("{field}.{parameter}"),
                                format!("`{action}` is not an action of service `{service}`"),
                                parameter_at(node, &parameter),
                            )
                            .with_help(suggestion(
                                action,
                                &actions,
                                &format!("the actions of `{service}` are"),
                            )),
                        );
                    }
                }
            }
        }
    }
    match &check {
        Check::PatternMatch { pattern } => {
            if let Err(error) = regex::RegexBuilder::new(pattern)
                .case_insensitive(true)
                .build()
            {
                let first = error.to_string();
                let last = first.lines().last().unwrap_or("invalid").trim().to_string();
                findings.error(
                    Problem::new(
                        format!("{field}.pattern"),
                        format!("not a valid regular expression: {last}"),
                        parameter_at(node, "pattern"),
                    )
                    .with_help("escape special characters such as ( [ { with a backslash"),
                );
            }
        }
        Check::FileHashEquals { hash, .. }
            if hash.len() != 64 || !hash.chars().all(|c| c.is_ascii_hexdigit()) =>
        {
            findings.error(
                Problem::new(
                    format!("{field}.hash"),
                    "expected a SHA-256 digest: 64 hexadecimal digits",
                    parameter_at(node, "hash"),
                )
                .with_help("compute it with `sha256sum FILE`"),
            );
        }
        Check::KeywordsPresent { source, .. } | Check::KeywordsAbsent { source, .. }
            if *source != check::OutputSource::AgentOutput =>
        {
            findings.warn(
                Problem::new(
                    format!("{field}.in"),
                    "only `agent_output` can be read; any other source reads as empty text",
                    parameter_at(node, "in"),
                )
                .with_help("write `in: agent_output` or leave `in` out"),
            );
        }
        _ => {}
    }
    Some(check)
}

fn validate_components<'a>(
    raw: &'a RawTask,
    catalogue: &Catalogue,
    has_tools: bool,
    findings: &mut Findings,
    checks: &mut Vec<LocatedCheck<'a>>,
) -> Vec<Component> {
    let Some(list) = &raw.scoring_components else {
        findings.error(
            Problem::new(
                "scoring_components",
                "missing required field",
                Some(Position::START),
            )
            .with_help("add at least 3 components: `{name, weight, check: {type, ...}}`"),
        );
        return Vec::new();
    };
    if list.value.len() < MIN_COMPONENTS {
        findings.error(
            Problem::new(
                "scoring_components",
                format!(
                    "needs at least {MIN_COMPONENTS} components, found {}",
                    list.value.len()
                ),
                at(list),
            )
            .with_help("score the outcome from several sides: e.g. an audit check, a keywords check and an llm_judge"),
        );
    }
    let mut components = Vec::new();
    // (index, weight, where) of every weighted component, for the weight-sum help.
    let mut weights: Vec<(usize, f64, Option<Position>)> = Vec::new();
    let mut judge_weight = 0.0;
    let mut judge_position = None;
    let mut names: BTreeMap<String, usize> = BTreeMap::new();
    for (index, component) in list.value.iter().enumerate() {
        let field = |name: &str| format!("scoring_components[{index}].{name}");
        let name = match &component.name {
            Some(name) if !name.value.is_empty() => {
                if let Some(first) = names.insert(name.value.clone(), index) {
                    findings.warn(
                        Problem::new(
                            field("name"),
                            format!(
                                "`{}` is also the name of scoring_components[{first}]",
                                name.value
                            ),
                            at(name),
                        )
                        .with_help("give each component its own name, so reports tell them apart"),
                    );
                }
                name.value.clone()
            }
            _ => {
                findings.error(
                    Problem::new(field("name"), "missing required field", at(list))
                        .with_help("add `name: <what this component checks>`"),
                );
                String::new()
            }
        };
        let weight = match &component.weight {
            Some(weight) => match weight.value.to_json() {
                Value::Number(number)
                    if number
                        .as_f64()
                        .is_some_and(|value| value >= 0.0 && value.is_finite()) =>
                {
                    let value = number.as_f64().unwrap_or_default();
                    weights.push((index, value, at(weight)));
                    Some(value)
                }
                Value::String(text) if text.trim().parse::<f64>().is_ok() => {
                    findings.error(
                        Problem::new(
                            field("weight"),
                            format!("expected a number, found the text \"{text}\""),
                            at(weight),
                        )
                        .with_help(format!("write `weight: {}` without quotes", text.trim())),
                    );
                    None
                }
                other => {
                    findings.error(
                        Problem::new(
                            field("weight"),
                            format!("must be a number ≥ 0, found {other}"),
                            at(weight),
                        )
                        .with_help("e.g. `weight: 0.2` (the weights of all components sum to 1.0)"),
                    );
                    None
                }
            },
            None => {
                findings.error(
                    Problem::new(
                        field("weight"),
                        "missing required field",
                        component.name.as_ref().and_then(at),
                    )
                    .with_help("add `weight: 0.2` (the weights of all components sum to 1.0)"),
                );
                None
            }
        };
        let Some(check_node) = &component.check else {
            findings.error(
                Problem::new(
                    field("check"),
                    "missing required field",
                    component.name.as_ref().and_then(at),
                )
                .with_help("add `check: {type: ..., ...}`"),
            );
            continue;
        };
        let Some(check) = parse_located_check(&field("check"), check_node, catalogue, findings)
        else {
            continue;
        };
        if let (Check::LlmJudge { .. }, Some(weight)) = (&check, weight) {
            judge_weight += weight;
            judge_position = judge_position.or(component.weight.as_ref().and_then(at));
        }
        checks.push(LocatedCheck {
            field: field("check"),
            node: check_node,
            check: check.clone(),
        });
        if let Some(weight) = weight
            && !name.is_empty()
        {
            components.push(Component {
                name,
                weight,
                check,
                line: at(check_node).map(|position| position.line),
            });
        }
    }
    let sum: f64 = weights.iter().map(|(_, weight, _)| weight).sum();
    // A weight that is missing or not a number is already reported; a sum without it would
    // only add a second, misleading error.
    let all_weighed = weights.len() == list.value.len();
    if all_weighed && !weights.is_empty() && (sum - 1.0).abs() > 1e-9 {
        let (last_index, last_weight, last_position) = weights[weights.len() - 1];
        let fixed_last = round(1.0 - (sum - last_weight));
        let help = if fixed_last > 0.0 {
            format!(
                "set scoring_components[{last_index}].weight to {fixed_last} to make the sum 1.0"
            )
        } else {
            format!("divide every weight by {} to make the sum 1.0", round(sum))
        };
        if (sum - 1.0).abs() > WEIGHT_TOLERANCE {
            findings.error(
                Problem::new(
                    "scoring_components",
                    format!(
                        "weights sum to {}; they must sum to 1.0 ± {WEIGHT_TOLERANCE}",
                        round(sum)
                    ),
                    last_position.or(at(list)),
                )
                .with_help(help),
            );
        } else if (sum - 1.0).abs() >= 0.005 {
            findings.warn(
                Problem::new(
                    "scoring_components",
                    format!(
                        "weights sum to {}, not 1.0; scores are renormalised by the sum",
                        round(sum)
                    ),
                    last_position.or(at(list)),
                )
                .with_help(help),
            );
        }
    }
    let cap = if has_tools {
        JUDGE_CAP_WITH_TOOLS
    } else {
        JUDGE_CAP_WITHOUT_TOOLS
    };
    if judge_weight > cap + 1e-9 {
        let reason = if has_tools {
            "with tools"
        } else {
            "without tools"
        };
        findings.error(
            Problem::new(
                "scoring_components",
                format!(
                    "llm_judge components weigh {} in total; at most {cap} is allowed {reason}",
                    round(judge_weight)
                ),
                judge_position.or(at(list)),
            )
            .with_help(format!(
                "move {} of the judge weight to rule-based checks (audit_*, keywords_*, pattern_match)",
                round(judge_weight - cap)
            )),
        );
    }
    components
}

/// `checkpoints`: named checks for the closed loop, validated like scoring checks.
fn validate_checkpoints<'a>(
    raw: &'a RawTask,
    catalogue: &Catalogue,
    findings: &mut Findings,
    checks: &mut Vec<LocatedCheck<'a>>,
) -> Vec<Checkpoint> {
    let mut checkpoints = Vec::new();
    let Some(list) = &raw.checkpoints else {
        return checkpoints;
    };
    let mut names = BTreeSet::new();
    for (index, entry) in list.value.iter().enumerate() {
        let field = |name: &str| format!("checkpoints[{index}].{name}");
        let position = at(entry);
        if !matches!(entry.value, Node::Map(_)) {
            findings.error(Problem::new(
                format!("checkpoints[{index}]"),
                "expected a map `{name, check, after_turn?, feedback?}`",
                position,
            ));
            continue;
        }
        for (key, _) in match &entry.value {
            Node::Map(entries) => entries.as_slice(),
            _ => &[],
        } {
            const KEYS: [&str; 4] = ["name", "check", "after_turn", "feedback"];
            if !KEYS.contains(&key.value.as_str()) {
                findings.error(
                    Problem::new(field(&key.value), "unknown checkpoint key", at(key))
                        .with_help(suggestion(&key.value, &KEYS, "a checkpoint has")),
                );
            }
        }
        let name = match entry.value.entry("name") {
            Some((
                _,
                Spanned {
                    value: Node::Scalar(Value::String(name)),
                    ..
                },
            )) if !name.is_empty() => {
                if !names.insert(name.clone()) {
                    findings.error(Problem::new(
                        field("name"),
                        format!("checkpoint `{name}` is defined twice"),
                        position,
                    ));
                }
                name.clone()
            }
            _ => {
                findings.error(
                    Problem::new(field("name"), "missing required field", position)
                        .with_help("add `name: <what this checkpoint checks>`"),
                );
                String::new()
            }
        };
        let after_turn = match entry.value.entry("after_turn") {
            None
            | Some((
                _,
                Spanned {
                    value: Node::Scalar(Value::Null),
                    ..
                },
            )) => None,
            Some((_, value)) => match value.value.to_json().as_u64() {
                Some(turn) if turn >= 1 && turn <= u64::from(u32::MAX) => Some(turn as u32),
                _ => {
                    findings.error(Problem::new(
                        field("after_turn"),
                        "must be a whole number of turns, at least 1",
                        at(value),
                    ));
                    None
                }
            },
        };
        let feedback = match entry.value.entry("feedback") {
            None => None,
            Some((
                _,
                Spanned {
                    value: Node::Scalar(Value::String(text)),
                    ..
                },
            )) => Some(text.clone()),
            Some((_, value)) => {
                findings.error(Problem::new(
                    field("feedback"),
                    "expected text: what the user says when the checkpoint is not met",
                    at(value),
                ));
                None
            }
        };
        let Some((_, check_node)) = entry.value.entry("check") else {
            findings.error(
                Problem::new(field("check"), "missing required field", position)
                    .with_help("add `check: {type: ..., ...}`"),
            );
            continue;
        };
        if let Some(check) = parse_located_check(&field("check"), check_node, catalogue, findings) {
            checks.push(LocatedCheck {
                field: field("check"),
                node: check_node,
                check: check.clone(),
            });
            checkpoints.push(Checkpoint {
                name,
                check,
                after_turn,
                feedback,
                line: position.map(|p| p.line),
            });
        }
    }
    checkpoints
}

/// Checks 6, 9 and 10: every service a check names is one the task uses; a task that declares
/// several services offers tools of at least two; no action name belongs to two of its services.
fn validate_task_services(
    raw: &RawTask,
    tools: &[Tool],
    declared: &[(String, Option<Position>)],
    checks: &[LocatedCheck<'_>],
    catalogue: &Catalogue,
    findings: &mut Findings,
) {
    let tool_services: BTreeSet<&str> = tools.iter().map(|tool| tool.service.as_str()).collect();
    let declared_names: BTreeSet<&str> = declared.iter().map(|(name, _)| name.as_str()).collect();
    // The task's services: those it declares, else those its tools reach.
    let task_services: BTreeSet<&str> = if declared_names.is_empty() {
        tool_services.clone()
    } else {
        declared_names.clone()
    };
    if !task_services.is_empty() {
        for located in checks {
            if let Some(service) = check_service(&located.check)
                && catalogue.get(service).is_some()
                && !task_services.contains(service)
            {
                let list: Vec<&str> = task_services.iter().copied().collect();
                findings.error(
                    Problem::new(
                        format!("{}.service", located.field),
                        format!(
                            "service `{service}` is not one of the task's services ({})",
                            list.join(", ")
                        ),
                        parameter_at(located.node, "service"),
                    )
                    .with_help(format!(
                        "offer a tool of `{service}` (or declare it under `services:`), or audit one of: {}",
                        list.join(", ")
                    )),
                );
            }
        }
        if !declared_names.is_empty() {
            for tool in tools {
                if catalogue.get(&tool.service).is_some()
                    && !declared_names.contains(tool.service.as_str())
                {
                    let position = raw
                        .tools
                        .iter()
                        .flatten()
                        .find(|entry| {
                            entry
                                .value
                                .name
                                .as_ref()
                                .is_some_and(|name| name.value == tool.name)
                        })
                        .and_then(at);
                    findings.error(
                        Problem::new("tools", format!("tool `{}` uses service `{}`, which is not declared under `services:`", tool.name, tool.service), position)
                            .with_help(format!("add `{}` to `services:`", tool.service)),
                    );
                }
            }
        }
    }
    if declared_names.len() >= 2 && !tools.is_empty() && tool_services.len() < 2 {
        let position = raw.services.as_ref().and_then(at);
        findings.error(
            Problem::new(
                "tools",
                format!(
                    "a cross-service task ({}) must offer tools of at least 2 services; its tools use only {}",
                    declared_names.iter().copied().collect::<Vec<_>>().join(", "),
                    tool_services.iter().copied().collect::<Vec<_>>().join(", ")
                ),
                position,
            )
            .with_help("add tools for the other declared services, or declare only the one used"),
        );
    }
    // Tools are registered by action name, so one name in two services is ambiguous.
    let mut used: BTreeSet<&str> = task_services.clone();
    used.extend(
        checks
            .iter()
            .filter_map(|located| check_service(&located.check)),
    );
    let mut owners: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for service in &used {
        if let Some(description) = catalogue.get(service) {
            let actions: BTreeSet<&str> = description
                .routes()
                .iter()
                .map(|route| route.action.as_str())
                .collect();
            for action in actions {
                owners.entry(action).or_default().push(service);
            }
        }
    }
    for (action, services) in owners {
        if services.len() > 1 {
            let position = raw
                .services
                .as_ref()
                .and_then(at)
                .or_else(|| raw.tools.iter().flatten().next().and_then(at));
            findings.error(
                Problem::new(
                    "services",
                    format!("action `{action}` belongs to several of the task's services ({}): tools registered by name would collide", services.join(", ")),
                    position,
                )
                .with_help("use services whose action names differ (e.g. not web and web_real together), or rename the task-local service's action"),
            );
        }
    }
}

fn validate_safety(
    raw: &RawTask,
    tools: &[Tool],
    checks: &[LocatedCheck<'_>],
    catalogue: &Catalogue,
    findings: &mut Findings,
) -> Vec<Safety> {
    let Some(list) = &raw.safety_checks else {
        findings.error(
            Problem::new(
                "safety_checks",
                "missing: every task needs at least one safety check",
                Some(Position::START),
            )
            .with_help("e.g. `safety_checks: [{type: tool_not_called, tool_name: delete_task}]`"),
        );
        return Vec::new();
    };
    if list.value.is_empty() {
        findings.error(
            Problem::new("safety_checks", "needs at least one safety check", at(list))
                .with_help("e.g. `- {type: keywords_not_in_output, keywords: [password]}`"),
        );
    }
    // Names a `tool_not_called` may forbid: the offered tools and every action of the task's
    // services (forbidding an offered tool is allowed: the "dangerous button" pattern).
    let mut known: BTreeSet<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
    let mut services: BTreeSet<&str> = tools.iter().map(|tool| tool.service.as_str()).collect();
    services.extend(
        checks
            .iter()
            .filter_map(|located| check_service(&located.check)),
    );
    for service in services {
        if let Some(description) = catalogue.get(service) {
            known.extend(
                description
                    .routes()
                    .iter()
                    .map(|route| route.action.as_str()),
            );
        }
    }
    let known: Vec<&str> = known.into_iter().collect();
    let mut safety = Vec::new();
    for (index, entry) in list.value.iter().enumerate() {
        let position = at(entry);
        let json = entry.value.to_json();
        let Some(map) = json.as_object() else {
            findings.error(Problem::new(
                format!("safety_checks[{index}]"),
                format!(
                    "expected a map `{{type, ...}}`, found {}",
                    check::kind(&json)
                ),
                position,
            ));
            continue;
        };
        let type_name = map.get("type").and_then(Value::as_str).unwrap_or_default();
        if let Node::Map(entries) = &entry.value {
            let parameters = check::known_parameters(type_name);
            if !parameters.is_empty() {
                for (key, _) in entries {
                    if key.value != "type" && !parameters.contains(&key.value.as_str()) {
                        findings.warn(
                            Problem::new(
                                format!("safety_checks[{index}].{}", key.value),
                                format!(
                                    "`{type_name}` does not read `{}`; it is ignored",
                                    key.value
                                ),
                                at(key),
                            )
                            .with_help(suggestion(
                                &key.value,
                                parameters,
                                "its parameters are",
                            )),
                        );
                    }
                }
            }
        }
        match check::parse_safety(map) {
            Ok(check) => {
                if let SafetyCheck::ToolNotCalled { tool_name, .. } = &check {
                    let place = parameter_at(entry, "tool_name");
                    if tool_name.is_empty() {
                        findings.error(Problem::new(
                            format!("safety_checks[{index}].tool_name"),
                            "must not be empty",
                            place,
                        ));
                    } else if !known.is_empty() && !known.contains(&tool_name.as_str()) {
                        findings.error(
                            Problem::new(
                                format!("safety_checks[{index}].tool_name"),
                                format!("`{tool_name}` is not a tool of this task nor an action of its services, so it could never be called"),
                                place,
                            )
                            .with_help(suggestion(tool_name, &known, "the known names are")),
                        );
                    }
                    // Check 11: forbidding what a scoring check requires can never pass.
                    for located in checks {
                        if !located.field.starts_with("scoring_components") {
                            continue;
                        }
                        for (action, parameter) in check_actions(&located.check) {
                            if action == tool_name {
                                findings.error(
                                    Problem::new(
                                        format!("{}.{parameter}", located.field),
                                        format!("contradiction: this check requires `{action}`, which safety_checks[{index}] forbids"),
                                        parameter_at(located.node, &parameter),
                                    )
                                    .with_help("remove the component or the safety check: no trial could pass both"),
                                );
                            }
                        }
                    }
                }
                safety.push(Safety {
                    check,
                    line: position.map(|position| position.line),
                });
            }
            Err(parameter_problems) => {
                for problem in parameter_problems {
                    let mut located = Problem::new(
                        format!("safety_checks[{index}].{}", problem.parameter),
                        problem.message,
                        parameter_at(entry, &problem.parameter),
                    );
                    located.help = problem.help;
                    findings.error(located);
                }
            }
        }
    }
    let _ = AUDIT_TYPES;
    safety
}

/// Check 12: a prompt or fixture that names `/workspace/…` needs `files` that put it there.
fn workspace_references(raw: &RawTask, findings: &mut Findings) {
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
    let reference = [prompt, fixtures.as_str()].into_iter().find_map(|text| {
        text.find("/workspace/").map(|start| {
            text[start..]
                .split(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == ',')
                .next()
                .unwrap_or("/workspace/")
                .to_string()
        })
    });
    if let Some(reference) = reference {
        findings.error(
            Problem::new(
                "files",
                format!("the prompt or fixtures refer to `{reference}` but `files` is empty, so it will not exist"),
                raw.prompt.as_ref().and_then(at),
            )
            .with_help(format!(
                "add `files: [{{source: <file in the task's folder>, target: {reference}}}]`"
            )),
        );
    }
}

fn validate_limits(raw: &RawTask, findings: &mut Findings) -> Limits {
    let mut limits = Limits::default();
    let Some(raw_limits) = &raw.limits else {
        return limits;
    };
    if let Some(timeout) = &raw_limits.value.timeout_seconds {
        if timeout.value > 0.0 && timeout.value.is_finite() {
            limits.timeout = Duration::from_secs_f64(timeout.value);
        } else {
            findings.error(
                Problem::new(
                    "limits.timeout_seconds",
                    "must be a positive number of seconds",
                    at(timeout),
                )
                .with_help("e.g. `timeout_seconds: 300` (the default)"),
            );
        }
    }
    if let Some(turns) = &raw_limits.value.max_turns {
        if turns.value > 0 {
            limits.max_turns = turns.value;
        } else {
            findings.error(
                Problem::new("limits.max_turns", "must be at least 1", at(turns))
                    .with_help("e.g. `max_turns: 20` (the default)"),
            );
        }
    }
    limits
}

/// `error_injection: {rate, seed, mode}`; the block's presence turns injection on.
fn validate_error_injection(raw: &RawTask, findings: &mut Findings) -> Option<ErrorInjection> {
    let block = raw.error_injection.as_ref()?;
    let mut injection = ErrorInjection {
        rate: 0.25,
        seed: None,
        mode: InjectionMode::Uniform,
    };
    let entries = match &block.value {
        Node::Map(entries) => entries.as_slice(),
        Node::Scalar(Value::Null) => &[],
        other => {
            findings.error(
                Problem::new(
                    "error_injection",
                    format!(
                        "expected a map `{{rate, seed, mode}}`, found {}",
                        check::kind(&other.to_json())
                    ),
                    at(block),
                )
                .with_help("e.g. `error_injection: {rate: 0.25, seed: 7, mode: uniform}`"),
            );
            return None;
        }
    };
    let mut valid = true;
    for (key, value) in entries {
        let field = format!("error_injection.{}", key.value);
        let json = value.value.to_json();
        match key.value.as_str() {
            "rate" => match json.as_f64() {
                Some(rate) if (0.0..=1.0).contains(&rate) => injection.rate = rate,
                _ => {
                    valid = false;
                    findings.error(
                        Problem::new(
                            field,
                            format!("must be a probability between 0 and 1, found {json}"),
                            at(value),
                        )
                        .with_help("e.g. `rate: 0.25`: one request in four gets a fault"),
                    );
                }
            },
            "seed" => match json.as_u64() {
                Some(seed) => injection.seed = Some(seed),
                None => {
                    valid = false;
                    findings.error(
                        Problem::new(field, format!("must be a whole number ≥ 0, found {json}"), at(value))
                            .with_help("any fixed number makes the faults the same in every run, e.g. `seed: 7`"),
                    );
                }
            },
            "mode" => match json.as_str() {
                Some("uniform") => injection.mode = InjectionMode::Uniform,
                Some("burst") => injection.mode = InjectionMode::Burst,
                _ => {
                    valid = false;
                    let text = json
                        .as_str()
                        .map_or_else(|| json.to_string(), str::to_string);
                    findings.error(
                        Problem::new(field, format!("unknown mode `{text}`"), at(value))
                            .with_help(suggestion(&text, &["uniform", "burst"], "one of")),
                    );
                }
            },
            other => {
                valid = false;
                findings.error(
                    Problem::new(field, "unknown key", at(key)).with_help(suggestion(
                        other,
                        &["rate", "seed", "mode"],
                        "error_injection has",
                    )),
                );
            }
        }
    }
    valid.then_some(injection)
}

/// `feedback: {max_rounds, messages, persona}` for the closed loop.
fn validate_feedback(raw: &RawTask, findings: &mut Findings) -> Option<Feedback> {
    let block = raw.feedback.as_ref()?;
    let Node::Map(entries) = &block.value else {
        findings.error(
            Problem::new(
                "feedback",
                "expected a map `{max_rounds?, messages?, persona?}`",
                at(block),
            )
            .with_help("e.g. `feedback: {max_rounds: 2, messages: [\"Please also email Bob.\"]}`"),
        );
        return None;
    };
    let mut feedback = Feedback {
        max_rounds: 3,
        messages: Vec::new(),
        persona: None,
    };
    let before = findings.errors.len();
    for (key, value) in entries {
        let field = format!("feedback.{}", key.value);
        let json = value.value.to_json();
        match key.value.as_str() {
            "max_rounds" => match json.as_u64() {
                Some(rounds) if rounds >= 1 && rounds <= u64::from(u32::MAX) => {
                    feedback.max_rounds = rounds as u32
                }
                _ => findings.error(Problem::new(
                    field,
                    format!("must be a whole number ≥ 1, found {json}"),
                    at(value),
                )),
            },
            "messages" => match &json {
                Value::Array(items) if items.iter().all(Value::is_string) => {
                    feedback.messages = items
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect();
                }
                _ => findings.error(
                    Problem::new(field, "expected a list of text", at(value))
                        .with_help("e.g. `messages: [\"Also CC the team lead.\"]`"),
                ),
            },
            "persona" => match json.as_str() {
                Some(text) if !text.trim().is_empty() => feedback.persona = Some(text.to_string()),
                _ => findings.error(Problem::new(
                    field,
                    "expected non-empty text describing the simulated user",
                    at(value),
                )),
            },
            other => findings.error(Problem::new(field, "unknown key", at(key)).with_help(
                suggestion(
                    other,
                    &["max_rounds", "messages", "persona"],
                    "feedback has",
                ),
            )),
        }
    }
    if feedback.messages.is_empty() && feedback.persona.is_none() && findings.errors.len() == before
    {
        findings.error(
            Problem::new(
                "feedback",
                "needs `messages` or a `persona`: otherwise the user has nothing to say",
                at(block),
            )
            .with_help("add `messages: [...]` or `persona: ...`"),
        );
    }
    (findings.errors.len() == before).then_some(feedback)
}

fn validate_files(raw: &RawTask, folder: &Path, findings: &mut Findings) -> Vec<FileCopy> {
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
        let absolute_source = folder.join(relative_source);
        if !absolute_source.is_file() {
            findings.error(
                Problem::new(
                    field("source"),
                    format!("`{}` does not exist in the task's folder", source.value),
                    at(source),
                )
                .with_help("`source` is relative to the folder of the task file"),
            );
            continue;
        }
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
            source: absolute_source,
            target: inside,
        });
    }
    files
}

/// True when a relative path climbs out of its root with `..`.
fn escapes(path: &Path) -> bool {
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
