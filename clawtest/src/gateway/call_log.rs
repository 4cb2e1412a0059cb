//! The call log: every answered call with its tokens and cost (charged to the run's
//! budget, priced from `[llm.prices]`), every refused call with the failure it records, and
//! when recording, the exchanges for the cassette (with the trial's own values as
//! placeholders). A refused call is answered in its provider's error shape with
//! `x-should-retry: false`, so the official SDKs neither retry it nor misreport it.

use serde_json::{Value, json};

use super::cassette::{Interaction, RecordedRequest, RecordedResponse};
use super::routes::Route;
use super::server::{Gateway, GatewayFailure, State};
use super::upstream::Provider;
use super::usage::{self, Tokens};
use crate::http::HttpResponse;
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
            simulator: state.simulator,
        });
        if record {
            let body = self.values.hide(&request);
            let response = RecordedResponse {
                body: self.values.hide(&response.body),
                events: response.events.map(|events| {
                    events
                        .iter()
                        .map(|event| self.values.hide_text(event))
                        .collect()
                }),
                ..response
            };
            state.recording.push((
                call,
                Interaction {
                    request: RecordedRequest {
                        path,
                        body,
                        whole: true,
                    },
                    response,
                    round: state.round,
                    simulator: state.simulator,
                },
            ));
        }
    }

    fn cost(&self, state: &mut State, call: usize, model: &str, tokens: Tokens) -> Option<f64> {
        let cost = self.prices.cost(model, tokens);
        match cost {
            Some(usd) => self.budget.spend(usd),
            None if self.budget.limit().is_some() => {
                state.fail(GatewayFailure::Unpriced {
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
/// trial's, and stops it); returns the error answer the harness gets.
pub(super) fn refuse(
    state: &mut State,
    call: usize,
    route: &Route,
    request: Value,
    failure: GatewayFailure,
) -> HttpResponse {
    let status = failure.status();
    let response = error_answer(route.provider, status, &failure.to_string());
    let body = serde_json::from_slice(match &response.body {
        crate::http::ResponseBody::Whole(bytes) => bytes,
        crate::http::ResponseBody::Chunks(_) => &[],
    })
    .unwrap_or(Value::Null);
    state.calls.push(ModelCall {
        index: call,
        path: route.path.clone(),
        request,
        status,
        response: body,
        events: None,
        retried: Vec::new(),
        input_tokens: 0,
        output_tokens: 0,
        cost_usd: None,
        simulator: state.simulator,
    });
    state.fail(failure);
    response
}

/// A request the gateway does not serve (no model endpoint): not a call, not forwarded.
pub(super) fn not_served(status: u16, message: &str) -> HttpResponse {
    error_answer(Provider::OpenAi, status, message)
}

/// An error answer in `provider`'s shape, marked as not worth retrying.
pub(super) fn error_answer(provider: Provider, status: u16, message: &str) -> HttpResponse {
    let kind = match status {
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        400..=499 => "invalid_request_error",
        _ => "api_error",
    };
    let body = match provider {
        Provider::OpenAi => {
            json!({"error": {"message": message, "type": kind, "param": null, "code": "clawtest_gateway_error"}})
        }
        Provider::Anthropic => {
            json!({"type": "error", "error": {"type": kind, "message": message}})
        }
    };
    let mut response = HttpResponse::json(status, &body);
    response
        .headers
        .push(("x-should-retry".into(), "false".into()));
    response
}
