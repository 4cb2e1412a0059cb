//! A check's parameter problems, located at the value they are about; a missing parameter
//! that was most likely written under another name gets help saying which key to rename.

use serde_json::Value;
use serde_saphyr::Spanned;

use super::{Findings, parameter_at};
use crate::task::check;
use crate::task::error::Problem;
use crate::task::raw::Node;

/// Locates a check's parameter problems. A required parameter that is missing while the check
/// has a key its type does not read is most often that parameter under another name (`tool:`
/// for `action:`, `contain:` for `contains:`, an alias of another check type): the help says
/// which key to rename.
pub(super) fn report_parameter_problems(
    field: &str,
    node: &Spanned<Node>,
    type_name: &str,
    problems: Vec<check::ParameterProblem>,
    findings: &mut Findings,
) {
    let known = check::known_parameters(type_name);
    let unread: Vec<(&str, Value)> = match &node.value {
        Node::Map(entries) if !known.is_empty() => entries
            .iter()
            .filter(|(key, _)| key.value != "type" && !known.contains(&key.value.as_str()))
            .map(|(key, value)| (key.value.as_str(), value.value.to_json()))
            .collect(),
        _ => Vec::new(),
    };
    let missing = problems.iter().filter(|problem| problem.missing).count();
    for problem in problems {
        let renamed = if problem.missing && problem.parameter != "type" {
            let parameter = problem.parameter.as_str();
            unread
                .iter()
                .find(|(key, _)| looks_renamed(key, parameter))
                .or(match (unread.as_slice(), missing) {
                    ([only], 1) => Some(only),
                    _ => None,
                })
                .map(|(key, value)| {
                    format!(
                        "`{type_name}` reads `{parameter}`, not `{key}`: write `{parameter}: {}`",
                        inline(value)
                    )
                })
        } else {
            None
        };
        let mut located = Problem::new(
            format!("{field}.{}", problem.parameter),
            problem.message,
            parameter_at(node, &problem.parameter),
        );
        located.help = renamed.or(problem.help);
        findings.error(located);
    }
}

/// Whether `key` reads as `parameter` written another way: a typo (`contain`), a shortening
/// (`tool` for `tool_name`) or a spelling out (`command` for `cmd`).
fn looks_renamed(key: &str, parameter: &str) -> bool {
    let spelled_out = || {
        let mut rest = key.chars();
        key.chars().next() == parameter.chars().next()
            && parameter
                .chars()
                .all(|wanted| rest.any(|found| found == wanted))
    };
    check::nearest(key, &[parameter]).is_some()
        || (key.len() >= 3 && parameter.starts_with(key))
        || spelled_out()
}

/// A value as it could be written after `key: ` in a flow map.
fn inline(value: &Value) -> String {
    match value {
        Value::String(text)
            if !text.is_empty()
                && text
                    .chars()
                    .all(|c| c.is_alphanumeric() || " _-./".contains(c))
                && !text.starts_with([' ', '-'])
                && !text.ends_with(' ')
                // Text that YAML would read as a number, boolean or null keeps its quotes.
                && text.parse::<f64>().is_err()
                && !["true", "false", "null", "yes", "no", "on", "off"]
                    .contains(&text.to_ascii_lowercase().as_str()) =>
        {
            text.clone()
        }
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(inline).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(entries) => format!(
            "{{{}}}",
            entries
                .iter()
                .map(|(key, value)| format!("{key}: {}", inline(value)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}
