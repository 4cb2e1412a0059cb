//! `oracle:` (a clawtest extension): a correct solution of the task, written by its author,
//! that `validate --feasibility` and `run --oracle` play instead of an agent. Each part may be
//! left out and is then derived from the checks (`crate::oracle`).

use serde_json::Value;

use super::{Findings, at, suggestion};
use crate::services::Catalogue;
use crate::task::check::workspace_relative;
use crate::task::error::Problem;
use crate::task::raw::{Node, RawTask};
use crate::task::{Oracle, OracleCall, OracleFile, Tool};

const KEYS: [&str; 3] = ["calls", "answer", "files"];

/// Reads `oracle: {calls?: [{tool, arguments?}], answer?, files?: [{path, content}]}`.
pub(super) fn validate_oracle(
    raw: &RawTask,
    tools: &[Tool],
    catalogue: &Catalogue,
    findings: &mut Findings,
) -> Option<Oracle> {
    let block = raw.oracle.as_ref()?;
    let Node::Map(entries) = &block.value else {
        findings.error(
            Problem::new(
                "oracle",
                "expected a map `{calls?, answer?, files?}`",
                at(block),
            )
            .with_help(
                "e.g. `oracle: {calls: [{tool: list_tasks, arguments: {}}], answer: \"…\"}`",
            ),
        );
        return None;
    };
    let before = findings.errors.len();
    let mut oracle = Oracle {
        calls: None,
        answer: None,
        files: Vec::new(),
        line: at(block).map(|position| position.line),
    };
    for (key, value) in entries {
        let field = format!("oracle.{}", key.value);
        match key.value.as_str() {
            "calls" => oracle.calls = calls(value, tools, catalogue, &field, findings),
            "answer" => match &value.value {
                Node::Scalar(Value::String(text)) => oracle.answer = Some(text.clone()),
                _ => findings.error(
                    Problem::new(field, "expected the final answer as text", at(value))
                        .with_help("e.g. `answer: \"Raised the OpenSSL task to high.\"`"),
                ),
            },
            "files" => oracle.files = files(value, &field, findings),
            other => findings.error(
                Problem::new(field, "unknown key", at(key)).with_help(suggestion(
                    other,
                    &KEYS,
                    "oracle has",
                )),
            ),
        }
    }
    (findings.errors.len() == before).then_some(oracle)
}

fn calls(
    value: &serde_saphyr::Spanned<Node>,
    tools: &[Tool],
    catalogue: &Catalogue,
    field: &str,
    findings: &mut Findings,
) -> Option<Vec<OracleCall>> {
    let Node::List(items) = &value.value else {
        findings.error(
            Problem::new(field, "expected a list of `{tool, arguments}`", at(value)).with_help(
                "e.g. `calls: [{tool: update_task, arguments: {task_id: t1, priority: high}}]`",
            ),
        );
        return None;
    };
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
    let mut calls = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let field = format!("{field}[{index}]");
        let Node::Map(entries) = &item.value else {
            findings.error(Problem::new(
                &field,
                "expected `{tool, arguments}`",
                at(item),
            ));
            continue;
        };
        let mut tool = None;
        let mut arguments = serde_json::Map::new();
        let mut arguments_node = None;
        for (key, value) in entries {
            match (key.value.as_str(), value.value.to_json()) {
                ("tool", Value::String(name)) if names.contains(&name.as_str()) => {
                    tool = Some(name);
                }
                ("tool", Value::String(name)) => findings.error(
                    Problem::new(
                        format!("{field}.tool"),
                        format!("`{name}` is not one of the task's tools"),
                        at(value),
                    )
                    .with_help(suggestion(
                        &name,
                        &names,
                        "the task's tools are",
                    )),
                ),
                ("arguments", Value::Object(map)) => {
                    arguments = map;
                    arguments_node = Some(value);
                }
                ("arguments", Value::Null) => {}
                ("tool" | "arguments", _) => findings.error(Problem::new(
                    format!("{field}.{}", key.value),
                    if key.value == "tool" {
                        "expected a tool's name"
                    } else {
                        "expected a map of the call's arguments"
                    },
                    at(value),
                )),
                (other, _) => findings.error(
                    Problem::new(format!("{field}.{other}"), "unknown key", at(key))
                        .with_help(suggestion(other, &["tool", "arguments"], "a call has")),
                ),
            }
        }
        if let (Some(name), Some(node)) = (&tool, arguments_node) {
            let tool = tools.iter().find(|tool| &tool.name == name);
            if let Some(tool) = tool {
                unknown_arguments(tool, node, catalogue, &field, findings);
            }
        }
        match tool {
            Some(tool) => calls.push(OracleCall {
                tool,
                arguments,
                line: at(item).map(|position| position.line),
            }),
            None if !entries.iter().any(|(key, _)| key.value == "tool") => findings.error(
                Problem::new(format!("{field}.tool"), "missing required field", at(item))
                    .with_help("name the tool the solution calls: `tool: list_tasks`"),
            ),
            None => {}
        }
    }
    Some(calls)
}

fn files(
    value: &serde_saphyr::Spanned<Node>,
    field: &str,
    findings: &mut Findings,
) -> Vec<OracleFile> {
    let Node::List(items) = &value.value else {
        findings.error(
            Problem::new(field, "expected a list of `{path, content}`", at(value))
                .with_help("e.g. `files: [{path: /workspace/report.md, content: \"# Report\"}]`"),
        );
        return Vec::new();
    };
    let mut files = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let field = format!("{field}[{index}]");
        let json = item.value.to_json();
        let path = json.get("path").and_then(Value::as_str);
        let content = json.get("content").and_then(Value::as_str);
        let extra = json
            .as_object()
            .into_iter()
            .flat_map(|map| map.keys())
            .find(|key| !["path", "content"].contains(&key.as_str()));
        match (path.and_then(workspace_relative), content, extra) {
            (Some(path), Some(content), None) => files.push(OracleFile {
                path,
                content: content.to_owned(),
            }),
            (_, _, Some(extra)) => findings.error(
                Problem::new(format!("{field}.{extra}"), "unknown key", at(item))
                    .with_help("a file has `path` and `content`"),
            ),
            (None, _, _) => findings.error(
                Problem::new(
                    format!("{field}.path"),
                    "expected a file under /workspace",
                    at(item),
                )
                .with_help("e.g. `path: /workspace/report.md`"),
            ),
            (_, None, _) => findings.error(
                Problem::new(
                    format!("{field}.content"),
                    "expected the file's text",
                    at(item),
                )
                .with_help("e.g. `content: \"# Report\"`"),
            ),
        }
    }
    files
}

/// An argument of an oracle call that its route does not take: the service drops it (only
/// declared parameters reach the handler and the audit), so the solution does not do what it
/// says.
fn unknown_arguments(
    tool: &Tool,
    arguments: &serde_saphyr::Spanned<Node>,
    catalogue: &Catalogue,
    field: &str,
    findings: &mut Findings,
) {
    let Some(service) = catalogue.get(&tool.service) else {
        return;
    };
    let Some(route) = service.route(&tool.endpoint) else {
        return;
    };
    let parameters = route.parameter_names();
    let Node::Map(entries) = &arguments.value else {
        return;
    };
    for (key, _) in entries {
        if parameters.contains(&key.value.as_str()) {
            continue;
        }
        findings.error(
            Problem::new(
                format!("{field}.arguments.{}", key.value),
                format!(
                    "`{}` is not a parameter of `{}` (service `{}`): the service would drop it",
                    key.value, tool.name, tool.service
                ),
                at(key),
            )
            .with_help(format!(
                "{} (`cargo clawtest services {}` lists every route's parameters)",
                suggestion(
                    &key.value,
                    &parameters,
                    &format!("the parameters of `{}` are", tool.name)
                ),
                tool.service
            )),
        );
    }
}
