//! Why the gateway could not answer a call: where ([`GatewayFailure`]: the task, the trial and
//! the call) and what ([`FailureKind`]). The first failure of a trial stops it; the executor
//! turns it into an infrastructure error (or, for the cost limit, a trial not run) that says
//! exactly what went wrong.

use serde::Serialize;

use crate::trajectory::Speaker;

/// A call the gateway could not answer, and where it was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct GatewayFailure {
    /// The task (or the cassette, for generation and the judge) the call belongs to.
    pub(crate) task_id: String,
    /// The trial (generation's stage).
    pub(crate) trial: u32,
    /// The call's number in the trial, from 0.
    pub(crate) call: usize,
    /// What went wrong.
    pub(crate) kind: FailureKind,
}

/// What went wrong with a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub(crate) enum FailureKind {
    /// A speaker made more calls than the cassette records of it for the trial.
    #[error("the cassette records only {recorded} call(s) of {} for this trial", speaker.described())]
    Exhausted {
        speaker: Speaker,
        /// The call's number among the speaker's, from 0.
        number: usize,
        recorded: usize,
    },
    /// A closed loop's round made more calls of one speaker than the cassette records.
    #[error("the cassette records only {recorded} such call(s) for this round")]
    RoundExhausted {
        round: u32,
        speaker: Speaker,
        /// The call's number within the round and speaker, from 0.
        in_round: usize,
        recorded: usize,
    },
    /// The cassette records fewer trials than the trial's number.
    #[error("the cassette has no recording for this trial (it records {recorded} trial(s))")]
    NoTrial { recorded: usize },
    /// The task has no cassette; the message says where it was looked for.
    #[error("{message}")]
    NoCassette { message: String },
    #[error("request diverges from the cassette: {difference}")]
    Divergence { difference: String },
    #[error("the request body is not JSON: {message}")]
    NotJson { message: String },
    /// The answer cannot be recorded or replayed as the harness asked for it.
    #[error("{message}")]
    Unrecordable { message: String },
    #[error("{message}")]
    Upstream { message: String },
    /// A streamed answer that broke off or ended without its terminator: passed on to the
    /// harness as it came, never recorded.
    #[error("{message}: it is incomplete, so it was passed on but not recorded")]
    Incomplete { message: String },
    #[error("the cost limit of ${limit} was reached ({spent} spent), so the call was not made")]
    BudgetReached {
        /// US dollars as shown (`$0.0012`: the failure compares whole; floats would not).
        spent: String,
        limit: String,
    },
    #[error("model `{model}` has no price in [llm.prices], so the cost limit cannot be enforced")]
    Unpriced { model: String },
    #[error(
        "the answer of model `{model}` reports no token usage, so the cost limit cannot be enforced; ask for it (OpenAI streams: `\"stream_options\": {{\"include_usage\": true}}`) or remove the limit"
    )]
    NoUsage { model: String },
}

impl std::fmt::Display for GatewayFailure {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let GatewayFailure {
            task_id,
            trial,
            call,
            kind,
        } = self;
        match kind {
            FailureKind::Exhausted {
                speaker: Speaker::Harness,
                number,
                recorded,
            } => write!(
                formatter,
                "task `{task_id}` trial {trial}: the harness made model call {number} but the cassette records only {recorded} call(s) for this trial"
            ),
            FailureKind::Exhausted {
                speaker,
                number,
                recorded,
            } => write!(
                formatter,
                "task `{task_id}` trial {trial}: {} made its model call {number} but the cassette records only {recorded} such call(s) for this trial",
                speaker.described()
            ),
            FailureKind::RoundExhausted {
                round,
                speaker,
                in_round,
                recorded,
            } => write!(
                formatter,
                "task `{task_id}` trial {trial} round {round}: {} made model call {in_round} of the round but the cassette records only {recorded} such call(s) for this round",
                speaker.described()
            ),
            FailureKind::NoTrial { .. } => {
                write!(formatter, "task `{task_id}` trial {trial}: {kind}")
            }
            _ => write!(
                formatter,
                "task `{task_id}` trial {trial} call {call}: {kind}"
            ),
        }
    }
}

impl std::error::Error for GatewayFailure {}

impl GatewayFailure {
    /// The HTTP status the harness gets: 4xx for what no retry can change (the SDKs do not
    /// retry it, and `x-should-retry: false` says so again), 502 for the provider, 429 for
    /// the cost limit.
    pub(crate) fn status(&self) -> u16 {
        match self.kind {
            FailureKind::Upstream { .. } | FailureKind::Incomplete { .. } => 502,
            FailureKind::BudgetReached { .. } => 429,
            _ => 400,
        }
    }

    /// A replay the cassette cannot answer (none, too few calls or trials, a request that
    /// differs): recording the task's cassette (again) is what fixes it.
    pub(crate) fn needs_recording(&self) -> bool {
        matches!(
            self.kind,
            FailureKind::Exhausted { .. }
                | FailureKind::RoundExhausted { .. }
                | FailureKind::NoTrial { .. }
                | FailureKind::NoCassette { .. }
                | FailureKind::Divergence { .. }
        )
    }

    /// The task has no cassette at all.
    pub(crate) fn has_no_cassette(&self) -> bool {
        matches!(self.kind, FailureKind::NoCassette { .. })
    }

    /// The run's cost limit stopped the call: the trial was cut short, not failed.
    pub(crate) fn is_budget_reached(&self) -> bool {
        matches!(self.kind, FailureKind::BudgetReached { .. })
    }
}
