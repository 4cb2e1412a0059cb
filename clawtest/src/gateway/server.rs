//! One trial's gateway: answers the harness's model calls, in order, from the trial's recorded
//! interactions (replay) or from the real provider (live, record), logs every call with its
//! tokens and cost, and remembers the first failure so the executor can turn the trial into
//! an infrastructure error that says exactly what went wrong.
//!
//! Live answers pass through byte for byte; a streamed one (server-sent events) is forwarded
//! chunk by chunk as it arrives and kept whole for the log and the cassette.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::BodyExt;
use hyper::body::Bytes;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::cassette::{self, Interaction, RecordedRequest, RecordedResponse, TrialRecording};
use super::upstream::{DROPPED_RESPONSE_HEADERS, Upstream};
use super::usage::{self, Budget, Prices, Tokens};
use crate::http::{Handler, HttpRequest, HttpResponse, Reply, ResponseBody};
use crate::trajectory::ModelCall;

/// How long a trial's end waits for a stream the harness abandoned to finish recording.
const SETTLE_LIMIT: Duration = Duration::from_secs(10);

/// Why the gateway could not answer a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub enum GatewayFailure {
    #[error(
        "task `{task_id}` trial {trial}: the harness made model call {call} but the cassette records only {recorded} call(s) for this trial"
    )]
    Exhausted {
        task_id: String,
        trial: u32,
        call: usize,
        recorded: usize,
    },
    #[error(
        "task `{task_id}` trial {trial}: the cassette has no recording for this trial (it records {recorded} trial(s))"
    )]
    NoTrial {
        task_id: String,
        trial: u32,
        recorded: usize,
    },
    #[error(
        "task `{task_id}` trial {trial} call {call}: request diverges from the cassette: {difference}"
    )]
    Divergence {
        task_id: String,
        trial: u32,
        call: usize,
        difference: String,
    },
    #[error("task `{task_id}` trial {trial} call {call}: the request body is not JSON: {message}")]
    NotJson {
        task_id: String,
        trial: u32,
        call: usize,
        message: String,
    },
    #[error("task `{task_id}` trial {trial} call {call}: {message}")]
    Upstream {
        task_id: String,
        trial: u32,
        call: usize,
        message: String,
    },
    #[error(
        "task `{task_id}` trial {trial} call {call}: the cost limit of ${limit} was reached (${spent} spent), so the call was not made"
    )]
    BudgetReached {
        task_id: String,
        trial: u32,
        call: usize,
        /// US dollars, as text (the failure compares whole; floats would not).
        spent: String,
        limit: String,
    },
    #[error(
        "task `{task_id}` trial {trial} call {call}: model `{model}` has no price in [llm.prices], so the cost limit cannot be enforced"
    )]
    Unpriced {
        task_id: String,
        trial: u32,
        call: usize,
        model: String,
    },
}

#[derive(Debug, Default)]
struct State {
    next_call: usize,
    calls: Vec<ModelCall>,
    recording: Vec<(usize, Interaction)>,
    failure: Option<GatewayFailure>,
    streams: Vec<JoinHandle<()>>,
}

/// Where answers come from.
#[derive(Clone)]
enum Source {
    /// `None` when the cassette has no recording for this trial: every call fails.
    Replay {
        script: Option<Vec<Interaction>>,
        recorded_trials: usize,
    },
    Upstream {
        upstream: Arc<Upstream>,
        record: bool,
    },
}

/// The gateway of one trial.
#[derive(Clone)]
pub struct Gateway {
    task_id: String,
    trial: u32,
    source: Source,
    prices: Arc<Prices>,
    budget: Arc<Budget>,
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Gateway")
            .field("task_id", &self.task_id)
            .field("trial", &self.trial)
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// A gateway replaying `trial` of `cassette`.
    pub fn replay(cassette: &cassette::Cassette, trial: u32) -> Gateway {
        Gateway::with_source(
            &cassette.task_id,
            trial,
            Source::Replay {
                script: cassette
                    .trials
                    .get(trial as usize)
                    .map(|recording| recording.interactions.clone()),
                recorded_trials: cassette.trials.len(),
            },
        )
    }

    /// A gateway forwarding to the real provider; with `record`, it also keeps every exchange
    /// for the cassette ([`Gateway::recording`]).
    pub fn upstream(task_id: &str, trial: u32, upstream: Arc<Upstream>, record: bool) -> Gateway {
        Gateway::with_source(task_id, trial, Source::Upstream { upstream, record })
    }

    fn with_source(task_id: &str, trial: u32, source: Source) -> Gateway {
        Gateway {
            task_id: task_id.into(),
            trial,
            source,
            prices: Arc::default(),
            budget: Arc::new(Budget::new(None)),
            state: Arc::default(),
        }
    }

    /// Prices the calls and charges them to the run's budget.
    pub fn with_costs(mut self, prices: Arc<Prices>, budget: Arc<Budget>) -> Gateway {
        self.prices = prices;
        self.budget = budget;
        self
    }

    /// Every call answered or refused so far, in call order.
    pub fn calls(&self) -> Vec<ModelCall> {
        let mut calls = self.lock().calls.clone();
        calls.sort_by_key(|call| call.index);
        calls
    }

    /// The first failure, if any call could not be answered.
    pub fn failure(&self) -> Option<GatewayFailure> {
        self.lock().failure.clone()
    }

    /// The exchanges of this trial, in call order, for the cassette (empty unless recording).
    pub fn recording(&self) -> TrialRecording {
        let mut recording = self.lock().recording.clone();
        recording.sort_by_key(|(index, _)| *index);
        TrialRecording {
            interactions: recording
                .into_iter()
                .map(|(_, interaction)| interaction)
                .collect(),
        }
    }

    /// Waits for streams still being read from upstream (a harness that hung up mid-stream
    /// leaves one), at most a few seconds each, so that the log and the recording are whole.
    pub async fn settle(&self) {
        let streams = std::mem::take(&mut self.lock().streams);
        for stream in streams {
            let _ = tokio::time::timeout(SETTLE_LIMIT, stream).await;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A poisoned lock only means another request panicked; the log itself is still whole.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Answers one replayed request with a whole body: the next recorded response, or an
    /// error response and a recorded failure.
    pub fn answer(&self, path: &str, body: &[u8]) -> (u16, Value) {
        match self.replay_call(path, body) {
            Ok(response) => (response.status, response.body),
            Err(body) => (500, body),
        }
    }

    /// Answers any request, in whichever mode the gateway is.
    pub async fn respond(&self, request: HttpRequest) -> HttpResponse {
        // Once the run's money is spent, no further call is made, even inside a running trial.
        if self.budget.exhausted() {
            let mut state = self.lock();
            let call = state.next_call;
            state.next_call += 1;
            let failure = GatewayFailure::BudgetReached {
                task_id: self.task_id.clone(),
                trial: self.trial,
                call,
                spent: format!("{:.4}", self.budget.spent()),
                limit: self.budget.limit().unwrap_or_default().to_string(),
            };
            let request_body = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
            let body = refuse(&mut state, call, &request.path, request_body, failure);
            return HttpResponse::json(429, &body);
        }
        match &self.source {
            Source::Replay { .. } => match self.replay_call(&request.path, &request.body) {
                Ok(RecordedResponse {
                    status,
                    events: Some(events),
                    ..
                }) => {
                    let (sender, receiver) = mpsc::channel(events.len().max(1));
                    for event in events {
                        // The channel holds every event: this never waits or fails.
                        let _ = sender.try_send(Bytes::from(event));
                    }
                    HttpResponse {
                        status,
                        headers: vec![("content-type".into(), "text/event-stream".into())],
                        body: ResponseBody::Chunks(receiver),
                    }
                }
                Ok(response) => HttpResponse::json(response.status, &response.body),
                Err(body) => HttpResponse::json(500, &body),
            },
            Source::Upstream { upstream, record } => {
                self.forward(Arc::clone(upstream), *record, request).await
            }
        }
    }

    fn replay_call(&self, path: &str, body: &[u8]) -> Result<RecordedResponse, Value> {
        let Source::Replay {
            script,
            recorded_trials,
        } = &self.source
        else {
            return Err(json!({"error": {"message": "not a replaying gateway"}}));
        };
        let mut state = self.lock();
        let call = state.next_call;
        state.next_call += 1;
        let request: Value = match serde_json::from_slice(body) {
            Ok(value) => value,
            Err(error) => {
                let failure = GatewayFailure::NotJson {
                    task_id: self.task_id.clone(),
                    trial: self.trial,
                    call,
                    message: error.to_string(),
                };
                return Err(refuse(&mut state, call, path, Value::Null, failure));
            }
        };
        let outcome = match script {
            None => Err(GatewayFailure::NoTrial {
                task_id: self.task_id.clone(),
                trial: self.trial,
                recorded: *recorded_trials,
            }),
            Some(script) => match script.get(call) {
                None => Err(GatewayFailure::Exhausted {
                    task_id: self.task_id.clone(),
                    trial: self.trial,
                    call,
                    recorded: script.len(),
                }),
                Some(interaction) => {
                    let difference = if interaction.request.path != path {
                        Some(format!(
                            "path: recorded {}, got {path}",
                            interaction.request.path
                        ))
                    } else {
                        cassette::difference(&interaction.request.body, &request)
                    };
                    match difference {
                        Some(difference) => Err(GatewayFailure::Divergence {
                            task_id: self.task_id.clone(),
                            trial: self.trial,
                            call,
                            difference,
                        }),
                        None => Ok(interaction.response.clone()),
                    }
                }
            },
        };
        match outcome {
            Err(failure) => Err(refuse(&mut state, call, path, request, failure)),
            Ok(response) => {
                self.log(
                    &mut state,
                    Exchange {
                        call,
                        path: path.into(),
                        request,
                        response: response.clone(),
                    },
                    false,
                );
                Ok(response)
            }
        }
    }

    async fn forward(
        &self,
        upstream: Arc<Upstream>,
        record: bool,
        request: HttpRequest,
    ) -> HttpResponse {
        let call = {
            let mut state = self.lock();
            state.next_call += 1;
            state.next_call - 1
        };
        let request_value = serde_json::from_slice(&request.body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&request.body).into()));
        let response = match upstream
            .send(&request.path, &request.headers, &request.body)
            .await
        {
            Ok(response) => response,
            Err(error) => {
                let failure = GatewayFailure::Upstream {
                    task_id: self.task_id.clone(),
                    trial: self.trial,
                    call,
                    message: error.to_string(),
                };
                let body = refuse(
                    &mut self.lock(),
                    call,
                    &request.path,
                    request_value,
                    failure,
                );
                return HttpResponse::json(502, &body);
            }
        };
        let headers: Vec<(String, String)> = response
            .headers
            .iter()
            .filter(|(name, _)| !DROPPED_RESPONSE_HEADERS.contains(&name.as_str()))
            .cloned()
            .collect();
        let streamed = headers
            .iter()
            .any(|(name, value)| name == "content-type" && value.starts_with("text/event-stream"));
        let (status, retried, mut body) = (response.status, response.retried, response.body);
        let exchange = move |body: Value, events: Option<Vec<String>>| Exchange {
            call,
            path: request.path.clone(),
            request: request_value.clone(),
            response: RecordedResponse {
                status,
                body,
                events,
                retried: retried.clone(),
            },
        };
        if streamed {
            let (sender, receiver) = mpsc::channel(64);
            let gateway = self.clone();
            let reader = tokio::spawn(async move {
                let mut splitter = EventSplitter::default();
                while let Some(frame) = body.frame().await {
                    let Ok(frame) = frame else { break };
                    if let Ok(data) = frame.into_data() {
                        splitter.push(&data);
                        // The harness may have hung up; the stream is still read to the end
                        // so that the log and the cassette are whole.
                        let _ = sender.send(data).await;
                    }
                }
                drop(sender);
                let events = splitter.finish();
                let mut state = gateway.lock();
                gateway.log(&mut state, exchange(Value::Null, Some(events)), record);
            });
            self.lock().streams.push(reader);
            return HttpResponse {
                status,
                headers,
                body: ResponseBody::Chunks(receiver),
            };
        }
        let bytes = match body.collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(error) => {
                let failure = GatewayFailure::Upstream {
                    task_id: self.task_id.clone(),
                    trial: self.trial,
                    call,
                    message: format!("reading the answer failed: {error}"),
                };
                let exchange = exchange(Value::Null, None);
                let body = refuse(
                    &mut self.lock(),
                    call,
                    &exchange.path,
                    exchange.request,
                    failure,
                );
                return HttpResponse::json(502, &body);
            }
        };
        let value = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
        self.log(&mut self.lock(), exchange(value, None), record);
        HttpResponse {
            status,
            headers,
            body: ResponseBody::Whole(bytes.to_vec()),
        }
    }

    /// Logs an answered call (and records it when recording), counting its cost.
    fn log(&self, state: &mut State, exchange: Exchange, record: bool) {
        let Exchange {
            call,
            path,
            request,
            response,
        } = exchange;
        let tokens = match &response.events {
            Some(events) => usage::of_events(events),
            None => usage::of_body(&response.body),
        };
        let model = request["model"].as_str().unwrap_or_default().to_string();
        let cost_usd = self.cost(state, call, &model, tokens);
        state.calls.push(ModelCall {
            index: call,
            path: path.clone(),
            request: request.clone(),
            status: response.status,
            response: response.body.clone(),
            events: response.events.clone(),
            retried: response.retried.clone(),
            input_tokens: tokens.input,
            output_tokens: tokens.output,
            cost_usd,
        });
        if record {
            state.recording.push((
                call,
                Interaction {
                    request: RecordedRequest {
                        path,
                        body: request,
                    },
                    response,
                },
            ));
        }
    }

    fn cost(&self, state: &mut State, call: usize, model: &str, tokens: Tokens) -> Option<f64> {
        let cost = self.prices.cost(model, tokens);
        match cost {
            Some(usd) => self.budget.spend(usd),
            None if self.budget.limit().is_some() => {
                state.failure.get_or_insert(GatewayFailure::Unpriced {
                    task_id: self.task_id.clone(),
                    trial: self.trial,
                    call,
                    model: model.into(),
                });
            }
            None => {}
        }
        cost
    }
}

/// One answered call on its way to the log.
struct Exchange {
    call: usize,
    path: String,
    request: Value,
    response: RecordedResponse,
}

/// Cuts a byte stream into server-sent events (each ending with its blank line), whatever the
/// network's chunking.
#[derive(Default)]
struct EventSplitter {
    pending: Vec<u8>,
    events: Vec<String>,
}

impl EventSplitter {
    fn push(&mut self, data: &[u8]) {
        self.pending.extend_from_slice(data);
        while let Some(end) = event_end(&self.pending) {
            let event: Vec<u8> = self.pending.drain(..end).collect();
            self.events
                .push(String::from_utf8_lossy(&event).into_owned());
        }
    }

    fn finish(mut self) -> Vec<String> {
        if !self.pending.is_empty() {
            self.events
                .push(String::from_utf8_lossy(&self.pending).into_owned());
        }
        self.events
    }
}

/// The end (exclusive) of the first complete event: after `\n\n` or `\r\n\r\n`.
fn event_end(bytes: &[u8]) -> Option<usize> {
    let lf = bytes
        .windows(2)
        .position(|window| window == b"\n\n")
        .map(|at| at + 2);
    let crlf = bytes
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .map(|at| at + 4);
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn refuse(
    state: &mut State,
    call: usize,
    path: &str,
    request: Value,
    failure: GatewayFailure,
) -> Value {
    let body = json!({"error": {"type": "clawtest_gateway_error", "message": failure.to_string()}});
    state.calls.push(ModelCall {
        index: call,
        path: path.into(),
        request,
        status: 500,
        response: body.clone(),
        events: None,
        retried: Vec::new(),
        input_tokens: 0,
        output_tokens: 0,
        cost_usd: None,
    });
    state.failure.get_or_insert(failure);
    body
}

impl Handler for Gateway {
    fn handle(&self, request: HttpRequest) -> Reply<'_> {
        Box::pin(async move {
            if request.method != "POST" {
                return HttpResponse::json(
                    405,
                    &json!({"error": {"message": "the clawtest gateway accepts POST model calls only"}}),
                );
            }
            self.respond(request).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::cassette::Cassette;

    fn cassette() -> Cassette {
        let interaction = |content: &str, answer: &str| Interaction {
            request: RecordedRequest {
                path: "/v1/chat/completions".into(),
                body: json!({"messages": [{"role": "user", "content": content}]}),
            },
            response: RecordedResponse {
                status: 200,
                body: json!({"choices": [{"message": {"role": "assistant", "content": answer}}], "usage": {"prompt_tokens": 10, "completion_tokens": 3}}),
                events: None,
                retried: Vec::new(),
            },
        };
        Cassette {
            version: 1,
            task_id: "t".into(),
            trials: vec![TrialRecording {
                interactions: vec![interaction("hello", "hi")],
            }],
        }
    }

    fn ask(content: &str) -> Vec<u8> {
        json!({"model": "m", "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": content}]}).to_string().into_bytes()
    }

    #[test]
    fn calls_are_answered_in_order_and_counted() {
        let gateway = Gateway::replay(&cassette(), 0);
        let (status, body) = gateway.answer("/v1/chat/completions", &ask("hello"));
        assert_eq!(status, 200);
        assert_eq!(body["choices"][0]["message"]["content"], "hi");
        assert_eq!(gateway.calls()[0].input_tokens, 10);
        assert_eq!(gateway.failure(), None);
        let (status, _) = gateway.answer("/v1/chat/completions", &ask("again"));
        assert_eq!(status, 500);
        assert!(matches!(
            gateway.failure(),
            Some(GatewayFailure::Exhausted {
                call: 1,
                recorded: 1,
                ..
            })
        ));
    }

    #[test]
    fn a_different_request_is_a_divergence_naming_the_difference() {
        let gateway = Gateway::replay(&cassette(), 0);
        gateway.answer("/v1/chat/completions", &ask("goodbye"));
        let failure = gateway.failure().unwrap();
        assert_eq!(
            failure.to_string(),
            "task `t` trial 0 call 0: request diverges from the cassette: body.messages[-1].content: recorded \"hello\", got \"goodbye\""
        );
    }

    #[test]
    fn a_trial_without_recording_fails_every_call() {
        let gateway = Gateway::replay(&cassette(), 2);
        gateway.answer("/v1/chat/completions", &ask("hello"));
        assert!(matches!(
            gateway.failure(),
            Some(GatewayFailure::NoTrial {
                trial: 2,
                recorded: 1,
                ..
            })
        ));
    }

    #[test]
    fn events_are_cut_at_blank_lines_whatever_the_chunking() {
        let mut splitter = EventSplitter::default();
        splitter.push(b"data: 1\n");
        splitter.push(b"\ndata: 2\r\n\r\nda");
        splitter.push(b"ta: 3\n\n");
        assert_eq!(
            splitter.finish(),
            vec!["data: 1\n\n", "data: 2\r\n\r\n", "data: 3\n\n"]
        );
    }

    #[test]
    fn a_budget_with_an_unpriced_model_fails_the_call() {
        let gateway = Gateway::replay(&cassette(), 0)
            .with_costs(Arc::default(), Arc::new(Budget::new(Some(1.0))));
        gateway.answer("/v1/chat/completions", &ask("hello"));
        assert!(matches!(
            gateway.failure(),
            Some(GatewayFailure::Unpriced { model, .. }) if model == "m"
        ));
    }

    #[test]
    fn priced_calls_are_charged_to_the_budget() {
        let prices = Prices(std::collections::BTreeMap::from([(
            "m".to_string(),
            usage::Price {
                input_per_million: 1_000_000.0,
                output_per_million: 0.0,
            },
        )]));
        let budget = Arc::new(Budget::new(Some(5.0)));
        let gateway =
            Gateway::replay(&cassette(), 0).with_costs(Arc::new(prices), Arc::clone(&budget));
        gateway.answer("/v1/chat/completions", &ask("hello"));
        assert_eq!(gateway.calls()[0].cost_usd, Some(10.0));
        assert!(budget.exhausted());
        assert_eq!(gateway.failure(), None);
    }
}
