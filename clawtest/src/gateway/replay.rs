//! Replay: a trial's model calls answered, in order, from the cassette's recorded
//! interactions for that trial. A call the recording cannot answer (no recording for the
//! trial, more calls than recorded, a request that differs from the recorded one) is
//! refused and remembered as the trial's failure: never a silent live call, never a
//! made-up answer.

use hyper::body::Bytes;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::call_log::{Exchange, refuse};
use super::cassette::{self, RecordedResponse};
use super::server::{Gateway, GatewayFailure, Source};
use crate::http::{HttpRequest, HttpResponse, ResponseBody};

impl Gateway {
    /// Answers one replayed request with a whole body: the next recorded response, or an
    /// error response and a recorded failure.
    #[cfg(test)]
    pub(crate) fn answer(&self, path: &str, body: &[u8]) -> (u16, Value) {
        match self.replay_call(path, body) {
            Ok(response) => (response.status, response.body),
            Err(body) => (500, body),
        }
    }

    /// Answers a replayed request: the recorded answer whole, or its server-sent events as
    /// a stream.
    pub(super) fn replay_response(&self, request: &HttpRequest) -> HttpResponse {
        match self.replay_call(&request.path, &request.body) {
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
        }
    }

    /// The recorded response for the next call, or (the call refused and its failure kept)
    /// the error body to answer with.
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
}
