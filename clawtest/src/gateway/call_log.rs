//! The call log: every answered call with its tokens and cost (charged to the run's
//! budget, priced from `[llm.prices]`), every refused call with the failure it records, and
//! when recording, the exchanges for the cassette.

use serde_json::{Value, json};

use super::cassette::{Interaction, RecordedRequest, RecordedResponse};
use super::server::{Gateway, GatewayFailure, State};
use super::usage::{self, Tokens};
use crate::trajectory::ModelCall;

impl Gateway {
    /// Logs an answered call (and records it when recording), counting its cost.
    pub(super) fn log(&self, state: &mut State, exchange: Exchange, record: bool) {
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
pub(super) struct Exchange {
    pub(super) call: usize,
    pub(super) path: String,
    pub(super) request: Value,
    pub(super) response: RecordedResponse,
}

/// Logs a call the gateway could not answer and keeps its failure (the first one is the
/// trial's); returns the error body the harness gets.
pub(super) fn refuse(
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
