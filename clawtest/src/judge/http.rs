//! The LLM judge over HTTP: OpenAI-compatible chat completions or Anthropic messages, at
//! temperature 0 ([`chat`], the one client of the judge's, a trial's too), `[judge]`'s own
//! provider ([`upstream`]). [`HttpJudge`] is the judge behind the cache of a run without
//! cassettes (`run --oracle`, a re-grade): asked through a gateway in-process like every model
//! call (the upstream client's TLS and retries with backoff on 429 and 5xx; priced from
//! `[llm.prices]` and charged to the run's budget, so no question is asked once the cost limit
//! is reached). The key is read from the variable the configuration names; a missing one fails
//! only a question that has to be asked.

use std::sync::Arc;

use super::{Answer, Judge, JudgeError};
use crate::config::Provider;
use crate::grade::judge::{JudgeRequest, parse_reply};
use crate::llm::client::{Chat, Message};
use crate::llm::gateway::upstream::{Endpoint, RetryPolicy, Upstream};
use crate::llm::gateway::{Budget, Gateway, Prices};

/// How long a judge's answer may be (ClawEnvKit's limit: a score and a sentence).
const MAX_TOKENS: u32 = 200;

/// A judge model behind an HTTP API.
pub(crate) struct HttpJudge {
    chat: Chat,
    /// The client, or why there is none (e.g. the key variable is unset): reported on use.
    upstream: Result<Arc<Upstream>, String>,
    prices: Arc<Prices>,
    budget: Arc<Budget>,
}

impl HttpJudge {
    /// A judge asking `chat`'s model through `upstream` (or failing each question with why
    /// there is none, e.g. the key variable is unset). Its calls are priced by `prices` and
    /// charged to `budget`, the run's.
    pub(crate) fn new(
        chat: Chat,
        upstream: Result<Arc<Upstream>, String>,
        (prices, budget): (Arc<Prices>, Arc<Budget>),
    ) -> HttpJudge {
        HttpJudge {
            chat,
            upstream,
            prices,
            budget,
        }
    }
}

/// The client of `[judge]`'s provider, at `base_url` speaking `provider`'s wire format;
/// `api_key_env` names the variable holding the key (read now; a missing one is the error,
/// naming it, reported when a question has to be asked).
pub(crate) fn upstream(
    provider: Provider,
    base_url: &str,
    api_key_env: Option<&str>,
    retry: RetryPolicy,
) -> Result<Arc<Upstream>, String> {
    let api_key = match api_key_env {
        None => Ok(None),
        Some(variable) => crate::config::secrets::var(variable)
            .map(Some)
            .ok_or_else(|| format!("the judge's key variable `{variable}` is not set")),
    };
    api_key.and_then(|api_key| {
        let endpoint = Endpoint {
            base_url: base_url.to_string(),
            api_key,
        };
        let (openai, anthropic) = match provider {
            Provider::OpenAi => (Some(endpoint), None),
            Provider::Anthropic => (None, Some(endpoint)),
        };
        Upstream::new(openai, anthropic, retry)
            .map(Arc::new)
            .map_err(|error| error.to_string())
    })
}

/// The judge's client: `model` in `provider`'s wire format at temperature 0, its answer a
/// score and a sentence, its calls the judge's.
pub(crate) fn chat(provider: Provider, model: &str) -> Chat {
    Chat {
        provider,
        model: model.to_string(),
        max_tokens: Some(MAX_TOKENS),
        speaker: crate::trajectory::Speaker::Judge,
    }
}

impl Judge for HttpJudge {
    fn answer<'a>(&'a self, request: &'a JudgeRequest) -> Answer<'a> {
        Box::pin(async move {
            let upstream = self
                .upstream
                .as_ref()
                .map_err(|message| JudgeError(message.clone()))?;
            // A gateway per question: one failure (the provider, the limit) is that
            // question's, and the next question is asked afresh.
            let gateway = Gateway::upstream(
                &format!("judge of {}", request.component),
                0,
                Arc::clone(upstream),
                false,
            )
            .with_costs(Arc::clone(&self.prices), Arc::clone(&self.budget));
            let text = self
                .chat
                .ask(&gateway, &[Message::user(request.prompt.clone())])
                .await
                .map_err(JudgeError)?;
            parse_reply(&text).map_err(|error| JudgeError(error.to_string()))
        })
    }
}
