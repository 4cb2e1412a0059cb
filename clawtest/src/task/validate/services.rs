//! Services, tools and how they fit together: task-local service definitions, tools on real
//! routes with canonical names (checks 6–10: known services, real endpoints, canonical action
//! names, cross-service tools, action-name collisions).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use serde_saphyr::Spanned;

use super::{Findings, LocatedCheck, at, check_service, parameter_at, suggestion, unknown_service};
use crate::method::Method;
use crate::services::{Catalogue, ServiceDescription};
use crate::task::Tool;
use crate::task::check;
use crate::task::error::{Position, Problem};
use crate::task::raw::{Node, RawTask, RawTool};

/// `services:`: task-local definitions (maps in the services description format) and names of
/// catalogue services the task declares. Returns the definitions and every declared name with
/// where it was written.
pub(super) fn validate_services(
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
                        // serde names an unknown key but not where it is: find it in the tree.
                        let message = error.to_string();
                        let place = message
                            .strip_prefix("unknown field `")
                            .and_then(|rest| rest.split('`').next())
                            .and_then(|key| key_named(entry, key))
                            .or(position);
                        findings.error(
                                Problem::new(
                                    field,
                                    format!("not a valid service description: {message}"),
                                    place,
                                )
                                .with_help("a task-local service has `name`, `collections` and `routes` (see the services description format)"),
                            );
                        continue;
                    }
                };
                if let Err(message) = crate::services::catalogue::check(&description) {
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

pub(super) fn validate_tools(
    raw: &RawTask,
    catalogue: &Catalogue,
    findings: &mut Findings,
) -> Vec<Tool> {
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
        let Some(method) = tool_method(tool, &field("method"), findings) else {
            continue;
        };
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
                // A route answers one method: any other gets 405, so the agent could never
                // use the tool.
                Some(route) if route.method != method => findings.error(
                    Problem::new(
                        field("method"),
                        format!("`{endpoint}` answers {}, not {method}", route.method),
                        tool.method.as_ref().map_or(position, at),
                    )
                    .with_help(format!("write `method: {}`", route.method)),
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

/// The tool's `method` (default POST); `None`, with an error, when it names no method.
fn tool_method(tool: &RawTool, field: &str, findings: &mut Findings) -> Option<Method> {
    let Some(text) = &tool.method else {
        return Some(Method::Post);
    };
    let method = Method::from_name(&text.value);
    if method.is_none() {
        findings.error(
            Problem::new(
                field,
                format!("`{}` is not an HTTP method", text.value),
                at(text),
            )
            .with_help(format!("write {} (POST when left out)", Method::choices())),
        );
    }
    method
}

/// Checks 6, 9 and 10: every service a check names is one the task uses; a task that declares
/// several services offers tools of at least two; no action name belongs to two of its services.
pub(super) fn validate_task_services(
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
            // Point at the second tool registered under the name, else at the declaration of
            // the later of the services, else at the services or tools list.
            let second_tool = raw
                .tools
                .iter()
                .flatten()
                .filter(|entry| {
                    entry
                        .value
                        .name
                        .as_ref()
                        .is_some_and(|name| name.value == action)
                })
                .nth(1)
                .and_then(at);
            let later_declaration = declared
                .iter()
                .filter(|(name, _)| services.contains(&name.as_str()))
                .filter_map(|(_, position)| *position)
                .max_by_key(|position| (position.line, position.column));
            let position = second_tool
                .or(later_declaration)
                .or_else(|| raw.services.as_ref().and_then(at))
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

/// Where the first map key named `name` under `node` was written.
fn key_named(node: &Spanned<Node>, name: &str) -> Option<Position> {
    match &node.value {
        Node::Scalar(_) => None,
        Node::List(items) => items.iter().find_map(|item| key_named(item, name)),
        Node::Map(entries) => entries.iter().find_map(|(key, value)| {
            if key.value == name {
                at(key)
            } else {
                key_named(value, name)
            }
        }),
    }
}
