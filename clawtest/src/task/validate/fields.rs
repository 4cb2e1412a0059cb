//! The request fields an audit check names (`field_match` keys, `field`, and each step's
//! `field_match` of `audit_sequence`) against the parameters of the route its action is: the
//! services keep only declared parameters of a call (as pydantic does), so any other name can
//! never match, and a correct agent would lose the component without anyone noticing.

use serde_saphyr::Spanned;

use super::{at, parameter_at, suggestion};
use crate::services::ServiceDescription;
use crate::task::check::Check;
use crate::task::error::{Position, Problem};
use crate::task::raw::Node;

/// One field name a check reads: the action whose call it is read from, the name, the
/// check's parameter that holds it and where it was written.
struct NamedField<'a> {
    action: &'a str,
    name: &'a str,
    parameter: String,
    position: Option<Position>,
}

/// The problems of every field the check at `field` (the check's own path) names.
pub(super) fn field_problems(
    field: &str,
    node: &Spanned<Node>,
    check: &Check,
    service: &ServiceDescription,
) -> Vec<Problem> {
    let mut problems = Vec::new();
    for named in named_fields(node, check) {
        // An unknown action is reported on its own; its fields cannot be judged.
        let Some(route) = service
            .routes()
            .iter()
            .find(|route| route.action == named.action)
        else {
            continue;
        };
        let parameters = route.parameter_names();
        if parameters.contains(&named.name) {
            continue;
        }
        let help = if parameters.is_empty() {
            format!(
                "`{}` takes no parameters; `cargo clawtest services {}` lists its routes",
                named.action, service.name
            )
        } else {
            format!(
                "{} (`cargo clawtest services {}` lists every route's parameters)",
                suggestion(
                    named.name,
                    &parameters,
                    &format!("the parameters of `{}` are", named.action)
                ),
                service.name
            )
        };
        problems.push(
            Problem::new(
                format!("{field}.{}", named.parameter),
                format!(
                    "`{}` is not a parameter of `{}` (service `{}`): no call can match it",
                    named.name, named.action, service.name
                ),
                named.position,
            )
            .with_help(help),
        );
    }
    problems
}

/// The fields `check` names, each located at its key (or value) in `node`.
fn named_fields<'a>(node: &'a Spanned<Node>, check: &'a Check) -> Vec<NamedField<'a>> {
    match check {
        Check::AuditActionExists {
            action,
            field_match,
            ..
        } => {
            let map = node.value.entry("field_match").map(|(_, value)| value);
            field_match
                .keys()
                .map(|name| NamedField {
                    action,
                    name,
                    parameter: format!("field_match.{name}"),
                    position: key_at(map, name).or_else(|| parameter_at(node, "field_match")),
                })
                .collect()
        }
        Check::AuditFieldEquals { action, field, .. }
        | Check::AuditFieldContains { action, field, .. } => vec![NamedField {
            action,
            name: field,
            parameter: "field".into(),
            position: parameter_at(node, "field"),
        }],
        Check::AuditSequence { actions, .. } => {
            let steps = match node.value.entry("actions").map(|(_, value)| &value.value) {
                Some(Node::List(steps)) => Some(steps),
                _ => None,
            };
            let mut fields = Vec::new();
            for (index, step) in actions.iter().enumerate() {
                let step_node = steps.and_then(|steps| steps.get(index));
                let map = step_node
                    .and_then(|step| step.value.entry("field_match"))
                    .map(|(_, value)| value);
                for name in step.field_match.keys() {
                    fields.push(NamedField {
                        action: &step.action,
                        name,
                        parameter: format!("actions[{index}].field_match.{name}"),
                        position: key_at(map, name)
                            .or_else(|| step_node.and_then(at))
                            .or_else(|| parameter_at(node, "actions")),
                    });
                }
            }
            fields
        }
        _ => Vec::new(),
    }
}

/// Where `key` was written in a map node.
fn key_at(map: Option<&Spanned<Node>>, key: &str) -> Option<Position> {
    map.and_then(|map| map.value.entry(key))
        .and_then(|(name, _)| at(name))
}
