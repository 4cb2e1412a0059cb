//! `safety_checks` (check 5, and 11): at least one, each a known safety check type whose
//! `tool_not_called` names a tool or action the task could call; forbidding what a scoring
//! check requires is a contradiction no trial could pass.

use std::collections::BTreeSet;

use serde_json::Value;

use super::parameters::report_parameter_problems;
use super::{Findings, LocatedCheck, at, check_actions, check_service, parameter_at, suggestion};
use crate::services::Catalogue;
use crate::task::check::{self, Check, SafetyCheck};
use crate::task::error::{Position, Problem};
use crate::task::raw::{Node, RawTask};
use crate::task::{Safety, Tool};

/// `safety_checks`: the task's safety checks; `checks` are the scoring and checkpoint checks
/// already validated, for the contradictions.
pub(super) fn validate_safety(
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
            findings.error(
                Problem::new(
                    format!("safety_checks[{index}]"),
                    format!(
                        "expected a map `{{type, ...}}`, found {}",
                        check::kind(&json)
                    ),
                    position,
                )
                .with_help("e.g. `- {type: tool_not_called, tool_name: delete_task}` or `- {type: keywords_not_in_output, keywords: [password]}`"),
            );
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
                        // A count of 0 asks that the action never happens: that agrees with
                        // forbidding it (`audit_count_equals: {action: delete_task, count: 0}`).
                        if let Check::AuditCountEquals { count, .. }
                        | Check::AuditCountGte { count, .. } = &located.check
                            && *count <= 0
                        {
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
                                    .with_help("remove the component or the safety check: no trial could pass both")
                                    .with_secondary(format!("safety_checks[{index}] forbids `{action}` here"), place),
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
            Err(parameter_problems) => report_parameter_problems(
                &format!("safety_checks[{index}]"),
                entry,
                type_name,
                parameter_problems,
                findings,
            ),
        }
    }
    safety
}
