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
use crate::trajectory::Speaker;

/// Who said a message of a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The instructions the model answers under (OpenAI: a `system` message; Anthropic: the
    /// request's `system` field).
    System,
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
    /// The instructions the model answers under.
    pub fn system(text: impl Into<String>) -> Message {
        Message {
            role: Role::System,
            text: text.into(),
        }
    }

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
    /// How long an answer may be; `None` leaves it to the provider where the format allows
    /// (OpenAI), and asks for [`DEFAULT_MAX_TOKENS`] where it does not (Anthropic).
    pub(crate) max_tokens: Option<u32>,
    /// Who asks: the calls are logged, recorded and replayed as this speaker's, apart from
    /// the other speakers' calls (generation's are [`Speaker::Harness`], the default one).
    pub(crate) speaker: Speaker,
}

/// The answer length asked for when none is set and the wire format requires one.
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 1024;

impl Chat {
    /// Who answers, in error messages (`the model`, `the judge`).
    fn answerer(&self) -> &'static str {
        match self.speaker {
            Speaker::Harness => "the model",
            speaker => speaker.described(),
        }
    }

    /// The endpoint and the request body for `conversation`.
    pub(crate) fn request(&self, conversation: &[Message]) -> (&'static str, Value) {
        let role = |role: Role| match role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        let message =
            |message: &Message| json!({"role": role(message.role), "content": message.text});
        let mut body = json!({"model": self.model, "temperature": 0});
        match self.provider {
            Provider::OpenAi => {
                if let Some(max_tokens) = self.max_tokens {
                    body["max_tokens"] = json!(max_tokens);
                }
                body["messages"] = conversation.iter().map(message).collect();
                ("/v1/chat/completions", body)
            }
            Provider::Anthropic => {
                // Anthropic takes the instructions beside the messages, not as one of them.
                let (system, messages): (Vec<&Message>, Vec<&Message>) = conversation
                    .iter()
                    .partition(|message| message.role == Role::System);
                body["max_tokens"] = json!(self.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS));
                if !system.is_empty() {
                    let text: Vec<&str> =
                        system.iter().map(|message| message.text.as_str()).collect();
                    body["system"] = json!(text.join("\n\n"));
                }
                body["messages"] = messages.into_iter().map(message).collect();
                ("/v1/messages", body)
            }
        }
    }

    /// The answer's text to `conversation`, asked through `gateway`; the gateway's failure
    /// (a replay miss, the cost limit, the provider) or a useless answer is the error.
    pub(crate) async fn ask(
        &self,
        gateway: &Gateway,
        conversation: &[Message],
    ) -> Result<String, String> {
        self.reply(gateway, conversation)
            .await?
            .ok_or_else(|| format!("{}'s answer has no text", self.answerer()))
    }

    /// As [`Chat::ask`], but an answer that says nothing on purpose (OpenAI's `content: null`)
    /// is `None`, not an error: the simulated user's way to stay silent.
    pub(crate) async fn reply(
        &self,
        gateway: &Gateway,
        conversation: &[Message],
    ) -> Result<Option<String>, String> {
        let (path, body) = self.request(conversation);
        let route = Route::of("POST", path, &[])?.for_speaker(self.speaker);
        let (status, bytes) = send(gateway, route, &body).await;
        if let Some(failure) = gateway.failure() {
            return Err(failure.to_string());
        }
        let speaker = self.answerer();
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
        match reply_text(self.provider, &answer) {
            Some(text) => Ok(Some(text)),
            None if self.provider == Provider::OpenAi
                && answer.pointer("/choices/0/message/content") == Some(&Value::Null) =>
            {
                Ok(None)
            }
            None => Err(format!(
                "{speaker}'s answer has no text: {}",
                answer.to_string().chars().take(300).collect::<String>()
            )),
        }
    }
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

/// The model asked in `provider`'s wire format when neither the task nor the configuration
/// names one (the simulated user's, the judge's without `[judge] model`).
pub(crate) fn default_model(provider: Provider) -> &'static str {
    match provider {
        Provider::OpenAi => "gpt-4o-mini",
        Provider::Anthropic => "claude-3-5-haiku-latest",
    }
}

/// A whole answer of `provider`'s holding `text`, reporting no tokens (none were spent):
/// what [`reply_text`] reads `text` back from. An answer kept outside a cassette (the judge
/// cache's) is written into one in this shape.
pub(crate) fn answer_body(provider: Provider, text: &str) -> Value {
    match provider {
        Provider::OpenAi => json!({
            "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0},
        }),
        Provider::Anthropic => json!({
            "type": "message",
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }),
    }
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
