//! The judge of a run's trials ([`Judging`]) and of one trial ([`TrialJudge`]). A trial's
//! `llm_judge` questions (a task's components, a closed loop's checkpoints with their hidden
//! references) are the judge's calls through the trial's gateway: priced, charged to the
//! run's budget, logged in the trajectory's model calls with speaker `judge`, recorded in the
//! trial's cassette and replayed from it in the judge's own call order (per round in a closed
//! loop), a replay miss failing the trial as any speaker's does.
//!
//! The judge cache (`[judge] cache`) stays for what has no cassette: the judge of `run
//! --oracle` (asked of `[judge]` on a miss and written there, as before), and, read only, the
//! answers of a suite whose cassettes were recorded before the judge's calls were: a replay
//! whose cassette records no judge call takes them from the cache (the trial noted for
//! `cargo clawtest cassettes`), and `record-missing` moves them into the cassette.

use std::sync::Arc;

use serde_json::json;

use super::{Answer, CachedJudge, Judge, JudgeError};
use crate::config::{Config, Mode};
use crate::grade::judge::{JudgeAnswer, JudgeRequest, parse_reply};
use crate::llm::ModelAccess;
use crate::llm::client::{Chat, Message};
use crate::llm::gateway::routes::Route;
use crate::llm::gateway::{Gateway, Upstream};
use crate::trajectory::Speaker;

/// Why a trial's judge answer came from the cache: what `cassettes` says of the trial.
const FROM_THE_CACHE: &str = "the judge's answer came from the judge cache ([judge] cache), not the cassette, which records no call of the judge: `cargo clawtest --mode record-missing` moves the cache's answers into the cassette";

/// How a run's trials ask the judge.
pub(crate) struct Judging {
    /// The judge cache in front of `[judge]`'s provider: the judge of a run without
    /// cassettes, and the answers of cassettes recorded before the judge's calls were.
    cache: Arc<CachedJudge>,
    /// The judge's client: `[judge]`'s provider and model, else the run's.
    chat: Chat,
    /// `[judge]`'s own provider when it names one (or why it cannot be asked); `None`: the
    /// judge's calls go to the run's provider.
    upstream: Option<Result<Arc<Upstream>, String>>,
    /// The trials replay and record cassettes (false for `run --oracle`, which has none).
    recorded: bool,
}

impl Judging {
    /// The judge of a run under `config` with `models`: `[judge] provider` and `model` when
    /// set, else the wire format the run's simulated user speaks and `model` (the harness's),
    /// else that format's default model; `recorded` when the run has a cassette folder.
    pub(crate) fn new(
        config: &Config,
        models: &ModelAccess,
        model: Option<&str>,
        recorded: bool,
    ) -> Judging {
        let section = &config.judge;
        let provider = section.provider.unwrap_or(models.simulator_provider);
        let model = section
            .model
            .as_deref()
            .or(model)
            .unwrap_or(crate::llm::client::default_model(provider));
        Judging {
            cache: super::with_costs(
                config,
                Arc::clone(&models.prices),
                Arc::clone(&models.budget),
            ),
            chat: super::http::chat(provider, model),
            upstream: super::own_upstream(config),
            recorded,
        }
    }

    /// `gateway` with the judge's calls forwarded to `[judge]`'s provider, when it names one.
    pub(crate) fn equip(&self, gateway: Gateway) -> Gateway {
        match &self.upstream {
            Some(upstream) => gateway.with_judge_upstream(upstream.clone()),
            None => gateway,
        }
    }

    /// The judge of one trial, asking through its `gateway` in `mode`.
    pub(crate) fn for_trial<'a>(&'a self, gateway: &'a Gateway, mode: Mode) -> TrialJudge<'a> {
        TrialJudge {
            judging: self,
            gateway,
            mode,
        }
    }

    /// The judge cache's warnings since the last call (see [`CachedJudge::take_warnings`]).
    pub(crate) fn take_warnings(&self) -> Vec<String> {
        self.cache.take_warnings()
    }
}

/// The judge of one trial: its questions asked through the trial's gateway.
pub(crate) struct TrialJudge<'a> {
    judging: &'a Judging,
    gateway: &'a Gateway,
    mode: Mode,
}

impl TrialJudge<'_> {
    /// The cache's `answer` to the question `conversation` asks, logged as the judge's call
    /// (and recorded by `record-missing`), the trial noted as not answered by its cassette.
    fn answered_from_cache(
        &self,
        conversation: &[Message],
        answer: &JudgeAnswer,
    ) -> Result<(), JudgeError> {
        let chat = &self.judging.chat;
        let (path, body) = chat.request(conversation);
        let route = Route::of("POST", path, &[])
            .map_err(JudgeError)?
            .for_speaker(Speaker::Judge);
        let text = json!({"score": answer.score, "reasoning": answer.reasoning}).to_string();
        let reply = crate::llm::client::answer_body(chat.provider, &text);
        self.gateway
            .answered_elsewhere(&route, body, reply, FROM_THE_CACHE);
        Ok(())
    }
}

impl Judge for TrialJudge<'_> {
    fn answer<'a>(&'a self, request: &'a JudgeRequest) -> Answer<'a> {
        Box::pin(async move {
            let judging = self.judging;
            if !judging.recorded {
                return judging.cache.answer(request).await;
            }
            let conversation = [Message::user(request.prompt.clone())];
            let replays = matches!(self.mode, Mode::Replay | Mode::RecordMissing);
            if replays
                && !self.gateway.records(Speaker::Judge)
                && let Some(answer) = judging.cache.cached(request)?
            {
                self.answered_from_cache(&conversation, &answer)?;
                return Ok(answer);
            }
            let text = judging
                .chat
                .ask(self.gateway, &conversation)
                .await
                .map_err(JudgeError)?;
            parse_reply(&text).map_err(|error| JudgeError(error.to_string()))
        })
    }
}

#[cfg(test)]
mod tests;
