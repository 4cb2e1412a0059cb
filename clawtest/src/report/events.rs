//! The events a run emits, in order, and the [`Reporter`] trait that consumes them. These
//! types are the whole interface between the executor and every report. They carry the
//! result types of [`crate::results`]; results never import them.

use std::path::PathBuf;

use crate::grade::Grade;
use crate::results::{RunSummary, TrialStatus, TrialSummary, Verdict};
use crate::task::Task;
use crate::trajectory::Trajectory;

/// Something that happened during a run.
#[derive(Debug, Clone)]
pub enum Event {
    /// The first event: what is about to run.
    RunStarted {
        /// Valid tasks selected to run.
        tasks: usize,
        /// Trials per task (k).
        trials: u32,
        /// How many trials run at once.
        jobs: usize,
        /// The sandbox backend's name (`process` or `docker`).
        backend: &'static str,
        /// Task files that failed validation (reported, not run).
        invalid: usize,
        /// Tasks left out by the command line's filters.
        filtered_out: usize,
    },
    /// A task file that failed validation (it is not run).
    TaskInvalid {
        /// The task file.
        path: PathBuf,
        /// The line of its first problem, when it has one.
        line: Option<u64>,
        /// Every problem of the file, as `cargo clawtest validate` words it.
        message: String,
    },
    /// A trial's harness is about to start.
    TrialStarted {
        /// The task's `task_id`.
        task_id: String,
        /// The trial's number within the task, from 0.
        trial: u32,
    },
    /// A trial ended, graded or not.
    TrialFinished {
        /// The task's `task_id`.
        task_id: String,
        /// The trial's number within the task, from 0.
        trial: u32,
        /// How it ended, with its grade and trajectory when it has them.
        outcome: TrialOutcome,
    },
    /// All trials of a task ended: its verdict.
    TaskFinished {
        /// The task's verdict over its trials.
        verdict: Verdict,
    },
    /// Record mode wrote a task's cassette (once all of its trials were in).
    CassetteWritten {
        /// The task's `task_id`.
        task_id: String,
        /// The file written.
        path: PathBuf,
        /// How many trials it records.
        trials: u32,
    },
    /// The grade snapshots were compared (`run --snapshots`), before the run's status was
    /// decided: each task whose snapshot did not simply match, and what became of it.
    SnapshotsCompared {
        /// `(task id, what happened)`, e.g. `new; review … with \`cargo insta review\``.
        changes: Vec<(String, String)>,
    },
    /// The last event: the run's summary, as the reports write it (its status decided).
    RunFinished {
        /// The run's verdicts, totals, gates and status (boxed: the largest event by far, sent
        /// once).
        summary: Box<RunSummary>,
    },
}

/// How one trial ended.
#[derive(Debug, Clone)]
pub enum TrialOutcome {
    /// The trial ran and was graded (passed or not).
    Graded {
        /// The grade of the trajectory.
        grade: Grade,
        /// What the trial did: audit log, model calls, output, workspace.
        trajectory: Box<Trajectory>,
    },
    /// The trial could not be run or graded: an infrastructure error, not a verdict on the agent.
    Error {
        /// What went wrong, for the user.
        message: String,
        /// What the trial did before the error, when the harness ran.
        trajectory: Option<Box<Trajectory>>,
    },
    /// The run was interrupted before the trial finished.
    Interrupted,
    /// The trial was never started (the run's cost limit was reached).
    NotRun {
        /// Why, for the user.
        reason: String,
    },
}

impl TrialOutcome {
    /// What the task's verdict keeps of this outcome, as trial `trial` of `task`.
    pub(crate) fn summary(&self, task: &Task, trial: u32) -> TrialSummary {
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
        let limits_reached = match self {
            TrialOutcome::Graded { trajectory, .. }
            | TrialOutcome::Error {
                trajectory: Some(trajectory),
                ..
            } => trajectory.limits_reached.clone(),
            _ => Vec::new(),
        };
        let rounds = match self {
            TrialOutcome::Graded { grade, trajectory } => trajectory
                .rounds
                .as_ref()
                .map(|rounds| crate::results::RoundsSummary::new(rounds, grade.passed)),
            _ => None,
        };
        TrialSummary {
            trial,
            status,
            limits_reached,
            rounds,
        }
    }
}

/// Consumes events as they happen.
pub trait Reporter {
    /// Takes in one event; events come in the order they happened.
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
