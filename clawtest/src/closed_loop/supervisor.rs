//! The hidden supervisor: a round is graded on the World's audit and the output so far as the
//! [`supervised_task`], the task's checkpoints as components beside its scoring components
//! (the `llm_judge` rubrics through the judge, with their hidden references); from that grade
//! it decides `pass`, `continue` or `fail`, with the checkpoints' hidden score caps and
//! `unrecoverable` flags. Pure: the round's grade comes in.
//!
//! What it returns splits along the information barrier: [`Supervision::grade`] (every
//! component's reason: the rationale) and the missed checkpoints stay with the harness's
//! host; only the [`Briefing`] the task's barrier draws from it may reach the simulated user:
//! UniClawBench's four-field [`Handoff`] (`strict`), and with `guided` the missed
//! checkpoints' public words. The model supervisor (`model_supervisor.rs`) decides into the
//! same [`Supervision`].

use crate::grade::Grade;
use crate::task::{Barrier, Check, Checkpoint, Component, Task};
use crate::trajectory::rounds::{AttemptState, ModelSupervision, RoundVerdict};

/// What the supervisor decided about one round.
#[derive(Debug, Clone)]
pub(crate) struct Supervision {
    /// The round's grade: the task's components and the checkpoints graded so far.
    pub(crate) grade: Grade,
    /// The four fields the strict barrier lets through.
    pub(crate) handoff: Handoff,
    /// The checkpoints not met whose round has come, with their public words: the round's
    /// record names them; only the guided barrier lets their words through.
    pub(crate) missing: Vec<Missing>,
    /// What the guided barrier lets through besides the handoff, one public sentence each:
    /// the missed checkpoints' words, or the model supervisor's guidance tags' hints.
    pub(crate) guided: Vec<String>,
    /// The model supervisor's answer and what bound it (none for the deterministic one):
    /// hidden, for the round's record.
    pub(crate) model: Option<ModelSupervision>,
}

/// UniClawBench's handoff to the simulated user, exactly its four fields: never a check, a
/// reference, a goal's name, or a reason.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Handoff {
    /// The verdict.
    pub(crate) verdict: RoundVerdict,
    /// Where the attempt stands.
    pub(crate) attempt_state: AttemptState,
    /// Whether another round can still mend it.
    pub(crate) recoverable: bool,
    /// The round's score (capped), 0..=1.
    pub(crate) score: f64,
}

/// A checkpoint not met, as the guided simulated user may name it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Missing {
    /// The checkpoint's `name`.
    pub(crate) name: String,
    /// Its `feedback`: what the user says about it, when the author wrote it.
    pub(crate) feedback: Option<String>,
}

/// All the simulated user is given of the supervisor's decision: the handoff, and under the
/// guided barrier the public words of the goals not met. The one place the barrier is drawn
/// ([`Supervision::briefing`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Briefing {
    pub(crate) handoff: Handoff,
    /// Guided only: one public sentence per checkpoint not met (its `feedback`, or its name
    /// in words); empty under the strict barrier.
    pub(crate) points: Vec<String>,
}

impl Supervision {
    /// What the simulated user may know of this decision behind `barrier`.
    pub(crate) fn briefing(&self, barrier: Barrier) -> Briefing {
        let points = match barrier {
            Barrier::Strict => Vec::new(),
            Barrier::Guided => self.guided.clone(),
        };
        Briefing {
            handoff: self.handoff,
            points,
        }
    }
}

impl Missing {
    /// What the user says about this checkpoint: its feedback, or its name in words.
    pub(crate) fn sentence(&self) -> String {
        match &self.feedback {
            Some(feedback) => feedback.trim().to_string(),
            None => {
                let words = self.name.replace(['_', '-'], " ");
                format!("This is not done yet: {}.", words.trim())
            }
        }
    }
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

/// Decides round `round` of `task` from its `grade` (the [`supervised_task`]'s); `timed_out`
/// says the harness was stopped at its round's time limit. A checkpoint not met is named from
/// its round (`after_turn`) on; before, it is pending. From its round on, a missed
/// checkpoint's `cap` bounds the round's score (which may then fall below the threshold), and
/// a missed `unrecoverable` one fails the round, as a safety violation does (no later round
/// can undo a forbidden call); else the round passes when its grade does and continues when
/// it does not.
pub(crate) fn supervise(task: &Task, mut grade: Grade, round: u32, timed_out: bool) -> Supervision {
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
    let attempt_state = attempt_state(verdict, &grade, &pending, timed_out);
    let missing: Vec<Missing> = named
        .into_iter()
        .map(|checkpoint| Missing {
            name: checkpoint.name.clone(),
            feedback: checkpoint.feedback.clone(),
        })
        .collect();
    Supervision {
        guided: missing.iter().map(Missing::sentence).collect(),
        model: None,
        handoff: Handoff {
            verdict,
            attempt_state,
            recoverable,
            score: grade.final_score,
        },
        grade,
        missing,
    }
}

/// Where the attempt stands after a round with `verdict` and `grade` (capped), while the
/// `pending` checkpoints' rounds have not come: a pass is complete and passed, a fail
/// terminal; else in progress when the harness was cut off or only a goal still to come is
/// missing, incomplete when some component (a pending checkpoint aside) scored nothing at all,
/// and complete but failed when everything was attempted but not well enough.
fn attempt_state(
    verdict: RoundVerdict,
    grade: &Grade,
    pending: &[&Checkpoint],
    timed_out: bool,
) -> AttemptState {
    let scored = || {
        grade
            .components
            .iter()
            .filter(|component| !pending.iter().any(|pending| pending.name == component.name))
    };
    match verdict {
        RoundVerdict::Pass => AttemptState::CompleteAndPassed,
        RoundVerdict::Fail => AttemptState::TerminalFailure,
        RoundVerdict::Continue if timed_out => AttemptState::InProgress,
        RoundVerdict::Continue if scored().any(|component| component.score <= 0.0) => {
            AttemptState::Incomplete
        }
        RoundVerdict::Continue
            if !pending.is_empty() && scored().all(|component| component.score >= 1.0) =>
        {
            AttemptState::InProgress
        }
        RoundVerdict::Continue => AttemptState::CompleteButFailed,
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
