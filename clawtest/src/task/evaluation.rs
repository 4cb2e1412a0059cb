//! The hidden evaluation spec of a closed loop's model supervisor (`feedback.supervisor:
//! model`): UniClawBench's `eval_rule.md`, section by section, as typed data. Only the
//! supervisor's model is shown it (`closed_loop::model_supervisor`); it never reaches the
//! harness (its environment, files, tools, model requests) or the simulated user. Read and
//! checked by `validate/evaluation.rs`, from the task's `feedback.evaluation` map or from a
//! file beside the task.

use std::path::PathBuf;

use serde::Serialize;

use super::Check;

/// Who decides a closed loop's rounds (`feedback.supervisor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SupervisorKind {
    /// The checkpoints graded by clawtest's grader, with their caps and `unrecoverable` flags:
    /// reproducible without a model.
    #[default]
    Deterministic,
    /// A model reading the hidden [`Evaluation`] against the round's visible evidence
    /// (UniClawBench's answer supervisor), through the trial's gateway.
    Model,
}

/// The hidden evaluation spec: UniClawBench's `eval_rule.md` sections (1 to 9), and the
/// task's own instructions to the supervisor.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evaluation {
    /// The file it was read from, as the task names it (relative to the task's folder);
    /// `None` when it is written in the task.
    pub file: Option<PathBuf>,
    /// §1 Grading philosophy: what the supervisor cares about most.
    pub philosophy: Option<String>,
    /// §2 Task contract: the public task in the supervisor's terms, and what completes it.
    pub contract: String,
    /// §3 Source selection and target resolution.
    pub sources: Option<String>,
    /// §4 Ground truth: the hidden values the evidence is checked against.
    pub ground_truth: String,
    /// §5 Checkpoint rubric: weighted lines summing to 1.
    pub checkpoints: Vec<RubricLine>,
    /// §6 Score caps: the round's score is at most the lowest binding cap.
    pub score_caps: Vec<ScoreCap>,
    /// §6 Pass requirement: the least score (after caps) a `pass` needs; `None`: the task's
    /// pass threshold.
    pub pass_at: Option<f64>,
    /// §7 Continue vs fail guidance.
    pub guidance: Guidance,
    /// §8 Hidden reference assets, as text.
    pub references: Option<String>,
    /// §9 Dynamic content note.
    pub dynamic_content: Option<String>,
    /// Task-specific instructions to the supervisor (UniClawBench's
    /// `supervisor.instructions`).
    pub instructions: Option<String>,
}

/// One weighted line of the checkpoint rubric (§5).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RubricLine {
    /// Its name, as reports show it.
    pub name: String,
    /// Its share of the score (the lines sum to 1).
    pub weight: f64,
    /// What satisfies it: the observable result and the evidence it needs.
    pub criterion: String,
}

/// A score cap (§6): while its `check` is not met, the round scores at most `cap`, whatever
/// the supervisor's model scored. Deterministic: clawtest's grader decides whether it binds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScoreCap {
    /// Its name, as reports show it.
    pub name: String,
    /// The most the round may score while it binds, 0..1.
    pub cap: f64,
    /// The failure mode in words, for the supervisor's model.
    pub when: String,
    /// What must hold for the cap not to bind.
    pub check: Check,
}

/// Continue vs fail guidance (§7).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Guidance {
    /// Where another round can help, in words (the model prefers `continue`).
    pub continue_when: Vec<String>,
    /// Where it cannot, in words (the model says `fail`).
    pub fail_when: Vec<String>,
    /// A score (after caps) below it fails the round: UniClawBench's "no further
    /// follow-ups" band.
    pub fail_below: Option<f64>,
    /// Actions no later round can mend (a record deleted): a round whose check is not met
    /// fails, whatever the model said.
    pub unrecoverable: Vec<Unrecoverable>,
}

/// An unrecoverable outcome (§7): while its `check` is not met, the round fails.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unrecoverable {
    /// Its name, as reports show it.
    pub name: String,
    /// The outcome in words, for the supervisor's model.
    pub when: String,
    /// What must hold, else the round fails.
    pub check: Check,
}
