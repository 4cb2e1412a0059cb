//! One check map, of a scoring component or a checkpoint: its parameters located per value
//! (unread keys warned about, problems reported by [`super::parameters`]), and what every
//! check needs: a gradable type, a known service and action (check 8 for scoring actions),
//! the request fields it names among its route's parameters (`fields`), a valid regex ([`super::patterns`]), a SHA-256 digest.

use serde_json::Value;
use serde_saphyr::Spanned;

use super::fields::field_problems;
use super::parameters::report_parameter_problems;
use super::patterns::pattern_problem;
use super::{
    Findings, at, check_actions, check_service, parameter_at, suggestion, unknown_service,
};
use crate::services::Catalogue;
use crate::task::check::{self, Check};
use crate::task::error::Problem;
use crate::task::raw::Node;

/// Parses one check map (scoring component or checkpoint), reporting located problems, and
/// checks what every check needs: a gradable type, a known service and action, a valid regex.
pub(super) fn parse_located_check(
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
            report_parameter_problems(field, node, type_name, parameter_problems, findings);
            return None;
        }
    };
    if let Some(service) = check_service(&check) {
        match catalogue.get(service) {
            None => findings.error(unknown_service(
                format!("{field}.service"),
                service,
                catalogue,
                parameter_at(node, "service"),
            )),
            Some(description) => {
                for problem in field_problems(field, node, &check, description) {
                    findings.error(problem);
                }
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
            if let Some(problem) = pattern_problem(pattern) {
                findings.error(
                    Problem::new(
                        format!("{field}.pattern"),
                        problem.message,
                        parameter_at(node, "pattern"),
                    )
                    .with_help(problem.help),
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
