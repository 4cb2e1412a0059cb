//! The events a run emits, in order, and the [`Reporter`] trait that consumes them. These
//! types are the whole interface between the executor and every report. They carry the
//! result types of [`crate::results`]; results never import them.

use std::path::PathBuf;

use crate::grade::Grade;
use crate::results::{RunSummary, TrialStatus, TrialSummary, Verdict};
use crate::spec::Task;
use crate::trajectory::Trajectory;

/// Something that happened during a run.
#[derive(Debug, Clone)]
pub enum Event {
    RunStarted {
        tasks: usize,
        trials: u32,
        jobs: usize,
        backend: &'static str,
        invalid: usize,
        filtered_out: usize,
    },
    /// A task file that failed validation (it is not run).
    TaskInvalid {
        path: PathBuf,
        line: Option<u64>,
        message: String,
    },
    TrialStarted {
        task_id: String,
        trial: u32,
    },
    TrialFinished {
        task_id: String,
        trial: u32,
        outcome: TrialOutcome,
    },
    TaskFinished {
        verdict: Verdict,
    },
    RunFinished {
        summary: RunSummary,
    },
}

/// How one trial ended.
#[derive(Debug, Clone)]
pub enum TrialOutcome {
    /// The trial ran and was graded (passed or not).
    Graded {
        grade: Grade,
        trajectory: Box<Trajectory>,
    },
    /// The trial could not be run or graded: an infrastructure error, not a verdict on the agent.
    Error {
        message: String,
        trajectory: Option<Box<Trajectory>>,
    },
    /// The run was interrupted before the trial finished.
    Interrupted,
    /// The trial was never started (the run's cost limit was reached).
    NotRun { reason: String },
}

impl TrialOutcome {
    /// What the task's verdict keeps of this outcome, as trial `trial` of `task`.
    pub fn record(&self, task: &Task, trial: u32) -> TrialSummary {
        let status = match self {
            TrialOutcome::Graded { grade, trajectory } => {
                TrialStatus::graded(task, grade, trajectory)
            }
            TrialOutcome::Error { message, .. } => TrialStatus::Error {
                message: message.clone(),
            },
            TrialOutcome::Interrupted => TrialStatus::Interrupted,
            TrialOutcome::NotRun { reason } => TrialStatus::NotRun {
                reason: reason.clone(),
            },
        };
        TrialSummary { trial, status }
    }
}

/// Consumes events as they happen.
pub trait Reporter {
    fn report(&mut self, event: &Event);
}

/// Sends each event to several reporters, in order.
pub struct Fanout<'a>(pub Vec<&'a mut dyn Reporter>);

impl Reporter for Fanout<'_> {
    fn report(&mut self, event: &Event) {
        for reporter in &mut self.0 {
            reporter.report(event);
        }
    }
}
