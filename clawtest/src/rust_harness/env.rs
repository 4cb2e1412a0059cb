//! What a Rust agent sees of its trial: [`Env`] (the prompt, the tools, the limits, the URLs of
//! the trial's services and model gateway) and [`ToolClient`], which executes a tool call as
//! `METHOD {services_url}{endpoint}` with the JSON arguments as the body, so that an in-process
//! agent's calls are audited exactly like an external agent's.

use serde_json::{Value, json};

use super::client::{self, HttpError, JsonResponse};
use crate::method::Method;

/// One trial's environment, handed to the harness function.
#[derive(Debug, Clone)]
pub struct Env {
    task_id: String,
    trial: u32,
    prompt: String,
    tools: Vec<ToolDefinition>,
    services_url: String,
    gateway_url: String,
    max_turns: u32,
}

/// One tool of the task.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDefinition {
    /// The name a model calls the tool by (the task's `tools[].name`, as in tools.json).
    pub name: String,
    /// What the tool does, for the model (the task's words, else the service route's).
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: Value,
    /// Path under the services URL, e.g. `/todo/tasks`.
    pub endpoint: String,
    /// The HTTP method.
    pub method: Method,
}

impl ToolDefinition {
    /// The `{"type": "function", "function": {...}}` entry of a chat-completions request.
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

/// What a tool call answered.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The HTTP status the service answered with.
    pub status: u16,
    /// The response body.
    pub text: String,
}

impl ToolResult {
    /// The text a model should see: the body, prefixed with `HTTP <status>: ` unless 2xx.
    pub fn for_model(&self) -> String {
        if (200..300).contains(&self.status) {
            self.text.clone()
        } else {
            format!("HTTP {}: {}", self.status, self.text)
        }
    }
}

/// Why a tool call got no answer.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ToolError {
    /// The task has no tool of that name.
    #[error("unknown tool `{name}`; the task's tools are: {}", available.join(", "))]
    UnknownTool {
        /// The name asked for.
        name: String,
        /// The names of the task's tools.
        available: Vec<String>,
    },
    /// The services could not be reached.
    #[error(transparent)]
    Http(#[from] HttpError),
}

/// Calls the task's tools through the trial's services.
#[derive(Debug, Clone)]
pub struct ToolClient {
    services_url: String,
    tools: Vec<ToolDefinition>,
}

impl ToolClient {
    /// Calls tool `name` with `arguments` (a JSON object). An HTTP error status is a result,
    /// for the agent to read; only a missing tool or a failed connection is an error.
    pub async fn call(&self, name: &str, arguments: &Value) -> Result<ToolResult, ToolError> {
        let Some(tool) = self.tools.iter().find(|tool| tool.name == name) else {
            return Err(ToolError::UnknownTool {
                name: name.to_string(),
                available: self.tools.iter().map(|tool| tool.name.clone()).collect(),
            });
        };
        let separator = if tool.endpoint.starts_with('/') {
            ""
        } else {
            "/"
        };
        let url = format!("{}{separator}{}", self.services_url, tool.endpoint);
        let JsonResponse { status, text } = client::send(tool.method, &url, arguments).await?;
        Ok(ToolResult { status, text })
    }
}

impl Env {
    /// Builds the environment of one trial; `tools_json` is the text of `tools.json`.
    pub fn new(
        task_id: impl Into<String>,
        trial: u32,
        prompt: impl Into<String>,
        tools_json: &str,
        services_url: impl Into<String>,
        gateway_url: impl Into<String>,
        max_turns: u32,
    ) -> Result<Env, String> {
        Ok(Env {
            task_id: task_id.into(),
            trial,
            prompt: prompt.into(),
            tools: parse_tools(tools_json)?,
            services_url: services_url.into().trim_end_matches('/').to_string(),
            gateway_url: gateway_url.into().trim_end_matches('/').to_string(),
            max_turns,
        })
    }

    /// The task's prompt: what the user asks the agent to do.
    pub fn prompt(&self) -> &str {
        &self.prompt
    }

    /// The task's tools.
    pub fn tools(&self) -> &[ToolDefinition] {
        &self.tools
    }

    /// The tools as chat-completions `tools` entries.
    pub fn tool_definitions(&self) -> Vec<Value> {
        self.tools
            .iter()
            .map(ToolDefinition::openai_definition)
            .collect()
    }

    /// A client that executes tool calls against the trial's (audited) services.
    pub fn tool_client(&self) -> ToolClient {
        ToolClient {
            services_url: self.services_url.clone(),
            tools: self.tools.clone(),
        }
    }

    /// The OpenAI-compatible base URL of the trial's model gateway, ending in `/v1`.
    pub fn gateway_url(&self) -> String {
        format!("{}/v1", self.gateway_url)
    }

    /// The base URL of the trial's services.
    pub fn services_url(&self) -> &str {
        &self.services_url
    }

    /// The task's turn budget (`limits.max_turns`).
    pub fn max_turns(&self) -> u32 {
        self.max_turns
    }

    /// The task's id.
    pub fn task_id(&self) -> &str {
        &self.task_id
    }

    /// The 0-based trial index.
    pub fn trial(&self) -> u32 {
        self.trial
    }

    /// `POST {gateway}/v1/chat/completions` with `request`; the response body as JSON. A non-2xx
    /// answer (e.g. a cassette that has no answer for this request) is an error.
    pub async fn chat_completion(&self, request: &Value) -> Result<Value, HttpError> {
        let url = format!("{}/chat/completions", self.gateway_url());
        let response = client::send(Method::Post, &url, request).await?;
        if !response.is_success() {
            return Err(HttpError::Status {
                method: Method::Post,
                url,
                status: response.status,
                body: response.text,
            });
        }
        response.json().map_err(|_| HttpError::NotJson {
            method: Method::Post,
            url,
            status: response.status,
            body: response.text,
        })
    }
}

/// Reads the tools.json clawtest writes (see [`crate::surfaces::tools_json`]).
fn parse_tools(text: &str) -> Result<Vec<ToolDefinition>, String> {
    let value: Value =
        serde_json::from_str(text).map_err(|error| format!("tools.json is not JSON: {error}"))?;
    let Value::Array(entries) = value else {
        return Err("tools.json is not a JSON array".into());
    };
    entries
        .iter()
        .enumerate()
        .map(|(index, entry)| {
            let text = |key: &str| entry.get(key).and_then(Value::as_str).map(str::to_string);
            let name = text("name").ok_or_else(|| format!("tool #{index} has no name"))?;
            let endpoint =
                text("endpoint").ok_or_else(|| format!("tool `{name}` has no endpoint"))?;
            Ok(ToolDefinition {
                description: text("description").unwrap_or_default(),
                parameters: entry
                    .get("parameters")
                    .cloned()
                    .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
                method: match text("method") {
                    None => Method::Post,
                    Some(method) => Method::from_name(&method).ok_or_else(|| {
                        format!(
                            "tool `{name}` has method `{method}`: write {}",
                            Method::choices()
                        )
                    })?,
                },
                endpoint,
                name,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_json_becomes_tools() {
        let text = r#"[{"type": "function", "function": {"name": "list_tasks"}, "name": "list_tasks",
            "description": "List", "endpoint": "/todo/tasks", "method": "post",
            "parameters": {"type": "object", "properties": {"status": {"type": "string"}}}}]"#;
        let env = Env::new(
            "t",
            0,
            "do it",
            text,
            "http://127.0.0.1:1/",
            "http://127.0.0.1:2",
            5,
        )
        .unwrap();
        assert_eq!(env.tools().len(), 1);
        assert_eq!(env.tools()[0].method, Method::Post);
        assert_eq!(env.services_url(), "http://127.0.0.1:1");
        assert_eq!(env.gateway_url(), "http://127.0.0.1:2/v1");
        assert_eq!(
            env.tool_definitions()[0]["function"]["parameters"]["properties"]["status"]["type"],
            "string"
        );
    }

    #[test]
    fn a_tool_without_an_endpoint_is_refused() {
        let error = Env::new("t", 0, "", r#"[{"name": "x"}]"#, "", "", 1).unwrap_err();
        assert!(error.contains("`x` has no endpoint"), "{error}");
    }

    #[tokio::test]
    async fn an_unknown_tool_names_the_available_ones() {
        let text = r#"[{"name": "list_tasks", "endpoint": "/todo/tasks"}]"#;
        let env = Env::new("t", 0, "", text, "http://127.0.0.1:1", "", 1).unwrap();
        let error = env
            .tool_client()
            .call("delete_all", &json!({}))
            .await
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "unknown tool `delete_all`; the task's tools are: list_tasks"
        );
    }
}
