//! Owns the tools: parsing the tools file (OpenAI and ClawEnvKit shapes), the OpenAI-shaped
//! definitions sent to the model, and executing a tool call as an HTTP request against the mock
//! services, turning whatever happens into the text the model sees as the tool result.

use std::time::Duration;

use serde_json::{Map, Value, json};
use ureq::http;

/// A tool call must not stall the run; the services are local mocks, so 10 s is generous.
const TOOL_CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// One tool from the tools file.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    pub name: String,
    pub description: String,
    /// JSON Schema object describing the arguments.
    pub parameters: Value,
    /// Path appended to the services URL, e.g. `/todo/tasks`.
    pub endpoint: String,
    /// Upper-case HTTP method, e.g. `POST`.
    pub method: String,
    /// ClawEnvKit's `port` (its `eval-tools.json`): the tool is then called as its plugin
    /// calls it, `http://127.0.0.1:{port}{endpoint}`, the endpoint holding any path the
    /// services are served under.
    pub port: Option<u16>,
    /// A workspace tool (`"workspace": true`, see [`crate::workspace`]): run by the agent
    /// itself, not over HTTP; `endpoint` is empty.
    pub workspace: bool,
}

impl Tool {
    /// The `{"type":"function","function":{...}}` entry for the chat-completions request; the
    /// execution keys (`endpoint`, `method`) stay private to the agent.
    pub fn openai_definition(&self) -> Value {
        json!({
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            }
        })
    }
}

/// Parses the tools file: a JSON array of entries that carry the OpenAI `function` object, the
/// ClawEnvKit top-level keys, or both (the `function` object wins).
pub fn parse_tools(text: &str) -> Result<Vec<Tool>, String> {
    let document: Value =
        serde_json::from_str(text).map_err(|error| format!("not valid JSON: {error}"))?;
    let Value::Array(entries) = document else {
        return Err("expected a JSON array of tools".to_owned());
    };
    let mut tools: Vec<Tool> = Vec::with_capacity(entries.len());
    for (index, entry) in entries.iter().enumerate() {
        let tool = parse_entry(entry).map_err(|error| format!("tool #{index}: {error}"))?;
        // Two tools with one name would make the model's choice ambiguous to execute.
        if tools.iter().any(|existing| existing.name == tool.name) {
            return Err(format!("tool #{index}: duplicate name {:?}", tool.name));
        }
        tools.push(tool);
    }
    Ok(tools)
}

fn parse_entry(entry: &Value) -> Result<Tool, String> {
    let Value::Object(top) = entry else {
        return Err("expected a JSON object".to_owned());
    };
    let function = top.get("function").and_then(Value::as_object);
    // Prefer the OpenAI `function` object, fall back to ClawEnvKit's top-level keys.
    let field = |key: &str| {
        function
            .and_then(|function| function.get(key))
            .or_else(|| top.get(key))
    };

    let name = match field("name") {
        Some(Value::String(name)) if !name.trim().is_empty() => name.clone(),
        _ => return Err("missing a non-empty string \"name\"".to_owned()),
    };
    let description = match field("description") {
        Some(Value::String(description)) => description.clone(),
        None | Some(Value::Null) => String::new(),
        Some(_) => return Err(format!("{name}: \"description\" must be a string")),
    };
    let parameters = parameters_schema(
        function
            .and_then(|function| function.get("parameters"))
            .or_else(|| top.get("parameters")),
        top.get("required"),
    )
    .map_err(|error| format!("{name}: {error}"))?;

    if top.get("workspace") == Some(&Value::Bool(true)) {
        if !crate::workspace::NAMES.contains(&name.as_str()) {
            return Err(format!(
                "{name}: not a workspace tool (they are {})",
                crate::workspace::NAMES.join(", ")
            ));
        }
        return Ok(Tool {
            name,
            description,
            parameters,
            endpoint: String::new(),
            method: "WORKSPACE".to_owned(),
            port: None,
            workspace: true,
        });
    }
    let endpoint = match top.get("endpoint") {
        Some(Value::String(endpoint)) if !endpoint.trim().is_empty() => endpoint.clone(),
        _ => {
            return Err(format!(
                "{name}: missing a non-empty string \"endpoint\" (needed to execute the tool)"
            ));
        }
    };
    let method = match top.get("method") {
        None | Some(Value::Null) => "POST".to_owned(),
        Some(Value::String(method)) => {
            let method = method.trim().to_ascii_uppercase();
            http::Method::from_bytes(method.as_bytes())
                .map_err(|_| format!("{name}: invalid HTTP method {method:?}"))?;
            method
        }
        Some(_) => return Err(format!("{name}: \"method\" must be a string")),
    };

    let port = match top.get("port") {
        None | Some(Value::Null) => None,
        Some(port) => Some(
            port.as_u64()
                .and_then(|port| u16::try_from(port).ok())
                .ok_or_else(|| format!("{name}: \"port\" must be a port number"))?,
        ),
    };

    Ok(Tool {
        name,
        description,
        parameters,
        endpoint,
        method,
        port,
        workspace: false,
    })
}

/// Normalises the parameters into a JSON Schema object. ClawEnvKit may give the bare properties
/// map with a sibling top-level `required` list; the model API needs a full object schema.
fn parameters_schema(
    parameters: Option<&Value>,
    required: Option<&Value>,
) -> Result<Value, String> {
    match parameters {
        None | Some(Value::Null) => Ok(json!({"type": "object", "properties": {}})),
        Some(Value::Object(schema)) if schema.contains_key("type") => {
            Ok(Value::Object(schema.clone()))
        }
        Some(Value::Object(properties)) => {
            let mut schema = Map::new();
            schema.insert("type".to_owned(), json!("object"));
            schema.insert("properties".to_owned(), Value::Object(properties.clone()));
            if let Some(required @ Value::Array(_)) = required {
                schema.insert("required".to_owned(), required.clone());
            }
            Ok(Value::Object(schema))
        }
        Some(_) => Err("\"parameters\" must be a JSON object".to_owned()),
    }
}

/// The arguments to send, plus a note for the model when its arguments were unusable.
#[derive(Debug, Clone, PartialEq)]
pub struct Arguments {
    pub body: Value,
    pub problem: Option<String>,
}

/// Turns the model's `function.arguments` (normally a JSON-encoded string) into a JSON object.
/// Anything unusable becomes `{}` with a note, so the model learns why the call misbehaved.
pub fn parse_arguments(raw: Option<&Value>) -> Arguments {
    let fallback = |problem: String| Arguments {
        body: json!({}),
        problem: Some(problem),
    };
    match raw {
        // Some gateways send the arguments already decoded.
        Some(Value::Object(object)) => Arguments {
            body: Value::Object(object.clone()),
            problem: None,
        },
        Some(Value::String(text)) if text.trim().is_empty() => {
            fallback("the arguments were empty".to_owned())
        }
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(body @ Value::Object(_)) => Arguments {
                body,
                problem: None,
            },
            Ok(_) => fallback("the arguments were JSON but not an object".to_owned()),
            Err(error) => fallback(format!("the arguments were not valid JSON ({error})")),
        },
        None | Some(Value::Null) => fallback("the arguments were missing".to_owned()),
        Some(_) => fallback("the arguments were neither a JSON string nor an object".to_owned()),
    }
}

/// The longest wait before a retry. The services' `Retry-After: 2` is honoured up to this:
/// the mock services have no real rate limit to wait out, and a trial's time is the suite's.
pub const RETRY_WAIT_CAP: Duration = Duration::from_millis(200);

/// Whether an answer's status is worth trying again: rate limited, or a server error.
pub fn is_transient(status: u16) -> bool {
    status == 429 || (500..600).contains(&status)
}

/// How long to wait before retry `attempt` (from 1): the answer's `Retry-After` seconds,
/// else 50 ms doubled each attempt, never more than [`RETRY_WAIT_CAP`].
pub fn retry_wait(retry_after: Option<&str>, attempt: u32) -> Duration {
    let asked = retry_after
        .and_then(|value| value.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or_else(|| Duration::from_millis(50u64.saturating_mul(1 << attempt.min(8))));
    asked.min(RETRY_WAIT_CAP)
}

/// Executes tool calls against the mock services.
pub struct ToolRunner {
    http: ureq::Agent,
    services_url: String,
    retries: u32,
}

impl ToolRunner {
    /// A runner that tries a call answered 429 or 5xx again up to `retries` times.
    pub fn new(services_url: &str, retries: u32) -> ToolRunner {
        ToolRunner {
            // A 4xx/5xx is a result for the model to read, not a failure of the agent.
            http: crate::http::client(TOOL_CALL_TIMEOUT),
            services_url: services_url.trim_end_matches('/').to_owned(),
            retries,
        }
    }

    /// The URL a tool's requests go to.
    pub fn url_for(&self, tool: &Tool) -> String {
        if let Some(port) = tool.port {
            return format!("http://127.0.0.1:{port}{}", tool.endpoint);
        }
        if tool.endpoint.starts_with('/') {
            format!("{}{}", self.services_url, tool.endpoint)
        } else {
            format!("{}/{}", self.services_url, tool.endpoint)
        }
    }

    /// Sends `METHOD url` with the JSON arguments as the body and returns the tool result text:
    /// the response body, prefixed with `HTTP <status>: ` unless the status is 2xx, or
    /// `error: ...` when no response arrived. An answer of 429 or 5xx is tried again, up to the
    /// runner's retries, after [`retry_wait`]; only the last answer reaches the model. Never
    /// fails: the model decides what to do next.
    pub fn call(&self, tool: &Tool, arguments: &Value) -> String {
        let mut attempt = 0;
        loop {
            let (status, retry_after, text) = self.call_once(tool, arguments);
            match status {
                Some(status) if is_transient(status) && attempt < self.retries => {
                    attempt += 1;
                    let wait = retry_wait(retry_after.as_deref(), attempt);
                    eprintln!(
                        "{} answered HTTP {status}: retry {attempt} of {} in {} ms",
                        tool.name,
                        self.retries,
                        wait.as_millis()
                    );
                    std::thread::sleep(wait);
                }
                _ => return text,
            }
        }
    }

    /// One attempt: the status (when an answer came), its `Retry-After`, and the text for
    /// the model.
    fn call_once(&self, tool: &Tool, arguments: &Value) -> (Option<u16>, Option<String>, String) {
        let url = self.url_for(tool);
        let body = arguments.to_string().into_bytes();
        let request = http::Request::builder()
            .method(tool.method.as_str())
            .uri(url.as_str())
            .header("Content-Type", "application/json")
            .body(body);
        let request = match request {
            Ok(request) => request,
            Err(error) => {
                return (
                    None,
                    None,
                    format!("error: cannot build {} {url}: {error}", tool.method),
                );
            }
        };
        // `run` sends the body whatever the method, which a GET-with-arguments tool relies on.
        let mut response = match self.http.run(request) {
            Ok(response) => response,
            Err(error) => {
                return (
                    None,
                    None,
                    format!("error: {} {url} failed: {error}", tool.method),
                );
            }
        };
        let status = response.status();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|value| value.to_str().ok())
            .map(str::to_string);
        let text = match response.body_mut().read_to_string() {
            Ok(text) => text,
            Err(error) => {
                return (
                    Some(status.as_u16()),
                    retry_after,
                    format!(
                        "error: {} {url} answered HTTP {} but its body could not be read: {error}",
                        tool.method,
                        status.as_u16()
                    ),
                );
            }
        };
        let text = if status.is_success() {
            text
        } else {
            format!("HTTP {}: {text}", status.as_u16())
        };
        (Some(status.as_u16()), retry_after, text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn function_object_wins_and_extra_keys_are_stripped() {
        let tools = parse_tools(
            r#"[{"type":"function",
                 "function":{"name":"list_tasks","description":"List.","parameters":{"type":"object","properties":{"status":{"type":"string"}}}},
                 "name":"ignored","description":"ignored","endpoint":"/todo/tasks","method":"get",
                 "parameters":{"ignored":{}},"required":["ignored"]}]"#,
        )
        .expect("tools");
        assert_eq!(tools.len(), 1);
        let tool = &tools[0];
        assert_eq!(tool.name, "list_tasks");
        assert_eq!(tool.method, "GET");
        assert_eq!(tool.endpoint, "/todo/tasks");
        assert_eq!(
            tool.openai_definition(),
            json!({"type":"function","function":{"name":"list_tasks","description":"List.",
                "parameters":{"type":"object","properties":{"status":{"type":"string"}}}}})
        );
    }

    #[test]
    fn top_level_keys_are_used_and_bare_properties_become_a_schema() {
        let tools = parse_tools(
            r#"[{"name":"create_task","description":"Create.","endpoint":"/todo/create",
                 "parameters":{"title":{"type":"string"}},"required":["title"]}]"#,
        )
        .expect("tools");
        let tool = &tools[0];
        assert_eq!(tool.method, "POST");
        assert_eq!(
            tool.parameters,
            json!({"type":"object","properties":{"title":{"type":"string"}},"required":["title"]})
        );
    }

    #[test]
    fn invalid_files_are_rejected_with_a_reason() {
        assert!(parse_tools("{}").unwrap_err().contains("array"));
        assert!(parse_tools("not json").unwrap_err().contains("JSON"));
        assert!(
            parse_tools(r#"[{"name":"x"}]"#)
                .unwrap_err()
                .contains("endpoint")
        );
        assert!(
            parse_tools(r#"[{"endpoint":"/x"}]"#)
                .unwrap_err()
                .contains("name")
        );
        let duplicate = r#"[{"name":"x","endpoint":"/a"},{"name":"x","endpoint":"/b"}]"#;
        assert!(parse_tools(duplicate).unwrap_err().contains("duplicate"));
        let bad_method = r#"[{"name":"x","endpoint":"/a","method":"NO SPACES"}]"#;
        assert!(parse_tools(bad_method).unwrap_err().contains("method"));
    }

    #[test]
    fn arguments_fall_back_to_an_empty_object_with_a_note() {
        let good = parse_arguments(Some(&json!("{\"a\":1}")));
        assert_eq!(good.body, json!({"a": 1}));
        assert_eq!(good.problem, None);
        let decoded = parse_arguments(Some(&json!({"b": 2})));
        assert_eq!(decoded.body, json!({"b": 2}));
        for raw in [
            json!(""),
            json!("{oops"),
            json!("[1]"),
            json!(3),
            Value::Null,
        ] {
            let arguments = parse_arguments(Some(&raw));
            assert_eq!(arguments.body, json!({}), "{raw}");
            assert!(arguments.problem.is_some(), "{raw}");
        }
        assert!(parse_arguments(None).problem.is_some());
    }

    #[test]
    fn url_joins_without_doubling_slashes() {
        let runner = ToolRunner::new("http://127.0.0.1:9100/", 0);
        let mut tool =
            parse_tools(r#"[{"name":"x","endpoint":"/todo/tasks"}]"#).expect("tools")[0].clone();
        assert_eq!(runner.url_for(&tool), "http://127.0.0.1:9100/todo/tasks");
        tool.endpoint = "todo/tasks".to_owned();
        assert_eq!(runner.url_for(&tool), "http://127.0.0.1:9100/todo/tasks");
    }

    /// An `eval-tools.json` entry is called as ClawEnvKit's plugin calls it: the port, then
    /// the endpoint, which holds the services' per-trial path.
    #[test]
    fn a_tool_with_a_port_is_called_on_that_port() {
        let runner = ToolRunner::new("http://127.0.0.1:4123/t/abc", 0);
        let tools = parse_tools(r#"[{"name":"x","endpoint":"/t/abc/todo/tasks","port":4123}]"#)
            .expect("tools");
        assert_eq!(
            runner.url_for(&tools[0]),
            "http://127.0.0.1:4123/t/abc/todo/tasks"
        );
        assert!(parse_tools(r#"[{"name":"x","endpoint":"/a","port":"x"}]"#).is_err());
    }
}
