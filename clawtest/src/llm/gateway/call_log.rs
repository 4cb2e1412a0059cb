//! The call log of one trial's gateway ([`CallLog`]): every call answered or refused, in call
//! order, the first failure (which stops the trial), the exchanges kept for the cassette when
//! recording, the closed loop's round and the replay counters per round and speaker, and the streams still being
//! read. Its state is private: the gateway's files change it through its methods. A refused
//! call is answered in its provider's error shape with `x-should-retry: false`, so the
//! official SDKs neither retry it nor misreport it.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::cassette::{Interaction, TrialRecording};
use super::failure::GatewayFailure;
use super::routes::Route;
use crate::config::Provider;
use crate::http::HttpResponse;
use crate::trajectory::{ModelCall, Speaker};

/// What a trial's gateway has seen so far, shared by its requests (behind its lock).
#[derive(Debug)]
pub(super) struct CallLog {
    next_call: usize,
    calls: Vec<ModelCall>,
    recording: Vec<(usize, Interaction)>,
    failure: Option<GatewayFailure>,
    /// Streams still being read from upstream (see `Gateway::settle`).
    streams: Vec<JoinHandle<()>>,
    /// The closed-loop round the calls belong to (`None`: a task without rounds).
    round: Option<u32>,
    /// The calls replayed so far per round (`None`: a task without rounds) and speaker.
    replayed: BTreeMap<(Option<u32>, Speaker), usize>,
    /// Becomes true with the first failure: the trial is stopped there.
    failed: watch::Sender<bool>,
    /// The calls answered from the cassette so far.
    answered_from_cassette: usize,
    /// `record-missing`: the cassette could not answer a call, and the trial turned to the
    /// provider from there.
    switched: bool,
}

impl Default for CallLog {
    fn default() -> CallLog {
        CallLog {
            next_call: 0,
            calls: Vec::new(),
            recording: Vec::new(),
            failure: None,
            streams: Vec::new(),
            round: None,
            replayed: BTreeMap::new(),
            failed: watch::channel(false).0,
            answered_from_cassette: 0,
            switched: false,
        }
    }
}

impl CallLog {
    /// The number of the call that arrives now (from 0); the next one gets the next number.
    pub(super) fn next_call(&mut self) -> usize {
        self.next_call += 1;
        self.next_call - 1
    }

    /// Keeps `failure` unless an earlier one is kept, and asks for the trial to stop.
    pub(super) fn fail(&mut self, failure: GatewayFailure) {
        self.failure.get_or_insert(failure);
        self.failed.send_replace(true);
    }

    /// The first failure, if any.
    pub(super) fn failure(&self) -> Option<&GatewayFailure> {
        self.failure.as_ref()
    }

    /// Becomes true at the first failure.
    pub(super) fn failed(&self) -> watch::Receiver<bool> {
        self.failed.subscribe()
    }

    /// Keeps a call, answered or refused.
    pub(super) fn push_call(&mut self, call: ModelCall) {
        self.calls.push(call);
    }

    /// How many calls were answered or refused so far.
    pub(super) fn call_count(&self) -> usize {
        self.calls.len()
    }

    /// Every call so far, in call order.
    pub(super) fn calls(&self) -> Vec<ModelCall> {
        let mut calls = self.calls.clone();
        calls.sort_by_key(|call| call.index);
        calls
    }

    /// Keeps call `call`'s exchange for the cassette.
    pub(super) fn record(&mut self, call: usize, interaction: Interaction) {
        self.recording.push((call, interaction));
    }

    /// The exchanges kept, in call order.
    pub(super) fn recording(&self) -> TrialRecording {
        let mut recording = self.recording.clone();
        recording.sort_by_key(|(index, _)| *index);
        TrialRecording {
            interactions: recording
                .into_iter()
                .map(|(_, interaction)| interaction)
                .collect(),
        }
    }

    /// Counts a call answered from the cassette.
    pub(super) fn answered_from_cassette_once_more(&mut self) {
        self.answered_from_cassette += 1;
    }

    /// The calls answered from the cassette so far.
    pub(super) fn answered_from_cassette(&self) -> usize {
        self.answered_from_cassette
    }

    /// From now on the trial's calls go to the provider (`record-missing`).
    pub(super) fn switch(&mut self) {
        self.switched = true;
    }

    /// The trial turned to the provider.
    pub(super) fn switched(&self) -> bool {
        self.switched
    }

    /// The closed-loop round the calls belong to now.
    pub(super) fn round(&self) -> Option<u32> {
        self.round
    }

    /// Starts round `number`: the calls from now on belong to it.
    pub(super) fn begin_round(&mut self, number: u32) {
        self.round = Some(number);
    }

    /// The number, within the current round (or the whole trial, without rounds), of
    /// `speaker`'s call that arrives now (from 0).
    pub(super) fn next_of(&mut self, speaker: Speaker) -> usize {
        let counter = self.replayed.entry((self.round, speaker)).or_default();
        *counter += 1;
        *counter - 1
    }

    /// Keeps a stream still being read from upstream, for `Gateway::settle`.
    pub(super) fn keep_stream(&mut self, stream: JoinHandle<()>) {
        self.streams.push(stream);
    }

    /// The streams still being read, handed over to be waited for.
    pub(super) fn take_streams(&mut self) -> Vec<JoinHandle<()>> {
        std::mem::take(&mut self.streams)
    }
}

/// Logs a call the gateway could not answer and keeps its failure (the first one is the
/// trial's, and stops it); returns the error answer the harness gets.
pub(super) fn refuse(
    log: &mut CallLog,
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
    log.push_call(ModelCall {
        index: call,
        path: route.path.clone(),
        request: request.into(),
        status,
        response: body.into(),
        events: None,
        retried: Vec::new(),
        input_tokens: 0,
        output_tokens: 0,
        cost_usd: None,
        speaker: route.speaker,
    });
    log.fail(failure);
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
