//! The LLM judge over HTTP: OpenAI-compatible chat completions or Anthropic messages, at
//! temperature 0, through the gateway's upstream client (TLS, retries with backoff on 429 and
//! 5xx). The key is read from the variable the configuration names, only when a question
//! actually has to be asked: a run whose answers are all in the cache needs no key.

use http_body_util::BodyExt;
use serde_json::{Value, json};

use super::{Answer, Judge, JudgeError};
use crate::gateway::Route;
use crate::gateway::upstream::{Endpoint, Provider, RetryPolicy, Upstream};
use crate::grade::judge::{JudgeRequest, parse_reply};

/// How long a judge's answer may be (ClawEnvKit's limit: a score and a sentence).
const MAX_TOKENS: u32 = 200;

/// A judge model behind an HTTP API.
pub(crate) struct HttpJudge {
    provider: Provider,
    model: String,
    /// The client, or why there is none (e.g. the key variable is unset): reported on use.
    upstream: Result<Upstream, String>,
}

impl HttpJudge {
    /// A judge at `base_url` speaking `provider`'s wire format; `api_key_env` names the
    /// variable holding the key (read now; a missing one fails each question, naming it).
    pub(crate) fn new(
        provider: Provider,
        base_url: &str,
        model: &str,
        api_key_env: Option<&str>,
        retry: RetryPolicy,
    ) -> HttpJudge {
        let api_key = match api_key_env {
            None => Ok(None),
            Some(variable) => crate::config::secrets::var(variable)
                .map(Some)
                .ok_or_else(|| format!("the judge's key variable `{variable}` is not set")),
        };
        let upstream = api_key.and_then(|api_key| {
            let endpoint = Endpoint {
                base_url: base_url.to_string(),
                api_key,
            };
            let (openai, anthropic) = match provider {
                Provider::OpenAi => (Some(endpoint), None),
                Provider::Anthropic => (None, Some(endpoint)),
            };
            Upstream::new(openai, anthropic, retry).map_err(|error| error.to_string())
        });
        HttpJudge {
            provider,
            model: model.to_string(),
            upstream,
        }
    }

    fn body(&self, prompt: &str) -> (&'static str, Value) {
        let messages = json!([{"role": "user", "content": prompt}]);
        match self.provider {
            Provider::OpenAi => (
                "/v1/chat/completions",
                json!({"model": self.model, "temperature": 0, "max_tokens": MAX_TOKENS, "messages": messages}),
            ),
            Provider::Anthropic => (
                "/v1/messages",
                json!({"model": self.model, "temperature": 0, "max_tokens": MAX_TOKENS, "messages": messages}),
            ),
        }
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

impl Judge for HttpJudge {
    fn answer<'a>(&'a self, request: &'a JudgeRequest) -> Answer<'a> {
        Box::pin(async move {
            let upstream = self
                .upstream
                .as_ref()
                .map_err(|message| JudgeError(message.clone()))?;
            let (path, body) = self.body(&request.prompt);
            let headers = [("content-type".to_string(), "application/json".to_string())];
            let route = Route::of("POST", path, &headers).map_err(JudgeError)?;
            let response = upstream
                .send(&route, &headers, body.to_string().as_bytes())
                .await
                .map_err(|error| JudgeError(error.to_string()))?;
            let status = response.status;
            let bytes = response
                .body
                .collect()
                .await
                .map_err(|error| {
                    JudgeError(format!("the judge's answer could not be read: {error}"))
                })?
                .to_bytes();
            if !(200..300).contains(&status) {
                return Err(JudgeError(format!(
                    "the judge answered HTTP {status}: {}",
                    String::from_utf8_lossy(&bytes)
                        .chars()
                        .take(300)
                        .collect::<String>()
                )));
            }
            let answer: Value = serde_json::from_slice(&bytes)
                .map_err(|error| JudgeError(format!("the judge's answer is not JSON: {error}")))?;
            let text = reply_text(self.provider, &answer)
                .ok_or_else(|| JudgeError("the judge's answer has no text".into()))?;
            parse_reply(&text).map_err(|error| JudgeError(error.to_string()))
        })
    }
}
