//! An answered call on its way to the log ([`Exchange`]): its tokens read from the answer,
//! priced from `[llm.prices]` and charged to the run's budget (as money spent when a provider
//! answered it, at its recorded cost when it was replayed), and, when recording, kept for the
//! cassette with the trial's own values as placeholders.

use std::sync::Arc;

use serde_json::Value;

use super::call_log::CallLog;
use super::cassette::{Interaction, RecordedRequest, RecordedResponse};
use super::failure::FailureKind;
use super::routes::Route;
use super::server::{Gateway, Source};
use super::stale::StaleTrial;
use super::usage::{self, Tokens};
use crate::llm::money::Money;
use crate::trajectory::{ModelCall, Speaker};

impl Gateway {
    /// A call of `route` with `request` answered from outside the cassette (the judge cache
    /// of a suite recorded before the judge's calls were): logged as answered with `body`,
    /// nothing asked of the provider; recorded when the gateway records what it replays
    /// (`record-missing`, which so moves the answer into the cassette); and the trial noted
    /// stale with `reason`, so that `record-missing` writes it and `cassettes` names it.
    pub(crate) fn answered_elsewhere(
        &self,
        route: &Route,
        request: Value,
        body: Value,
        reason: &str,
    ) {
        let record = matches!(
            self.source,
            Source::Replay {
                fallback: Some(_),
                ..
            }
        );
        let mut log = self.lock();
        let call = log.next_call();
        let response = RecordedResponse {
            status: 200,
            body,
            events: None,
            retried: Vec::new(),
        };
        let exchange = Exchange {
            call,
            path: route.path.clone(),
            speaker: route.speaker,
            request,
            response,
        };
        self.log(&mut log, exchange, record);
        drop(log);
        self.stale.note(
            &self.task_id,
            StaleTrial {
                trial: self.trial,
                call,
                reason: reason.to_string(),
                diff: None,
            },
        );
    }

    /// Logs an answered call (and records it when recording), counting its cost.
    pub(super) fn log(&self, log: &mut CallLog, exchange: Exchange, record: bool) {
        let Exchange {
            call,
            path,
            speaker,
            request,
            response,
        } = exchange;
        let reported = match &response.events {
            Some(events) => usage::of_events(events),
            None => usage::of_body(&response.body),
        };
        let tokens = reported.unwrap_or_default();
        let model = request["model"].as_str().unwrap_or_default().to_string();
        let answered = (200..300).contains(&response.status);
        let spends = self.spends(log);
        if reported.is_none() && answered && spends {
            self.unreported(log, call, &model);
        }
        let cost_usd = self.cost(log, call, &model, tokens, spends);
        let request = Arc::new(request);
        let RecordedResponse {
            status,
            body,
            events,
            retried,
        } = response;
        let body = Arc::new(body);
        if record {
            // The cassette holds the trial's own values as placeholders: a copy of each side.
            let round = log.round();
            let response = RecordedResponse {
                status,
                body: self.values.hide(&body),
                events: events.as_ref().map(|events| {
                    events
                        .iter()
                        .map(|event| self.values.hide_text(event))
                        .collect()
                }),
                retried: retried.clone(),
            };
            log.record(
                call,
                Interaction {
                    request: RecordedRequest {
                        path: path.clone(),
                        body: self.values.hide(&request),
                        whole: true,
                    },
                    response,
                    round,
                    speaker,
                },
            );
        }
        log.push_call(ModelCall {
            index: call,
            path,
            request,
            status,
            response: body,
            events,
            retried,
            input_tokens: tokens.input,
            output_tokens: tokens.output,
            cost_usd,
            speaker,
        });
    }

    /// A provider's answer that reports no token usage: under a cost limit the trial fails
    /// (the limit could not be enforced); without one, the run warns at its end.
    fn unreported(&self, log: &mut CallLog, call: usize, model: &str) {
        if self.budget.limit().is_some() {
            log.fail(self.failure_at(
                call,
                FailureKind::NoUsage {
                    model: model.into(),
                },
            ));
        } else {
            self.budget.note_unreported(model);
        }
    }

    /// Prices a call and charges it to the budget: as money spent when a provider answered
    /// it, as its recorded cost only when it was replayed. A model without a price fails the
    /// call only when it spent money under a limit (a replay spends none).
    fn cost(
        &self,
        log: &mut CallLog,
        call: usize,
        model: &str,
        tokens: Tokens,
        spends: bool,
    ) -> Option<f64> {
        let cost = self.prices.cost(model, tokens);
        match cost {
            Some(money) => self.budget.charge(money, spends),
            None if spends && self.budget.limit().is_some() => {
                log.fail(self.failure_at(
                    call,
                    FailureKind::Unpriced {
                        model: model.into(),
                    },
                ));
            }
            None => {}
        }
        cost.map(Money::usd)
    }
}

/// One answered call on its way to the log.
pub(super) struct Exchange {
    pub(super) call: usize,
    pub(super) path: String,
    /// Who made the call.
    pub(super) speaker: Speaker,
    pub(super) request: Value,
    pub(super) response: RecordedResponse,
}
