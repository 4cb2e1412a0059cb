//! Replay: a trial's model calls answered, in order, from the cassette's recorded
//! interactions for that trial. The request is compared with the recording once this
//! trial's own values are placeholders and both sides are normalised (`matching.rs`); the
//! answer gets this trial's values back. A call the recording cannot answer (no cassette,
//! no recording for the trial, more calls than recorded, a request that differs from the
//! recorded one) is refused with a 400 the SDKs do not retry, and remembered as the trial's
//! failure, which stops the trial: never a silent live call, never a made-up answer.
//!
//! A streaming request (`"stream": true`) replayed from a whole recorded answer gets that
//! answer as the provider would have streamed it (`sse.rs`).

use hyper::body::Bytes;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::call_log::{CallLog, refuse};
use super::cassette::{Interaction, RecordedResponse};
use super::exchange::Exchange;
use super::failure::{FailureKind, GatewayFailure};
use super::routes::Route;
use super::server::{Gap, Gateway, Script, Source};
use super::sse;
use super::stale::StaleTrial;
use crate::config::Provider;
use crate::http::{HttpRequest, HttpResponse, ResponseBody};

impl Gateway {
    /// Answers one replayed request with a whole body: the next recorded response, or an
    /// error response and a recorded failure.
    #[cfg(test)]
    pub(crate) fn answer(&self, path: &str, body: &[u8]) -> (u16, Value) {
        let route = Route::of("POST", path, &[]).expect("a model endpoint");
        match self.replay_call(&route, body, false) {
            Replayed::Missed(_) => unreachable!("a replay without fallback never misses"),
            Replayed::Answer(response) | Replayed::Refused(response) => match response.body {
                ResponseBody::Whole(bytes) => (
                    response.status,
                    serde_json::from_slice(&bytes).unwrap_or(Value::Null),
                ),
                ResponseBody::Chunks(_) => (response.status, Value::Null),
            },
        }
    }

    /// Answers a replayed request: the recorded answer whole, or its server-sent events as
    /// a stream.
    pub(super) fn replay_response(&self, route: &Route, request: &HttpRequest) -> HttpResponse {
        match self.replay_call(route, &request.body, false) {
            Replayed::Answer(response) | Replayed::Refused(response) => response,
            Replayed::Missed(_) => unreachable!("a replay without fallback never misses"),
        }
    }

    /// `record-missing`: the recorded answer while the cassette answers the trial; else the
    /// number of the call to forward (the trial turned to the provider at its first miss).
    pub(super) fn replay_or_miss(
        &self,
        route: &Route,
        request: &HttpRequest,
    ) -> Result<HttpResponse, usize> {
        match self.replay_call(route, &request.body, true) {
            Replayed::Answer(response) | Replayed::Refused(response) => Ok(response),
            Replayed::Missed(call) => {
                // Turning to the provider spends money: not past the run's limit.
                if self.budget.exhausted() {
                    let failure = self.failure_at(
                        call,
                        FailureKind::BudgetReached {
                            spent: crate::llm::money::dollars(self.budget.spent().usd()),
                            limit: self.budget.limit().unwrap_or_default().to_string(),
                        },
                    );
                    let body = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
                    return Ok(refuse(&mut self.lock(), call, route, body, failure));
                }
                Err(call)
            }
        }
    }

    /// The recorded response for the next call, this trial's values put back (and streamed
    /// when the request asks for a stream); or (the call refused and its failure kept) the
    /// error answer; or, with `fallback` (`record-missing`), the call the cassette could not
    /// answer, left to the provider. Every call the cassette cannot answer is noted stale.
    fn replay_call(&self, route: &Route, body: &[u8], fallback: bool) -> Replayed {
        let Source::Replay { script, .. } = &self.source else {
            unreachable!("replay_call is called on replaying gateways only")
        };
        let mut state = self.lock();
        let call = state.next_call();
        if state.switched() {
            return Replayed::Missed(call);
        }
        let request: Value = match serde_json::from_slice(body) {
            Ok(value) => value,
            Err(error) => {
                let failure = self.failure_at(
                    call,
                    FailureKind::NotJson {
                        message: error.to_string(),
                    },
                );
                return Replayed::Refused(refuse(&mut state, call, route, Value::Null, failure));
            }
        };
        // The trial stops at its first failure: what follows is not compared (it would only
        // report the consequences of the first difference).
        if let Some(first) = state.failure().cloned() {
            return Replayed::Refused(refuse(&mut state, call, route, request, first));
        }
        let outcome = self.recorded(&mut state, script, route, &request, call);
        let response = outcome.and_then(|recorded| {
            // This trial's values put back: the one copy of the recorded answer made.
            let response = RecordedResponse {
                status: recorded.status,
                body: self.values.restore(&recorded.body),
                events: recorded.events.as_ref().map(|events| {
                    events
                        .iter()
                        .map(|event| self.values.restore_text(event))
                        .collect()
                }),
                retried: recorded.retried.clone(),
            };
            self.streamed_if_asked(route, &request, response, call)
        });
        match response {
            Err(failure) => {
                if failure.needs_recording() {
                    self.note_stale(&failure, None);
                    if fallback {
                        state.switch();
                        return Replayed::Missed(call);
                    }
                }
                Replayed::Refused(refuse(&mut state, call, route, request, failure))
            }
            Ok(response) => {
                state.answered_from_cassette_once_more();
                // Written for the harness before the log takes the answer (no copy of it).
                let answer = as_http(&response);
                self.log(
                    &mut state,
                    Exchange {
                        call,
                        path: route.path.clone(),
                        speaker: route.speaker,
                        request,
                        response,
                    },
                    // `record-missing` keeps what the cassette answered: the trial's
                    // recording, should a later call turn to the provider.
                    fallback,
                );
                Replayed::Answer(answer)
            }
        }
    }

    /// Notes the trial stale at `failure` (the first note of a trial is kept), with `diff`.
    fn note_stale(&self, failure: &GatewayFailure, diff: Option<String>) {
        self.stale.note(
            &self.task_id,
            StaleTrial {
                trial: self.trial,
                call: failure.call,
                reason: failure.to_string(),
                diff,
            },
        );
    }

    /// The recorded answer for call `call` (its request `request`): the next recorded call of
    /// the route's speaker in the trial (in a closed loop, in the round), if it matches; else
    /// why not. Each speaker replays in its own call order: the judge's calls never take the
    /// harness's answers, whatever the interleaving.
    fn recorded<'script>(
        &self,
        log: &mut CallLog,
        script: &'script Result<Script, Gap>,
        route: &Route,
        request: &Value,
        call: usize,
    ) -> Result<&'script RecordedResponse, GatewayFailure> {
        match script {
            Err(Gap::NoTrial { recorded }) => Err(self.failure_at(
                call,
                FailureKind::NoTrial {
                    recorded: *recorded,
                },
            )),
            Err(Gap::NoCassette { message }) => Err(self.failure_at(
                call,
                FailureKind::NoCassette {
                    message: message.clone(),
                },
            )),
            Ok(script) => {
                let (round, speaker) = (log.round(), route.speaker);
                let recorded = || {
                    script.iter().filter(move |interaction| {
                        interaction.speaker == speaker
                            && round.is_none_or(|round| interaction.round.unwrap_or(1) == round)
                    })
                };
                let number = log.next_of(speaker);
                match recorded().nth(number) {
                    Some(interaction) => self.matched(interaction, route, request, call),
                    None => {
                        let recorded = recorded().count();
                        let kind = match round {
                            None => FailureKind::Exhausted {
                                speaker,
                                number,
                                recorded,
                            },
                            Some(round) => FailureKind::RoundExhausted {
                                round,
                                speaker,
                                in_round: number,
                                recorded,
                            },
                        };
                        Err(self.failure_at(call, kind))
                    }
                }
            }
        }
    }

    /// The recorded answer of `interaction` when `request`, this trial's values seen as their
    /// placeholders, matches its recorded request.
    fn matched<'script>(
        &self,
        interaction: &'script Interaction,
        route: &Route,
        request: &Value,
        call: usize,
    ) -> Result<&'script RecordedResponse, GatewayFailure> {
        let difference = if interaction.request.path != route.path {
            Some(format!(
                "path: recorded {}, got {}",
                interaction.request.path, route.path
            ))
        } else {
            self.rules.matcher.difference_seen(
                &interaction.request.body,
                request,
                interaction.request.whole,
                &|text| self.values.hide_seen(text),
            )
        };
        match difference {
            Some(difference) => {
                let failure = self.failure_at(call, FailureKind::Divergence { difference });
                let matcher = &self.rules.matcher;
                let diff = super::stale::diff(
                    &matcher.normalise(&interaction.request.body),
                    &matcher.normalise(&self.values.hide(request)),
                );
                self.note_stale(&failure, Some(diff));
                Err(failure)
            }
            None => Ok(&interaction.response),
        }
    }

    /// `response` as the request wants it: a whole recorded answer turned into the events
    /// its provider would have streamed when the request asks for a stream.
    fn streamed_if_asked(
        &self,
        route: &Route,
        request: &Value,
        response: RecordedResponse,
        call: usize,
    ) -> Result<RecordedResponse, GatewayFailure> {
        if request["stream"] != true || response.events.is_some() || response.status != 200 {
            return Ok(response);
        }
        match sse::events_of_whole(&route.path, &response.body) {
            Ok(events) => Ok(RecordedResponse {
                events: Some(events),
                ..response
            }),
            Err(message) => Err(self.failure_at(call, FailureKind::Unrecordable { message: format!(
                    "the request asks for a stream and the cassette holds a whole answer, which {message}; record the cassette again with streaming on"
                ) })),
        }
    }

    /// `GET /v1/models` in replay: the models this trial's recording asked for, in the
    /// provider's list shape (a harness that lists models before calling one gets an
    /// answer; nothing is counted as a call).
    pub(super) fn replayed_models(&self, route: &Route) -> HttpResponse {
        let mut models: Vec<String> = match &self.source {
            Source::Replay {
                script: Ok(script), ..
            } => script
                .iter()
                .filter_map(|interaction| interaction.request.body["model"].as_str())
                .map(str::to_string)
                .collect(),
            _ => Vec::new(),
        };
        models.sort();
        models.dedup();
        // One model (`/v1/models/{id}`): its entry, when the recording used it.
        if let Some(id) = route.path.strip_prefix("/v1/models/") {
            if !models.iter().any(|model| model == id) {
                return super::call_log::error_answer(
                    route.provider,
                    404,
                    &format!("the cassette of this trial never calls model `{id}`"),
                );
            }
            models = vec![id.to_string()];
        }
        let body = match route.provider {
            Provider::OpenAi => json!({"object": "list", "data": models.iter().map(|id| json!({
                "id": id, "object": "model", "created": 0, "owned_by": "clawtest-cassette"})).collect::<Vec<_>>()}),
            Provider::Anthropic => json!({"data": models.iter().map(|id| json!({
                "type": "model", "id": id, "display_name": id, "created_at": "1970-01-01T00:00:00Z"})).collect::<Vec<_>>(),
                "has_more": false, "first_id": models.first(), "last_id": models.last()}),
        };
        match route.path.strip_prefix("/v1/models/") {
            Some(_) => HttpResponse::json(200, &body["data"][0]),
            None => HttpResponse::json(200, &body),
        }
    }
}

/// What a replay made of one call.
enum Replayed {
    /// The recorded answer, as the harness gets it.
    Answer(HttpResponse),
    /// Refused (the trial's failure kept): the error answer.
    Refused(HttpResponse),
    /// `record-missing`: the cassette cannot answer call number `.0`; the provider will.
    Missed(usize),
}

/// A recorded answer as the harness gets it: whole, or its server-sent events as a stream.
fn as_http(response: &RecordedResponse) -> HttpResponse {
    match &response.events {
        Some(events) => {
            let (sender, receiver) = mpsc::channel(events.len().max(1));
            for event in events {
                // The channel holds every event: this never waits or fails.
                let _ = sender.try_send(Bytes::from(event.clone()));
            }
            HttpResponse {
                status: response.status,
                headers: vec![("content-type".into(), "text/event-stream".into())],
                body: ResponseBody::Chunks(receiver),
            }
        }
        None => HttpResponse::json(response.status, &response.body),
    }
}
