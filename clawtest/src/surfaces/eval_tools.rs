//! ClawEnvKit's tools file, `eval-tools.json`: the same tools as `tools.json`, in the shape
//! ClawEnvKit's entrypoint writes for its OpenClaw plugin (`extensions/clawenvkit-eval`) and
//! its MCP servers (`mcp_server/`), so a harness image built for ClawEnvKit runs unchanged:
//! one entry per tool, `{name, description, endpoint, method, port, parameters, required}`,
//! where `parameters` is the flat map of the request body's properties (ClawEnvKit's
//! OpenAPI `properties`) and `port` is the services' port on 127.0.0.1 as the harness sees it.
//! Where the services URL has a path (the process backend's per-trial `/t/TOKEN`), each
//! `endpoint` starts with it: ClawEnvKit's plugin calls `http://127.0.0.1:{port}{endpoint}`.

use serde_json::{Value, json};

/// The file name ClawEnvKit uses (`EVAL_TOOLS_FILE` defaults to `/tmp/eval-tools.json`).
pub const FILE_NAME: &str = "eval-tools.json";

/// ClawEnvKit's port when the services URL names none (its `PORT` default).
const DEFAULT_PORT: u16 = 9100;

/// `eval-tools.json` for the tools of a `tools.json` document (see [`super::tools_json`]),
/// served at `services_url` (`http://127.0.0.1:PORT`).
pub fn eval_tools(tools: &Value, services_url: &str) -> Value {
    let (port, path) = address_of(services_url);
    let entries: Vec<Value> = tools
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|tool| {
            let name = tool["name"].as_str()?;
            let endpoint = tool["endpoint"].as_str()?;
            Some(json!({
                "name": name,
                "description": tool["description"].as_str().unwrap_or_default(),
                "endpoint": format!("{path}{endpoint}"),
                // ClawEnvKit writes the method lower-cased; its plugin upper-cases it again.
                "method": tool["method"].as_str().unwrap_or("POST").to_lowercase(),
                "port": port,
                "parameters": match &tool["parameters"]["properties"] {
                    Value::Object(properties) => Value::Object(properties.clone()),
                    _ => json!({}),
                },
                "required": match &tool["parameters"]["required"] {
                    Value::Array(required) => Value::Array(required.clone()),
                    _ => json!([]),
                },
            }))
        })
        .collect();
    Value::Array(entries)
}

/// The port of `http://HOST:PORT[/PATH]` (else ClawEnvKit's default) and its path, without
/// a trailing `/` (empty when there is none).
fn address_of(services_url: &str) -> (u16, &str) {
    let rest = services_url
        .split_once("://")
        .map_or(services_url, |(_, rest)| rest);
    let (authority, path) = match rest.find('/') {
        Some(at) => (&rest[..at], rest[at..].trim_end_matches('/')),
        None => (rest, ""),
    };
    let port = authority
        .rsplit_once(':')
        .and_then(|(_, port)| port.parse().ok())
        .unwrap_or(DEFAULT_PORT);
    (port, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_services_path_leads_each_endpoint() {
        assert_eq!(address_of("http://127.0.0.1:4123/t/abc"), (4123, "/t/abc"));
        assert_eq!(address_of("http://127.0.0.1:9100"), (9100, ""));
        assert_eq!(address_of("http://127.0.0.1:9100/"), (9100, ""));
        let tools = json!([{"name": "list_tasks", "endpoint": "/todo/tasks", "method": "POST"}]);
        let entries = eval_tools(&tools, "http://127.0.0.1:4123/t/abc");
        assert_eq!(entries[0]["endpoint"], "/t/abc/todo/tasks");
        assert_eq!(entries[0]["port"], 4123);
    }

    #[test]
    fn entries_have_clawenvkits_flat_parameters_and_the_port() {
        let tools = json!([{
            "type": "function",
            "function": {"name": "create_task"},
            "name": "create_task",
            "description": "Create a task",
            "service": "todo",
            "endpoint": "/todo/tasks/create",
            "method": "POST",
            "parameters": {
                "type": "object",
                "properties": {
                    "title": {"type": "string", "description": "The title"},
                    "priority": {"type": "string", "default": "medium"},
                },
                "required": ["title"],
            },
            "required": ["title"],
        }]);
        assert_eq!(
            eval_tools(&tools, "http://127.0.0.1:41234"),
            json!([{
                "name": "create_task",
                "description": "Create a task",
                "endpoint": "/todo/tasks/create",
                "method": "post",
                "port": 41234,
                "parameters": {
                    "title": {"type": "string", "description": "The title"},
                    "priority": {"type": "string", "default": "medium"},
                },
                "required": ["title"],
            }])
        );
        assert_eq!(eval_tools(&json!([]), "http://127.0.0.1:9100"), json!([]));
    }

    #[test]
    fn the_port_comes_from_the_services_url() {
        assert_eq!(address_of("http://127.0.0.1:9100").0, 9100);
        assert_eq!(address_of("http://127.0.0.1:5000/").0, 5000);
        assert_eq!(address_of("http://localhost").0, DEFAULT_PORT);
    }
}
