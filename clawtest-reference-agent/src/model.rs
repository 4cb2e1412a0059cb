//! Owns the chat-completions client: the exact request body, the HTTP exchange with the
//! OpenAI-compatible endpoint, and extracting the assistant message from the response.

use std::fmt;
use std::time::Duration;

use serde_json::Value;

/// Real models can take a while on long contexts; anything beyond this is a stuck gateway.
const MODEL_CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// Error bodies are echoed to stderr; cap them so an HTML error page cannot flood the log.
const ERROR_BODY_LIMIT: usize = 4000;

/// Talks to `{base}/chat/completions`.
pub struct ModelClient {
    http: ureq::Agent,
    url: String,
    api_key: Option<String>,
    model: String,
}

/// Why a model call produced no assistant message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelError {
    /// No HTTP response (connection refused, timeout, ...).
    Transport { url: String, message: String },
    /// The endpoint answered with a non-2xx status.
    Status { status: u16, body: String },
    /// A 2xx response that is not a chat completion with a message.
    Unreadable { reason: String, body: String },
}

impl fmt::Display for ModelError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelError::Transport { url, message } => {
                write!(formatter, "model request to {url} failed: {message}")
            }
            ModelError::Status { status, body } => {
                write!(formatter, "model answered HTTP {status}: {}", clip(body))
            }
            ModelError::Unreadable { reason, body } => {
                write!(
                    formatter,
                    "unreadable model response ({reason}): {}",
                    clip(body)
                )
            }
        }
    }
}

impl std::error::Error for ModelError {}

fn clip(text: &str) -> String {
    if text.chars().count() <= ERROR_BODY_LIMIT {
        text.to_owned()
    } else {
        let head: String = text.chars().take(ERROR_BODY_LIMIT).collect();
        format!("{head}... (truncated)")
    }
}

impl ModelClient {
    pub fn new(base_url: &str, api_key: Option<String>, model: &str) -> ModelClient {
        ModelClient {
            // Gateways put the useful explanation in the error body: the response is kept to
            // show it.
            http: crate::http::client(MODEL_CALL_TIMEOUT),
            url: format!("{}/chat/completions", base_url.trim_end_matches('/')),
            api_key,
            model: model.to_owned(),
        }
    }

    /// The request body: model, messages, the OpenAI tool definitions (omitted when there are
    /// none, since some servers reject an empty list) and temperature 0 for repeatable runs.
    /// Written from the conversation as it is: a body built as a value would copy the whole
    /// conversation and every tool at each call.
    pub fn request_body(&self, messages: &[Value], tools: &[Value]) -> String {
        // Serializing a string or JSON values cannot fail.
        let mut text = format!(
            "{{\"model\":{},\"messages\":{}",
            serde_json::to_string(&self.model).unwrap_or_default(),
            serde_json::to_string(messages).unwrap_or_default(),
        );
        if !tools.is_empty() {
            text.push_str(",\"tools\":");
            text.push_str(&serde_json::to_string(tools).unwrap_or_default());
        }
        text.push_str(",\"temperature\":0}");
        text
    }

    /// Sends one chat-completions request and returns `choices[0].message`.
    pub fn complete(&self, messages: &[Value], tools: &[Value]) -> Result<Value, ModelError> {
        let body = self.request_body(messages, tools);
        let mut request = self
            .http
            .post(self.url.as_str())
            .header("Content-Type", "application/json");
        if let Some(key) = &self.api_key {
            request = request.header("Authorization", format!("Bearer {key}"));
        }
        let transport = |message: String| ModelError::Transport {
            url: self.url.clone(),
            message,
        };
        let mut response = request
            .send(body)
            .map_err(|error| transport(error.to_string()))?;
        let status = response.status();
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|error| transport(format!("reading the response body: {error}")))?;
        if !status.is_success() {
            return Err(ModelError::Status {
                status: status.as_u16(),
                body: text,
            });
        }
        assistant_message(&text)
    }
}

/// Extracts `choices[0].message` from a chat-completions response body.
pub fn assistant_message(text: &str) -> Result<Value, ModelError> {
    let unreadable = |reason: &str| ModelError::Unreadable {
        reason: reason.to_owned(),
        body: text.to_owned(),
    };
    let document: Value =
        serde_json::from_str(text).map_err(|error| unreadable(&format!("not JSON: {error}")))?;
    match document.pointer("/choices/0/message") {
        Some(message @ Value::Object(_)) => Ok(message.clone()),
        _ => Err(unreadable("no choices[0].message object")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn request_body_omits_empty_tools() {
        let client = ModelClient::new("http://127.0.0.1:1/v1/", None, "m");
        assert_eq!(client.url, "http://127.0.0.1:1/v1/chat/completions");
        let messages = [json!({"role": "user", "content": "hi"})];
        // The text sent, key for key and in order.
        assert_eq!(
            client.request_body(&messages, &[]),
            json!({"model": "m", "messages": messages, "temperature": 0}).to_string()
        );
        let tools = [json!({"type": "function"})];
        assert_eq!(
            client.request_body(&messages, &tools),
            json!({"model": "m", "messages": messages, "tools": tools, "temperature": 0})
                .to_string()
        );
    }

    #[test]
    fn assistant_message_requires_a_message_object() {
        let message =
            assistant_message(r#"{"choices":[{"message":{"role":"assistant","content":"ok"}}]}"#)
                .expect("message");
        assert_eq!(message["content"], "ok");
        for text in [
            "",
            "{}",
            r#"{"choices":[]}"#,
            r#"{"choices":[{"message":"x"}]}"#,
        ] {
            assert!(matches!(
                assistant_message(text),
                Err(ModelError::Unreadable { .. })
            ));
        }
    }

    #[test]
    fn long_error_bodies_are_clipped() {
        let error = ModelError::Status {
            status: 502,
            body: "x".repeat(ERROR_BODY_LIMIT + 10),
        };
        let shown = error.to_string();
        assert!(shown.starts_with("model answered HTTP 502: "));
        assert!(shown.ends_with("(truncated)"));
    }
}
