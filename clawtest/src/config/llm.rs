//! `[llm]` of `clawtest.toml`, as read: the gateway's mode, providers, retries, cassettes,
//! prices and the replay's matching (`[llm.replay]`), each with its defaults.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

/// `[llm]`: the model gateway.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    /// Where model answers come from (default `replay`).
    #[serde(default)]
    pub mode: Mode,
    /// Folder of cassettes, relative to the suite root.
    #[serde(default = "default_cassettes")]
    pub cassettes: PathBuf,
    /// `[llm.openai]`: where `live`/`record` send chat-completions and responses calls.
    #[serde(default)]
    pub openai: Option<ProviderConfig>,
    /// `[llm.anthropic]`: where `live`/`record` send messages calls.
    #[serde(default)]
    pub anthropic: Option<ProviderConfig>,
    /// Prices per model (`[llm.prices."gpt-4o-mini"]`), for cost reports and `max_cost_usd`.
    #[serde(default)]
    pub prices: BTreeMap<String, Price>,
    /// Stop starting trials once the run's model calls cost this much (US dollars).
    #[serde(default)]
    pub max_cost_usd: Option<f64>,
    /// Extra attempts on an upstream 429 or 5xx.
    #[serde(default = "default_retries")]
    pub retries: u32,
    /// Delay before the first retry, doubled before each further one.
    #[serde(default = "default_backoff")]
    pub retry_backoff_ms: u64,
    /// The largest request body the gateway reads (bytes); a larger one is answered 413.
    #[serde(default = "default_body_limit")]
    pub max_request_bytes: usize,
    /// The largest answer the gateway records or logs (bytes, whole or streamed); a larger
    /// one is passed to the harness but fails the trial, with no cassette written.
    #[serde(default = "default_body_limit")]
    pub max_answer_bytes: usize,
    /// `[llm.replay]`: how replayed requests are matched against the recording.
    #[serde(default)]
    pub replay: ReplayConfig,
}

/// `[llm.replay]`: the normalisation both sides of a replay comparison go through
/// (docs/cassettes.md).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ReplayConfig {
    /// Apply the built-in redactions (timestamps, dates, uuids) and ignored fields (`user`,
    /// `metadata.user_id`, `prompt_cache_key`, `safety_identifier`); default true.
    #[serde(default = "yes")]
    pub defaults: bool,
    /// More redactions: every match of `pattern` (a regular expression) in any string of
    /// either body is replaced by `replacement` before comparing.
    #[serde(default)]
    pub redactions: Vec<Redaction>,
    /// Fields left out of the comparison, as dotted paths where `*` is any key or item
    /// (`metadata.session_id`, `messages.*.id`).
    #[serde(default)]
    pub ignore_fields: Vec<String>,
}

impl Default for ReplayConfig {
    fn default() -> ReplayConfig {
        ReplayConfig {
            defaults: true,
            redactions: Vec::new(),
            ignore_fields: Vec::new(),
        }
    }
}

/// One redaction of `[llm.replay]`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Redaction {
    /// A regular expression (Rust `regex` syntax).
    pub pattern: String,
    /// What each match becomes (`$1` names a group).
    #[serde(default)]
    pub replacement: String,
}

fn yes() -> bool {
    true
}

fn default_body_limit() -> usize {
    32 * 1024 * 1024
}

/// One provider for `live` and `record` mode.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// e.g. `http://127.0.0.1:8080`; the harness's `/v1/...` path is appended.
    pub base_url: String,
    /// The NAME of the host variable holding the API key (never the key itself).
    #[serde(default)]
    pub api_key_env: Option<String>,
}

impl Default for LlmConfig {
    fn default() -> LlmConfig {
        LlmConfig {
            mode: Mode::default(),
            cassettes: default_cassettes(),
            openai: None,
            anthropic: None,
            prices: Default::default(),
            max_cost_usd: None,
            retries: default_retries(),
            retry_backoff_ms: default_backoff(),
            max_request_bytes: default_body_limit(),
            max_answer_bytes: default_body_limit(),
            replay: ReplayConfig::default(),
        }
    }
}

fn default_retries() -> u32 {
    3
}

fn default_backoff() -> u64 {
    500
}

fn default_cassettes() -> PathBuf {
    PathBuf::from("cassettes")
}

/// Where model answers come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Forward to the real provider.
    Live,
    /// Forward to the real provider and write every exchange to a cassette.
    Record,
    /// Answer from the cassette; free and deterministic (the CI default).
    #[default]
    Replay,
    /// Replay every task whose cassette still answers it; a task whose cassette is missing,
    /// or cannot answer a call (a request that diverges, a call or trial more than recorded),
    /// is forwarded to the provider from that call on and its cassette written again (VCR's
    /// `new_episodes`, by task). A second run records nothing.
    #[serde(rename = "record-missing", alias = "record_missing")]
    RecordMissing,
}

impl std::str::FromStr for Mode {
    type Err = super::choice::UnknownChoice;

    fn from_str(text: &str) -> Result<Mode, Self::Err> {
        match text {
            "live" => Ok(Mode::Live),
            "record" => Ok(Mode::Record),
            "replay" => Ok(Mode::Replay),
            "record-missing" | "record_missing" => Ok(Mode::RecordMissing),
            other => Err(super::choice::UnknownChoice {
                value: other.to_owned(),
                kind: "mode",
                choices: "live, record, record-missing or replay",
            }),
        }
    }
}

impl Mode {
    /// The mode as `llm.mode` spells it, for messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::Live => "live",
            Mode::Record => "record",
            Mode::Replay => "replay",
            Mode::RecordMissing => "record-missing",
        }
    }

    /// The mode writes cassettes (`record`, `record-missing`).
    pub fn records(self) -> bool {
        matches!(self, Mode::Record | Mode::RecordMissing)
    }
}

/// The price of one model, in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// US dollars per million input (prompt) tokens.
    pub input_per_million: f64,
    /// US dollars per million output (completion) tokens.
    pub output_per_million: f64,
}

/// Which wire format (and so which provider) a model call speaks: the one name for it, in the
/// configuration (`[judge] provider`, `[generate] provider`) and in the gateway's routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Provider {
    /// `openai`: OpenAI's chat completions API (`/v1/chat/completions`, and `/v1/responses`),
    /// or any server that speaks it.
    #[serde(rename = "openai")]
    OpenAi,
    /// `anthropic`: Anthropic's messages API (`/v1/messages`).
    #[serde(rename = "anthropic")]
    Anthropic,
}

impl Provider {
    /// The provider's name in the configuration (`[llm.openai]`, `[llm.anthropic]`).
    pub fn name(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
        }
    }
}
