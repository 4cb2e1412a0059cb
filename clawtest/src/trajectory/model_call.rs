//! One model call as the trajectory records it: what the harness asked the gateway, what it
//! was answered, and what it cost. The gateway writes them; grading and reports read them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One model call as the trajectory records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelCall {
    /// 0-based position in the trial.
    pub index: usize,
    /// The request's path on the gateway (`/v1/chat/completions`, `/v1/messages`).
    pub path: String,
    /// The JSON body the harness sent.
    pub request: Value,
    /// The HTTP status the harness was answered (500 when the gateway refused the call).
    pub status: u16,
    /// The JSON answer (`null` when streamed: see `events`).
    pub response: Value,
    /// A streamed answer's server-sent events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<String>>,
    /// Statuses of upstream attempts retried before this answer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retried: Vec<u16>,
    /// Prompt tokens, as the answer's `usage` reports them (0 when it reports none).
    pub input_tokens: u64,
    /// Completion tokens, as the answer's `usage` reports them (0 when it reports none).
    pub output_tokens: u64,
    /// US dollars, from the price table; `None` when the model has no price.
    pub cost_usd: Option<f64>,
    /// The closed loop's simulated user made this call, not the harness.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub simulator: bool,
}
