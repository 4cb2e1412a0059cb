//! The one chat client: a conversation sent to a model through a [`Gateway`] in-process (its
//! handler, without a socket), so that the judge's, generation's and the simulated user's
//! calls are replayed, forwarded, recorded, priced and charged to the run's budget by the same
//! code a trial's harness reaches over HTTP. It speaks both wire formats.

use http_body_util::BodyExt;
use serde_json::{Value, json};

use super::gateway::Gateway;
use super::gateway::routes::Route;
use crate::config::Provider;
use crate::http::HttpRequest;

/// Who said a message of a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The prompt, or the problems fed back.
    User,
    /// An earlier answer.
    Assistant,
}

/// One message of a conversation with the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Who said it.
    pub role: Role,
    /// What was said.
    pub text: String,
}

impl Message {
    /// A message of the user's.
    pub fn user(text: impl Into<String>) -> Message {
        Message {
            role: Role::User,
            text: text.into(),
        }
    }

    /// An answer of the model's.
    pub fn assistant(text: impl Into<String>) -> Message {
        Message {
            role: Role::Assistant,
            text: text.into(),
        }
    }
}

/// A model asked at temperature 0 in one provider's wire format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Chat {
    /// The wire format (and so the endpoint) the calls use.
    pub(crate) provider: Provider,
    /// The model's name, as the provider knows it.
    pub(crate) model: String,
    /// How long an answer may be.
    pub(crate) max_tokens: u32,
    /// Who answers, in error messages (`the model`, `the judge`).
    pub(crate) speaker: &'static str,
}

impl Chat {
    /// The endpoint and the request body for `conversation`.
    pub(crate) fn request(&self, conversation: &[Message]) -> (&'static str, Value) {
        let messages: Vec<Value> = conversation
            .iter()
            .map(|message| {
                let role = match message.role {
                    Role::User => "user",
                    Role::Assistant => "assistant",
                };
                json!({"role": role, "content": message.text})
            })
            .collect();
        let body = json!({"model": self.model, "temperature": 0, "max_tokens": self.max_tokens, "messages": messages});
        match self.provider {
            Provider::OpenAi => ("/v1/chat/completions", body),
            Provider::Anthropic => ("/v1/messages", body),
        }
    }

    /// The answer's text to `conversation`, asked through `gateway`; the gateway's failure
    /// (a replay miss, the cost limit, the provider) or a useless answer is the error.
    pub(crate) async fn ask(
        &self,
        gateway: &Gateway,
        conversation: &[Message],
    ) -> Result<String, String> {
        let (path, body) = self.request(conversation);
        let route = Route::of("POST", path, &[])?;
        let (status, bytes) = send(gateway, route, &body).await;
        if let Some(failure) = gateway.failure() {
            return Err(failure.to_string());
        }
        let speaker = self.speaker;
        if !(200..300).contains(&status) {
            return Err(format!(
                "{speaker} answered HTTP {status}: {}",
                String::from_utf8_lossy(&bytes)
                    .chars()
                    .take(300)
                    .collect::<String>()
            ));
        }
        let answer: Value = serde_json::from_slice(&bytes)
            .map_err(|error| format!("{speaker}'s answer is not JSON: {error}"))?;
        reply_text(self.provider, &answer).ok_or_else(|| format!("{speaker}'s answer has no text"))
    }
}

/// Asks the model on the closed loop's simulated user's behalf (`simulator: llm`), between two
/// rounds, with `body` (an OpenAI chat request): the call is answered as the harness's are
/// (replayed, forwarded, recorded, charged), marked as the simulator's. The answer's JSON
/// body (`null` when it is not JSON); a refused call is also the gateway's failure.
pub(crate) async fn ask_as_simulator(gateway: &Gateway, body: &Value) -> Value {
    let Ok(route) = Route::of("POST", "/v1/chat/completions", &[]).map(Route::for_simulator) else {
        return Value::Null;
    };
    let (_, bytes) = send(gateway, route, body).await;
    serde_json::from_slice(&bytes).unwrap_or(Value::Null)
}

/// Sends `body` to `route` through `gateway`'s handler code, in-process; the answer's status
/// and whole body (a stream's bytes, when the request asked for one).
async fn send(gateway: &Gateway, route: Route, body: &Value) -> (u16, hyper::body::Bytes) {
    let request = HttpRequest {
        method: "POST".into(),
        path: route.path.clone(),
        headers: vec![("content-type".to_string(), "application/json".to_string())],
        body: body.to_string().into_bytes(),
    };
    let response = gateway.respond(route, request).await;
    let bytes = response
        .body
        .collect()
        .await
        .map(|collected| collected.to_bytes())
        .unwrap_or_default();
    (response.status, bytes)
}

/// The reply text of an OpenAI or Anthropic answer.
pub(crate) fn reply_text(provider: Provider, answer: &Value) -> Option<String> {
    match provider {
        Provider::OpenAi => answer["choices"][0]["message"]["content"]
            .as_str()
            .map(str::to_string),
        Provider::Anthropic => answer["content"].as_array().map(|blocks| {
            blocks
                .iter()
                .filter_map(|block| block["text"].as_str())
                .collect::<Vec<_>>()
                .join("")
        }),
    }
}
