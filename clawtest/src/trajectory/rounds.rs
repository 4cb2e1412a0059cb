//! What a closed-loop trial's rounds were (leaf data, produced by `closed_loop`): for each
//! round the message the harness was given, the supervisor's verdict and score, the harness's
//! time; and why the loop stopped, with UniClawBench's status for it.

use serde::{Deserialize, Serialize};

/// The rounds of one closed-loop trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rounds {
    /// Every round run, in order (the first is the task's prompt).
    pub rounds: Vec<Round>,
    /// Why no further round ran.
    pub stop: StopReason,
    /// The round whose grade is the trial's (the best score; the earliest among equals), from 1.
    pub best_round: u32,
}

impl Rounds {
    /// How many rounds ran.
    pub fn used(&self) -> u32 {
        self.rounds.len() as u32
    }

    /// UniClawBench's status of the trial: `pass` whenever the best round passed (its
    /// score-based promotion), else the stop's own status.
    pub fn status(&self, passed: bool) -> LoopStatus {
        if passed {
            LoopStatus::Pass
        } else {
            self.stop.status()
        }
    }
}

/// One round: the harness run on one user message, and the supervisor's verdict on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    /// The round's number, from 1.
    pub number: u32,
    /// The user message the harness was given (the prompt, then the simulator's follow-ups).
    pub message: String,
    /// The llm simulator's structured answer this round's message was taken from (none for
    /// the prompt and for the template simulator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_turn: Option<UserTurn>,
    /// What the supervisor decided after the round.
    pub verdict: RoundVerdict,
    /// Where the attempt stands after the round (UniClawBench's `attempt_state`).
    pub attempt_state: AttemptState,
    /// The round's score (the grade's final score), 0..=1.
    pub score: f64,
    /// The names of the checkpoints not met after the round (public names only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    /// The model supervisor's answer and what bound it (`feedback.supervisor: model` only):
    /// hidden from the harness and the simulated user, kept for the reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supervisor: Option<ModelSupervision>,
    /// The harness's time in this round, in milliseconds: in the trajectory only (results
    /// leave it out, so that replays give byte-identical results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The harness's model calls in this round.
    pub model_calls: usize,
}

/// The model supervisor's answer on a round, as it gave it, and what clawtest applied on top
/// (UniClawBench's `score.json` fields): the round's own `verdict`, `attempt_state` and
/// `score` are the decided ones, after the spec's caps and continue-vs-fail guidance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelSupervision {
    /// The model's verdict.
    pub verdict: RoundVerdict,
    /// The model's attempt state.
    pub attempt_state: AttemptState,
    /// Whether the model thought another round worth trying.
    pub recoverable: bool,
    /// The model's score, before the caps, 0..=1.
    pub score: f64,
    /// How sure the model was.
    pub confidence: Confidence,
    /// Its hidden analysis (never shown to the harness or the simulated user).
    pub rationale: String,
    /// The visible evidence it found missing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_artifacts: Vec<String>,
    /// The task-agnostic guidance labels it chose.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guidance_tags: Vec<String>,
    /// The spec's score caps that bound the round (their checks not met).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caps: Vec<String>,
    /// The spec's unrecoverable outcomes that happened (their checks not met): the round
    /// failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unrecoverable: Vec<String>,
}

/// How sure the model supervisor is (`confidence`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// Unsure.
    Low,
    /// Fairly sure.
    Medium,
    /// Sure.
    High,
}

/// The supervisor's verdict on a round (UniClawBench's `verdict`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoundVerdict {
    /// The round's score reached the pass threshold.
    Pass,
    /// Not yet: the user gives feedback and another round runs, budgets allowing.
    Continue,
    /// Unrecoverable (a safety check violated, an unrecoverable goal missed, or the model
    /// supervisor's judgement): no further round can mend it.
    Fail,
}

/// The llm simulated user's structured answer (UniClawBench's user simulator output): how it
/// speaks, and the public points it makes; the message itself is its `candidate_feedback`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserTurn {
    /// Whether and how firmly it steps in.
    pub mode: UserMode,
    /// How it sounds.
    pub tone: UserTone,
    /// The points it makes, in its own public words.
    pub public_feedback_points: Vec<String>,
}

/// How the simulated user steps in (`mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UserMode {
    /// It says nothing: the loop ends (`empty_feedback`).
    Silent,
    /// A light push.
    Nudge,
    /// A concrete request.
    Instruction,
}

/// How the simulated user sounds (`tone`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UserTone {
    /// Matter-of-fact.
    Neutral,
    /// Insistent.
    Firm,
    /// Pressed for time.
    Urgent,
}

/// Where an attempt stands after a round (UniClawBench's `attempt_state`): with the verdict,
/// the score and `recoverable`, the whole of what the strict barrier hands the simulated user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptState {
    /// Still under way: the harness ran out of its round's time, or a goal's round has not
    /// come yet.
    InProgress,
    /// Part of what was asked is not there at all.
    Incomplete,
    /// Everything was attempted, but not well enough (or a score cap binds).
    CompleteButFailed,
    /// Done, and the supervisor passed it.
    CompleteAndPassed,
    /// Something no later round can mend (a safety violation, an unrecoverable goal missed).
    TerminalFailure,
}

impl AttemptState {
    /// The state as UniClawBench writes it, as reports show it.
    pub fn name(self) -> &'static str {
        match self {
            AttemptState::InProgress => "in_progress",
            AttemptState::Incomplete => "incomplete",
            AttemptState::CompleteButFailed => "complete_but_failed",
            AttemptState::CompleteAndPassed => "complete_and_passed",
            AttemptState::TerminalFailure => "terminal_failure",
        }
    }
}

/// Why a closed loop stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The supervisor's verdict was `pass`.
    Passed,
    /// The supervisor's verdict was `fail` (unrecoverable).
    Unrecoverable,
    /// `feedback.max_rounds` rounds ran without a pass.
    MaxRounds,
    /// The simulator had nothing to say (no public checkpoint left to name, no message).
    EmptyFeedback,
    /// The harness's time over the rounds reached `feedback.total_timeout_seconds`.
    TotalTime,
    /// The run's cost limit was reached before the next round's model calls.
    CostBudget,
}

impl StopReason {
    /// The status a trial that stopped here has when its best round did not pass.
    pub fn status(self) -> LoopStatus {
        match self {
            StopReason::Passed => LoopStatus::Pass,
            StopReason::Unrecoverable | StopReason::EmptyFeedback => LoopStatus::Fail,
            StopReason::MaxRounds | StopReason::CostBudget => LoopStatus::BudgetExhausted,
            StopReason::TotalTime => LoopStatus::GlobalTimeout,
        }
    }

    /// The reason in words, as reports show it.
    pub fn describe(self) -> &'static str {
        match self {
            StopReason::Passed => "the supervisor passed it",
            StopReason::Unrecoverable => "the supervisor failed it (unrecoverable)",
            StopReason::MaxRounds => "the most rounds ran",
            StopReason::EmptyFeedback => "the simulated user had nothing to say",
            StopReason::TotalTime => "the total time limit was reached",
            StopReason::CostBudget => "the run's cost limit was reached",
        }
    }
}

/// UniClawBench's terminal statuses (infrastructure errors are a trial's error, apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoopStatus {
    /// The best round passed.
    Pass,
    /// Stopped without a pass by the simulator's budget (rounds or money).
    BudgetExhausted,
    /// Stopped without a pass by an unrecoverable verdict or an empty follow-up.
    Fail,
    /// Stopped without a pass by the total time limit.
    GlobalTimeout,
}

impl LoopStatus {
    /// The status as written in results (`pass`, `budget_exhausted`, ...).
    pub fn name(self) -> &'static str {
        match self {
            LoopStatus::Pass => "pass",
            LoopStatus::BudgetExhausted => "budget_exhausted",
            LoopStatus::Fail => "fail",
            LoopStatus::GlobalTimeout => "global_timeout",
        }
    }
}
