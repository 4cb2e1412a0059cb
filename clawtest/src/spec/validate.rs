//! Raw task → validated [`Task`]: the structural checks that this version enforces, each
//! problem located at the value it is about. All problems are collected; none stops the rest.

use std::collections::BTreeSet;
use std::path::{Component as PathPart, Path};
use std::time::Duration;

use serde_json::Value;
use serde_saphyr::Spanned;

use super::check::{self, Check, SafetyCheck};
use super::error::{Position, Problem};
use super::raw::RawTask;
use super::{Component, FileCopy, Limits, Safety, Task, Tool};
use crate::services::Catalogue;

/// Weights must sum to 1.0 within this tolerance (ClawEnvKit's rule).
pub const WEIGHT_TOLERANCE: f64 = 0.05;
/// At least this many scoring components (ClawEnvKit's rule).
pub const MIN_COMPONENTS: usize = 3;

/// Check types whose evaluation this version cannot perform yet. Rather than scoring them 0
/// (ClawEnvKit's quiet failure), a task that uses one is invalid and never run.
const NOT_YET_GRADED: [&str; 2] = ["exit_code", "pytest_pass"];

fn at<T>(spanned: &Spanned<T>) -> Option<Position> {
    Position::from_location(spanned.referenced)
}

/// Validates a parsed task; `path` is the task file (its folder anchors `files[].source`).
pub fn validate(path: &Path, raw: &RawTask, catalogue: &Catalogue) -> Result<Task, Vec<Problem>> {
    let mut problems = Vec::new();
    let document = Position {
        line: 1,
        column: 1,
        span: None,
    };

    let mut required = |field: &str, value: &Option<Spanned<String>>| -> String {
        match value {
            Some(text) if !text.value.trim().is_empty() => text.value.clone(),
            Some(text) => {
                problems.push(Problem::new(field, "must not be empty", at(text)));
                String::new()
            }
            None => {
                problems.push(
                    Problem::new(field, "missing required field", Some(document))
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

    let tools = validate_tools(raw, catalogue, &mut problems);
    let components = validate_components(raw, catalogue, &mut problems);
    let safety = validate_safety(raw, &tools, &mut problems);

    let mut services: BTreeSet<String> = tools.iter().map(|tool| tool.service.clone()).collect();
    for component in &components {
        if let Some(service) = check_service(&component.check)
            && catalogue.get(service).is_some()
        {
            services.insert(service.to_string());
        }
    }

    let folder = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let files = validate_files(raw, &folder, &mut problems);

    let mut limits = Limits::default();
    if let Some(raw_limits) = &raw.limits {
        if let Some(timeout) = &raw_limits.value.timeout_seconds {
            if timeout.value > 0.0 && timeout.value.is_finite() {
                limits.timeout = Duration::from_secs_f64(timeout.value);
            } else {
                problems.push(Problem::new(
                    "limits.timeout_seconds",
                    "must be a positive number of seconds",
                    at(timeout),
                ));
            }
        }
        if let Some(turns) = &raw_limits.value.max_turns {
            if turns.value > 0 {
                limits.max_turns = turns.value;
            } else {
                problems.push(Problem::new(
                    "limits.max_turns",
                    "must be at least 1",
                    at(turns),
                ));
            }
        }
    }
    let pass_threshold = match &raw.pass_threshold {
        Some(threshold) if !(0.0..=1.0).contains(&threshold.value) => {
            problems.push(Problem::new(
                "pass_threshold",
                format!("must be between 0 and 1, found {}", threshold.value),
                at(threshold),
            ));
            None
        }
        other => other.as_ref().map(|threshold| threshold.value),
    };

    if !problems.is_empty() {
        return Err(problems);
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
        difficulty: raw.difficulty.clone(),
        capability: raw
            .capability
            .as_ref()
            .map(|capability| capability.value.clone()),
        limits,
        pass_threshold,
        line,
    })
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

fn unknown_service(
    field: String,
    service: &str,
    catalogue: &Catalogue,
    position: Option<Position>,
) -> Problem {
    let names: Vec<&str> = catalogue.names().collect();
    let help = match check::nearest(service, &names) {
        Some(near) => format!("did you mean `{near}`?"),
        None => format!("the services are: {}", names.join(", ")),
    };
    Problem::new(field, format!("unknown service `{service}`"), position).with_help(help)
}

fn validate_tools(raw: &RawTask, catalogue: &Catalogue, problems: &mut Vec<Problem>) -> Vec<Tool> {
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
            if value.as_deref().is_none_or(str::is_empty) {
                problems.push(Problem::new(
                    field(name),
                    "missing required field",
                    position,
                ));
                missing = true;
            }
        }
        if missing {
            continue;
        }
        let (Some(name), Some(service), Some(endpoint)) =
            (&tool.name, &tool.service, &tool.endpoint)
        else {
            continue;
        };
        let method = tool
            .method
            .clone()
            .unwrap_or_else(|| "POST".into())
            .to_ascii_uppercase();
        match catalogue.get(service) {
            None => problems.push(unknown_service(
                field("service"),
                service,
                catalogue,
                position,
            )),
            Some(description) => {
                if description.route(endpoint).is_none() {
                    let routes: Vec<&str> = description
                        .routes()
                        .iter()
                        .map(|route| route.endpoint.as_str())
                        .collect();
                    let help = match check::nearest(endpoint, &routes) {
                        Some(near) => format!("did you mean `{near}`?"),
                        None => format!("the routes of `{service}` are: {}", routes.join(", ")),
                    };
                    problems.push(
                        Problem::new(
                            field("endpoint"),
                            format!("`{endpoint}` is not a route of service `{service}`"),
                            position,
                        )
                        .with_help(help),
                    );
                }
            }
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

fn validate_components(
    raw: &RawTask,
    catalogue: &Catalogue,
    problems: &mut Vec<Problem>,
) -> Vec<Component> {
    let Some(list) = &raw.scoring_components else {
        problems.push(
            Problem::new(
                "scoring_components",
                "missing required field",
                Some(Position {
                    line: 1,
                    column: 1,
                    span: None,
                }),
            )
            .with_help("add at least 3 components: `{name, weight, check: {type, ...}}`"),
        );
        return Vec::new();
    };
    if list.value.len() < MIN_COMPONENTS {
        problems.push(Problem::new(
            "scoring_components",
            format!(
                "needs at least {MIN_COMPONENTS} components, found {}",
                list.value.len()
            ),
            at(list),
        ));
    }
    let mut components = Vec::new();
    let mut weight_sum = 0.0;
    for (index, component) in list.value.iter().enumerate() {
        let field = |name: &str| format!("scoring_components[{index}].{name}");
        let name = match &component.name {
            Some(name) if !name.value.is_empty() => name.value.clone(),
            _ => {
                problems.push(Problem::new(
                    field("name"),
                    "missing required field",
                    at(list),
                ));
                continue;
            }
        };
        let weight = match &component.weight {
            Some(weight) if weight.value >= 0.0 && weight.value.is_finite() => weight.value,
            Some(weight) => {
                problems.push(Problem::new(
                    field("weight"),
                    format!("must be a number ≥ 0, found {}", weight.value),
                    at(weight),
                ));
                continue;
            }
            None => {
                problems.push(Problem::new(
                    field("weight"),
                    "missing required field",
                    component.name.as_ref().and_then(at),
                ));
                continue;
            }
        };
        weight_sum += weight;
        let Some(check_value) = &component.check else {
            problems.push(Problem::new(
                field("check"),
                "missing required field",
                component.name.as_ref().and_then(at),
            ));
            continue;
        };
        let position = at(check_value);
        let Some(map) = check_value.value.as_object() else {
            problems.push(Problem::new(
                field("check"),
                format!(
                    "expected a map `{{type, ...}}`, found {}",
                    check::kind(&check_value.value)
                ),
                position,
            ));
            continue;
        };
        match check::parse_check(map) {
            Err(parameter_problems) => {
                for problem in parameter_problems {
                    let mut located = Problem::new(
                        field(&format!("check.{}", problem.parameter)),
                        problem.message,
                        position,
                    );
                    located.help = problem.help;
                    problems.push(located);
                }
            }
            Ok(check) => {
                let type_name = map.get("type").and_then(Value::as_str).unwrap_or_default();
                if NOT_YET_GRADED.contains(&type_name) {
                    problems.push(
                        Problem::new(field("check.type"), format!("`{type_name}` checks cannot be graded by this version of clawtest yet"), position)
                            .with_help("remove the component (and rebalance the weights) until the grader supports it; a task is never run with a check that would silently score 0"),
                    );
                }
                if let Some(service) = check_service(&check)
                    && catalogue.get(service).is_none()
                {
                    problems.push(unknown_service(
                        field("check.service"),
                        service,
                        catalogue,
                        position,
                    ));
                }
                if let Check::PatternMatch { pattern } = &check
                    && let Err(error) = regex::RegexBuilder::new(pattern)
                        .case_insensitive(true)
                        .build()
                {
                    problems.push(Problem::new(
                        field("check.pattern"),
                        format!("not a valid regular expression: {error}"),
                        position,
                    ));
                }
                components.push(Component {
                    name,
                    weight,
                    check,
                    line: position.map(|position| position.line),
                });
            }
        }
    }
    if !list.value.is_empty() && (weight_sum - 1.0).abs() > WEIGHT_TOLERANCE {
        problems.push(
            Problem::new(
                "scoring_components",
                format!(
                    "weights sum to {weight_sum:.3}; they must sum to 1.0 ± {WEIGHT_TOLERANCE}"
                ),
                at(list),
            )
            .with_help("scale the weights so that they add up to 1.0"),
        );
    }
    components
}

fn validate_safety(raw: &RawTask, tools: &[Tool], problems: &mut Vec<Problem>) -> Vec<Safety> {
    let Some(list) = &raw.safety_checks else {
        problems.push(
            Problem::new(
                "safety_checks",
                "missing: every task needs at least one safety check",
                Some(Position {
                    line: 1,
                    column: 1,
                    span: None,
                }),
            )
            .with_help("e.g. `safety_checks: [{type: tool_not_called, tool_name: delete_task}]`"),
        );
        return Vec::new();
    };
    if list.value.is_empty() {
        problems.push(Problem::new(
            "safety_checks",
            "needs at least one safety check",
            at(list),
        ));
    }
    let mut safety = Vec::new();
    for (index, entry) in list.value.iter().enumerate() {
        let position = at(entry);
        let Some(map) = entry.value.as_object() else {
            problems.push(Problem::new(
                format!("safety_checks[{index}]"),
                format!(
                    "expected a map `{{type, ...}}`, found {}",
                    check::kind(&entry.value)
                ),
                position,
            ));
            continue;
        };
        match check::parse_safety(map) {
            Ok(check) => {
                if let SafetyCheck::ToolNotCalled { tool_name, .. } = &check
                    && tool_name.is_empty()
                {
                    problems.push(Problem::new(
                        format!("safety_checks[{index}].tool_name"),
                        "must not be empty",
                        position,
                    ));
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
                        position,
                    );
                    located.help = problem.help;
                    problems.push(located);
                }
            }
        }
    }
    let _ = tools; // forbidding an offered tool is allowed on purpose: the "dangerous button" pattern.
    safety
}

fn validate_files(raw: &RawTask, folder: &Path, problems: &mut Vec<Problem>) -> Vec<FileCopy> {
    let mut files = Vec::new();
    for (index, entry) in raw.files.iter().flatten().enumerate() {
        let position = at(entry);
        let field = |name: &str| format!("files[{index}].{name}");
        let (Some(source), Some(target)) = (&entry.value.source, &entry.value.target) else {
            problems.push(Problem::new(field("source"), "each file needs `source` (relative to the task's folder) and `target` (under /workspace)", position));
            continue;
        };
        let relative_source = Path::new(source);
        if relative_source.is_absolute() || escapes(relative_source) {
            problems.push(Problem::new(
                field("source"),
                format!("`{source}` must stay inside the task's folder"),
                position,
            ));
            continue;
        }
        let absolute_source = folder.join(relative_source);
        if !absolute_source.is_file() {
            problems.push(Problem::new(
                field("source"),
                format!("`{}` does not exist", absolute_source.display()),
                position,
            ));
            continue;
        }
        let target_path = Path::new(target);
        let inside = target_path
            .strip_prefix("/workspace")
            .map(Path::to_path_buf)
            .unwrap_or_else(|_| target_path.to_path_buf());
        if inside.is_absolute() || escapes(&inside) || inside.as_os_str().is_empty() {
            problems.push(Problem::new(
                field("target"),
                format!("`{target}` must be a file under /workspace"),
                position,
            ));
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
