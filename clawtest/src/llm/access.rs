//! [`ModelAccess`]: where a run's model answers come from (cassettes, or the real provider) and
//! what they may cost (the prices, the run's budget), with the rules every gateway matches
//! and limits calls by. Built once per run (or generation) and shared by all its gateways.

use std::sync::Arc;

use super::gateway::{Budget, Prices, Rules, Upstream};
use crate::config::{Mode, Provider};

/// Where model answers come from, and what they may cost.
pub(crate) struct ModelAccess {
    /// `llm.mode`: replay from cassettes, call the provider, or call it and record.
    pub(crate) mode: Mode,
    /// The real provider, in `live` and `record` mode.
    pub(crate) upstream: Option<Arc<Upstream>>,
    /// `[llm.prices]`: what each model's tokens cost, for the calls' `cost_usd`.
    pub(crate) prices: Arc<Prices>,
    /// Shared by every gateway of the run and the judge; once spent, no further call is made
    /// and no trial starts.
    pub(crate) budget: Arc<Budget>,
    /// How replays match and how much the gateways read (`[llm.replay]`, the byte limits).
    pub(crate) rules: Arc<Rules>,
    /// The wire format of the closed loop's simulated user (`simulator: llm`): Anthropic's
    /// when `[llm.anthropic]` is the only provider configured, else OpenAI's.
    pub(crate) simulator_provider: Provider,
}
