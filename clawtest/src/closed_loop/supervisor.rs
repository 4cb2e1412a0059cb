//! The hidden supervisor: a round is graded on the World's audit and the output so far as the
//! [`supervised_task`], the task's checkpoints as components beside its scoring components
//! (the `llm_judge` rubrics through the judge, with their hidden references); from that grade
//! it decides `pass`, `continue` or `fail`, with the checkpoints' hidden score caps and
//! `unrecoverable` flags. Pure: the round's grade comes in.
//!
//! What it returns splits along the information barrier: [`Supervision::grade`] (every
//! component's reason: the rationale) stays with the harness's host; only
//! [`Supervision::handoff`] may reach the simulated user.

use crate::grade::Grade;
use crate::task::{Check, Checkpoint, Component, Task};
use crate::trajectory::rounds::RoundVerdict;

/// What the supervisor decided about one round.
#[derive(Debug, Clone)]
pub(crate) struct Supervision {
    /// The round's grade: the task's components and the checkpoints graded so far.
    pub(crate) grade: Grade,
    /// `pass`, `continue` or `fail`.
    pub(crate) verdict: RoundVerdict,
    /// What the simulator may know.
    pub(crate) handoff: Handoff,
}

/// The supervisor's verdict as the simulated user may see it (UniClawBench's four-field
/// handoff, and the public words of the checkpoints not met): never a check, a reference,
/// or a reason.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Handoff {
    /// The verdict.
    pub(crate) verdict: RoundVerdict,
    /// Whether another round can still mend it.
    pub(crate) recoverable: bool,
    /// The round's score, 0..=1.
    pub(crate) score: f64,
    /// The checkpoints not met, by their public name and feedback.
    pub(crate) missing: Vec<Missing>,
    /// Some checkpoint's round (`after_turn`) has not come yet: the user wants more.
    pub(crate) pending: bool,
}

/// A checkpoint not met, as the simulated user may name it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Missing {
    /// The checkpoint's `name`.
    pub(crate) name: String,
    /// Its `feedback`: what the user says about it, when the author wrote it.
    pub(crate) feedback: Option<String>,
}

/// The task the supervisor grades: the task's own components followed by the checkpoints,
/// each weighed as written (every round grades them all, so that rounds compare); an
/// `llm_judge` checkpoint's rubric carries its hidden reference.
pub(crate) fn supervised_task(task: &Task) -> Task {
    let mut supervised = task.clone();
    supervised
        .components
        .extend(
            task.checkpoints
                .iter()
                .map(|checkpoint| Component {
                    name: checkpoint.name.clone(),
                    weight: checkpoint.weight,
                    check: match (&checkpoint.check, &checkpoint.reference) {
                        (Check::LlmJudge { rubric }, Some(reference)) => Check::LlmJudge {
                            rubric: format!(
                                "{rubric}\n\nReference answer (hidden from the agent; grade against it): {reference}"
                            ),
                        },
                        (check, _) => check.clone(),
                    },
                    line: checkpoint.line,
                }),
        );
    supervised
}

/// Decides round `round` of `task` from its `grade` (the [`supervised_task`]'s). A checkpoint
/// not met is named to the simulator from its round (`after_turn`) on; before, it is
/// `pending`. From its round on, a missed checkpoint's `cap` bounds the round's score (which
/// may then fall below the threshold), and a missed `unrecoverable` one fails the round, as a
/// safety violation does (no later round can undo a forbidden call); else the round passes
/// when its grade does and continues when it does not.
pub(crate) fn supervise(task: &Task, mut grade: Grade, round: u32) -> Supervision {
    let not_met: Vec<&Checkpoint> = task
        .checkpoints
        .iter()
        .filter(|checkpoint| {
            grade
                .components
                .iter()
                .rev()
                .find(|component| component.name == checkpoint.name)
                .is_some_and(|component| component.score < 1.0)
        })
        .collect();
    let (named, pending): (Vec<&Checkpoint>, Vec<&Checkpoint>) = not_met
        .into_iter()
        .partition(|checkpoint| checkpoint.after_turn.unwrap_or(1) <= round);
    let missed_unrecoverable = apply_caps_and_unrecoverable(&mut grade, &named);
    let recoverable = grade.violations.is_empty() && !missed_unrecoverable;
    let verdict = if grade.passed {
        RoundVerdict::Pass
    } else if recoverable {
        RoundVerdict::Continue
    } else {
        RoundVerdict::Fail
    };
    let missing = named
        .into_iter()
        .map(|checkpoint| Missing {
            name: checkpoint.name.clone(),
            feedback: checkpoint.feedback.clone(),
        })
        .collect();
    let pending = !pending.is_empty();
    Supervision {
        handoff: Handoff {
            verdict,
            recoverable,
            score: grade.final_score,
            missing,
            pending,
        },
        grade,
        verdict,
    }
}

/// Applies the missed checkpoints' caps to `grade` (its score, then whether it passed) and
/// their `unrecoverable` flags (a missed one fails it), each noted in the checkpoint's reason;
/// true when one was unrecoverable.
fn apply_caps_and_unrecoverable(grade: &mut Grade, missed: &[&Checkpoint]) -> bool {
    let mut missed_unrecoverable = false;
    for checkpoint in missed {
        let note = match (checkpoint.cap, checkpoint.unrecoverable) {
            (_, true) => {
                missed_unrecoverable = true;
                grade.passed = false;
                "unrecoverable: the round fails".to_string()
            }
            (Some(cap), false) => {
                if grade.final_score > cap {
                    grade.final_score = cap;
                    grade.passed = grade.passed && cap >= grade.threshold;
                }
                format!("caps the round's score at {cap}")
            }
            (None, false) => continue,
        };
        if let Some(component) = grade
            .components
            .iter_mut()
            .rev()
            .find(|component| component.name == checkpoint.name)
        {
            component.reason = format!("{} ({note})", component.reason);
        }
    }
    missed_unrecoverable
}
