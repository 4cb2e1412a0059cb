//! The second way to find tools: an MCP server (streamable HTTP, JSON answers) instead of the
//! tools file. `initialize`, then `tools/list` gives the tools the model is offered, and each
//! tool call becomes a `tools/call`; whatever happens is text for the model, as with HTTP tools.

use std::time::Duration;

use serde_json::{Value, json};

use crate::tools::Tool;

/// MCP answers come from local mocks; 10 s is generous, as for HTTP tools.
const TIMEOUT: Duration = Duration::from_secs(10);
/// The protocol revision this client speaks.
const PROTOCOL_VERSION: &str = "2025-06-18";

/// A connected MCP client.
pub struct McpClient {
    http: ureq::Agent,
    url: String,
    next_id: std::cell::Cell<u64>,
    retries: u32,
}

/// The `error` of a mock service's rate-limit and server-error answers, which an MCP tool
/// result carries as its text: a call that got one is tried again.
const TRANSIENT_ERRORS: [&str; 2] = ["rate_limit_exceeded", "internal_server_error"];

impl McpClient {
    /// Connects (`initialize` and the `initialized` notification) and returns the client and
    /// the server's tools.
    pub fn connect(url: &str, retries: u32) -> Result<(McpClient, Vec<Tool>), String> {
        let client = McpClient {
            http: crate::http::client(TIMEOUT),
            url: url.to_string(),
            next_id: std::cell::Cell::new(1),
            retries,
        };
        client.request(
            "initialize",
            json!({"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "reference-agent", "version": env!("CARGO_PKG_VERSION")}}),
        )?;
        client.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        let listed = client.request("tools/list", json!({}))?;
        let tools = listed["tools"]
            .as_array()
            .ok_or_else(|| format!("tools/list at {url} returned no tools"))?
            .iter()
            .filter_map(|tool| {
                Some(Tool {
                    name: tool["name"].as_str()?.to_string(),
                    description: tool["description"].as_str().unwrap_or_default().to_string(),
                    parameters: tool
                        .get("inputSchema")
                        .cloned()
                        .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
                    endpoint: String::new(),
                    port: None,
                    method: "MCP".into(),
                    workspace: false,
                })
            })
            .collect();
        Ok((client, tools))
    }

    /// Calls a tool; the result's text content, or `error: …`, for the model. A result that
    /// is a rate limit or a server error is tried again, up to the client's retries.
    pub fn call(&self, name: &str, arguments: &Value) -> String {
        let mut attempt = 0;
        loop {
            let (transient, text) = self.call_once(name, arguments);
            if !transient || attempt >= self.retries {
                return text;
            }
            attempt += 1;
            eprintln!(
                "{name} failed ({text}): retry {attempt} of {}",
                self.retries
            );
            std::thread::sleep(crate::tools::retry_wait(None, attempt));
        }
    }

    /// One attempt: whether it failed in a way worth trying again, and the text.
    fn call_once(&self, name: &str, arguments: &Value) -> (bool, String) {
        match self.request("tools/call", json!({"name": name, "arguments": arguments})) {
            Ok(result) => {
                let text: Vec<&str> = result["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|block| block["text"].as_str())
                    .collect();
                let text = text.join("\n");
                if result["isError"] == true {
                    let transient = serde_json::from_str::<Value>(&text).is_ok_and(|body| {
                        TRANSIENT_ERRORS.contains(&body["error"].as_str().unwrap_or_default())
                    });
                    (transient, format!("error: {text}"))
                } else {
                    (false, text)
                }
            }
            Err(error) => (false, format!("error: {error}")),
        }
    }

    fn request(&self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let answer =
            self.post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        if let Some(error) = answer.get("error") {
            return Err(format!("{method}: {error}"));
        }
        Ok(answer.get("result").cloned().unwrap_or(Value::Null))
    }

    fn post(&self, message: &Value) -> Result<Value, String> {
        let mut response = self
            .http
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .send(message.to_string().as_bytes())
            .map_err(|error| format!("{}: {error}", self.url))?;
        let status = response.status().as_u16();
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|error| format!("{}: {error}", self.url))?;
        if !(200..300).contains(&status) {
            return Err(format!("{} answered HTTP {status}: {text}", self.url));
        }
        if text.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&text)
            .map_err(|error| format!("{} answered something that is not JSON: {error}", self.url))
    }
}
