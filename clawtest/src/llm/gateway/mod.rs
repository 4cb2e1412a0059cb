//! The model gateway: the LLM endpoint the harness talks to (docs/gateway.md). One gateway per
//! trial, in one of four modes: `replay` answers from cassettes, `live` forwards to the real
//! provider (holding the key), `record` forwards and writes cassettes, `record-missing`
//! replays until the cassette cannot answer and records from there. Every mode logs each
//! call with its tokens and cost; the run's budget stops new trials once spent.
//!
//! A replay that cannot answer (no cassette, a missing call, a request that differs from the
//! recorded one) is an infrastructure error of the trial, which stops at that call: never a
//! silent live call, never a made-up answer. The matching model (placeholders for the
//! trial's own values, normalisation of volatile text, which fields count) is documented in
//! `docs/cassettes.md`. Only model endpoints are served (`routes.rs`).

mod call_log;
pub mod cassette;
mod exchange;
mod failure;
mod forward;
mod matching;
mod placeholders;
pub(crate) mod recorder;
mod replay;
pub(crate) mod routes;
pub mod scripted;
pub(crate) mod server;
mod sse;
pub mod stale;
pub mod upstream;
pub mod usage;

#[cfg(test)]
mod tests;

pub use cassette::{Cassette, CassetteError, Interaction};
pub(crate) use failure::GatewayFailure;
pub(crate) use placeholders::TrialValues;
pub(crate) use recorder::Recorder;
pub(crate) use server::{Gateway, Rules};
pub use stale::{StaleLog, StaleTrial};
pub use upstream::{Endpoint, RetryPolicy, Upstream, UpstreamError};
pub use usage::{Budget, Prices};
