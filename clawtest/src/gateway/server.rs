//! One trial's gateway: answers the harness's model calls in order from the trial's recorded
//! interactions, logs every call, and remembers the first failure so the executor can turn
//! the trial into an infrastructure error that says exactly what went wrong.

use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::{Value, json};

use super::cassette::{self, Interaction};
use crate::http::{Handler, HttpRequest, HttpResponse, Reply};

/// One model call as the trajectory records it.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct ModelCall {
    /// 0-based position in the trial.
    pub index: usize,
    pub path: String,
    pub request: Value,
    pub status: u16,
    pub response: Value,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

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
}

#[derive(Debug, Default)]
struct State {
    calls: Vec<ModelCall>,
    failure: Option<GatewayFailure>,
}

/// A replaying gateway for one trial.
#[derive(Debug, Clone)]
pub struct Gateway {
    task_id: String,
    trial: u32,
    /// `None` when the cassette has no recording for this trial: every call fails.
    script: Option<Vec<Interaction>>,
    recorded_trials: usize,
    state: Arc<Mutex<State>>,
}

impl Gateway {
    /// A gateway replaying `trial` of `cassette`.
    pub fn replay(cassette: &cassette::Cassette, trial: u32) -> Gateway {
        Gateway {
            task_id: cassette.task_id.clone(),
            trial,
            script: cassette
                .trials
                .get(trial as usize)
                .map(|recording| recording.interactions.clone()),
            recorded_trials: cassette.trials.len(),
            state: Arc::default(),
        }
    }

    /// Every call answered or refused so far.
    pub fn calls(&self) -> Vec<ModelCall> {
        self.lock().calls.clone()
    }

    /// The first failure, if any call could not be answered.
    pub fn failure(&self) -> Option<GatewayFailure> {
        self.lock().failure.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A poisoned lock only means another request panicked; the log itself is still whole.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Answers one request: the next recorded response, or an error response and a recorded
    /// failure.
    pub fn answer(&self, path: &str, body: &[u8]) -> (u16, Value) {
        let mut state = self.lock();
        let call = state.calls.len();
        let request: Value = match serde_json::from_slice(body) {
            Ok(value) => value,
            Err(error) => {
                let failure = GatewayFailure::NotJson {
                    task_id: self.task_id.clone(),
                    trial: self.trial,
                    call,
                    message: error.to_string(),
                };
                return refuse(&mut state, call, path, Value::Null, failure);
            }
        };
        let outcome = match &self.script {
            None => Err(GatewayFailure::NoTrial {
                task_id: self.task_id.clone(),
                trial: self.trial,
                recorded: self.recorded_trials,
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
            Err(failure) => refuse(&mut state, call, path, request, failure),
            Ok(response) => {
                let (input_tokens, output_tokens) = usage(&response.body);
                state.calls.push(ModelCall {
                    index: call,
                    path: path.into(),
                    request,
                    status: response.status,
                    response: response.body.clone(),
                    input_tokens,
                    output_tokens,
                });
                (response.status, response.body)
            }
        }
    }
}

fn refuse(
    state: &mut State,
    call: usize,
    path: &str,
    request: Value,
    failure: GatewayFailure,
) -> (u16, Value) {
    let body = json!({"error": {"type": "clawtest_replay_error", "message": failure.to_string()}});
    state.calls.push(ModelCall {
        index: call,
        path: path.into(),
        request,
        status: 500,
        response: body.clone(),
        input_tokens: 0,
        output_tokens: 0,
    });
    state.failure.get_or_insert(failure);
    (500, body)
}

/// Token counts from an OpenAI (`prompt_tokens`/`completion_tokens`) or Anthropic
/// (`input_tokens`/`output_tokens`) usage block.
fn usage(body: &Value) -> (u64, u64) {
    let usage = &body["usage"];
    let count = |names: [&str; 2]| {
        names
            .iter()
            .find_map(|name| usage[*name].as_u64())
            .unwrap_or(0)
    };
    (
        count(["prompt_tokens", "input_tokens"]),
        count(["completion_tokens", "output_tokens"]),
    )
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
            let (status, body) = self.answer(&request.path, &request.body);
            HttpResponse::json(status, &body)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::cassette::{Cassette, RecordedRequest, RecordedResponse, TrialRecording};

    fn cassette() -> Cassette {
        let interaction = |content: &str, answer: &str| Interaction {
            request: RecordedRequest {
                path: "/v1/chat/completions".into(),
                body: json!({"messages": [{"role": "user", "content": content}]}),
            },
            response: RecordedResponse {
                status: 200,
                body: json!({"choices": [{"message": {"role": "assistant", "content": answer}}], "usage": {"prompt_tokens": 10, "completion_tokens": 3}}),
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
}
