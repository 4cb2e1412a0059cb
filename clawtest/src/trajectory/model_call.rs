//! One model call as the trajectory records it: who asked ([`Speaker`]), what was asked of
//! the gateway, what was answered, and what it cost. The gateway writes them; grading and
//! reports read them.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who made a model call. Every model call of a trial goes through its gateway; each speaker's
/// calls are logged, priced and charged alike, recorded with their speaker, and replayed in
/// that speaker's own call order (within a closed loop's round), so that one speaker calling
/// once more or once less than recorded never takes another's answer.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Speaker {
    /// The agent under test, over HTTP.
    #[default]
    Harness,
    /// A closed loop's simulated user (`feedback.simulator: llm`).
    SimulatedUser,
    /// A closed loop's model supervisor (`supervisor: model`).
    Supervisor,
    /// The judge answering the trial's `llm_judge` rubrics.
    Judge,
}

impl Speaker {
    /// The speaker's name as files spell it (`simulated_user`).
    pub fn name(self) -> &'static str {
        match self {
            Speaker::Harness => "harness",
            Speaker::SimulatedUser => "simulated_user",
            Speaker::Supervisor => "supervisor",
            Speaker::Judge => "judge",
        }
    }

    /// The speaker in a sentence (`the simulated user`).
    pub fn described(self) -> &'static str {
        match self {
            Speaker::Harness => "the harness",
            Speaker::SimulatedUser => "the simulated user",
            Speaker::Supervisor => "the supervisor",
            Speaker::Judge => "the judge",
        }
    }

    /// The harness: the speaker files leave unnamed.
    pub fn is_harness(&self) -> bool {
        *self == Speaker::Harness
    }
}

/// One model call as the trajectory records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "ModelCallFile")]
pub struct ModelCall {
    /// 0-based position in the trial.
    pub index: usize,
    /// The request's path on the gateway (`/v1/chat/completions`, `/v1/messages`).
    pub path: String,
    /// The JSON body the speaker sent. Shared: the gateway's log, the trajectory of each round
    /// and the grade's evidence hold one call's conversation without copying it.
    pub request: Arc<Value>,
    /// The HTTP status the speaker was answered (500 when the gateway refused the call).
    pub status: u16,
    /// The JSON answer (`null` when streamed: see `events`); shared as `request` is.
    pub response: Arc<Value>,
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
    /// Who made the call (absent: the harness).
    #[serde(default, skip_serializing_if = "Speaker::is_harness")]
    pub speaker: Speaker,
}

/// A saved model call as read: [`ModelCall`], and `simulator: true`, which trajectories saved
/// before speakers had names wrote for the simulated user's calls.
#[derive(Deserialize)]
struct ModelCallFile {
    index: usize,
    path: String,
    request: Value,
    status: u16,
    response: Value,
    #[serde(default)]
    events: Option<Vec<String>>,
    #[serde(default)]
    retried: Vec<u16>,
    input_tokens: u64,
    output_tokens: u64,
    cost_usd: Option<f64>,
    #[serde(default)]
    speaker: Speaker,
    #[serde(default)]
    simulator: bool,
}

impl From<ModelCallFile> for ModelCall {
    fn from(file: ModelCallFile) -> ModelCall {
        ModelCall {
            index: file.index,
            path: file.path,
            request: Arc::new(file.request),
            status: file.status,
            response: Arc::new(file.response),
            events: file.events,
            retried: file.retried,
            input_tokens: file.input_tokens,
            output_tokens: file.output_tokens,
            cost_usd: file.cost_usd,
            speaker: match file.simulator {
                true => Speaker::SimulatedUser,
                false => file.speaker,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn saved(extra: Value) -> Value {
        let mut call = json!({"index": 0, "path": "/v1/messages", "request": {}, "status": 200,
            "response": {}, "input_tokens": 1, "output_tokens": 2, "cost_usd": null});
        call.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        call
    }

    #[test]
    fn a_speaker_is_written_by_name_and_the_harness_is_left_out() {
        let mut call: ModelCall = serde_json::from_value(saved(json!({}))).unwrap();
        assert_eq!(call.speaker, Speaker::Harness);
        assert!(
            serde_json::to_value(&call)
                .unwrap()
                .get("speaker")
                .is_none()
        );
        call.speaker = Speaker::Supervisor;
        let written = serde_json::to_value(&call).unwrap();
        assert_eq!(written["speaker"], "supervisor");
        assert_eq!(serde_json::from_value::<ModelCall>(written).unwrap(), call);
    }

    #[test]
    fn an_older_trajectorys_simulator_mark_reads_as_the_simulated_user() {
        let call: ModelCall = serde_json::from_value(saved(json!({"simulator": true}))).unwrap();
        assert_eq!(call.speaker, Speaker::SimulatedUser);
    }
}
