//! [`ModelAccess`]: where a run's model answers come from (cassettes, or the real provider) and
//! what they may cost (the prices, the run's budget), with the rules every gateway matches
//! and limits calls by. Built once per run (or generation) and shared by all its gateways.

use std::sync::Arc;

use super::gateway::{
    Budget, Endpoint, Prices, RetryPolicy, Rules, StaleLog, Upstream, UpstreamError,
};
use crate::config::{Config, ConfigError, Mode, Provider, ProviderConfig};

/// Why the configuration gives no model access.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum AccessError {
    /// The configuration cannot be used.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Config(#[from] ConfigError),
    /// `live` or `record` mode without a provider to call; holds the mode's name.
    #[error(
        "llm.mode = \"{0}\" needs a provider, and neither [llm.openai] nor [llm.anthropic] is configured"
    )]
    #[diagnostic(help(
        "add `[llm.openai]` with `base_url` and `api_key_env` (the NAME of the variable holding the key), or run with mode = \"replay\""
    ))]
    NoProvider(&'static str),
    /// The provider's `api_key_env` names a variable that is not set.
    #[error("llm.{provider}.api_key_env names `{variable}`, which is not set in the environment")]
    #[diagnostic(help(
        "export {variable}=... before running, or remove api_key_env to send no key"
    ))]
    MissingKey {
        /// `openai` or `anthropic`.
        provider: &'static str,
        /// The variable's name.
        variable: String,
    },
    /// A provider's `base_url` cannot be used.
    #[error("llm.{0}")]
    #[diagnostic(help(
        "set base_url to the http:// or https:// address of the provider, e.g. https://api.openai.com"
    ))]
    Upstream(#[from] UpstreamError),
}

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
    /// The trials whose cassette no longer answers them, noted by the replaying gateways.
    pub(crate) stale: Arc<StaleLog>,
}

impl ModelAccess {
    /// The model access `[llm]` describes in `mode`: the provider client in `live`/`record`
    /// mode (keys read from the variables the configuration names), the price table, a budget
    /// with `max_cost_usd` as its limit, and the matching rules.
    pub(crate) fn from_config(
        config: &Config,
        mode: Mode,
        max_cost_usd: Option<f64>,
    ) -> Result<ModelAccess, AccessError> {
        let llm = &config.llm;
        let upstream = match mode {
            Mode::Replay => None,
            Mode::Live | Mode::Record | Mode::RecordMissing => {
                if llm.openai.is_none() && llm.anthropic.is_none() {
                    return Err(AccessError::NoProvider(mode.name()));
                }
                let retry = RetryPolicy {
                    retries: llm.retries,
                    backoff: std::time::Duration::from_millis(llm.retry_backoff_ms),
                };
                Some(Arc::new(Upstream::new(
                    endpoint("openai", &llm.openai)?,
                    endpoint("anthropic", &llm.anthropic)?,
                    retry,
                )?))
            }
        };
        Ok(ModelAccess {
            mode,
            upstream,
            prices: Arc::new(Prices(llm.prices.clone())),
            budget: Arc::new(Budget::new(max_cost_usd)),
            // The configuration's checks already tried every pattern.
            rules: Arc::new(
                Rules::from_config(llm).map_err(|message| ConfigError::Value {
                    origin: config.origin.clone(),
                    field: "llm.replay".into(),
                    message,
                })?,
            ),
            simulator_provider: match (&llm.openai, &llm.anthropic) {
                (None, Some(_)) => Provider::Anthropic,
                _ => Provider::OpenAi,
            },
            stale: Arc::default(),
        })
    }
}

/// The endpoint `[llm.<provider>]` describes, its key read from the variable it names.
fn endpoint(
    provider: &'static str,
    settings: &Option<ProviderConfig>,
) -> Result<Option<Endpoint>, AccessError> {
    let Some(settings) = settings else {
        return Ok(None);
    };
    let api_key =
        match &settings.api_key_env {
            None => None,
            Some(variable) => Some(crate::config::secrets::var(variable).ok_or_else(|| {
                AccessError::MissingKey {
                    provider,
                    variable: variable.clone(),
                }
            })?),
        };
    Ok(Some(Endpoint {
        base_url: settings.base_url.clone(),
        api_key,
    }))
}
