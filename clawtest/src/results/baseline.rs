//! Comparing a run against a baseline (the results JSON of the main branch): which tasks
//! regressed (passed pass^k before and fail now, or lost more than the tolerance in mean score
//! or robustness), which improved, and whether the suite's mean score dropped. Regressions fail
//! the run.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{RunStatus, RunSummary, Verdict, VerdictStatus};

/// What changed for one task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// The task's `task_id`.
    pub task_id: String,
    /// The cell (`harness/model`) the task ran in, in a run of a matrix: a matrix is compared
    /// cell by cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cell: Option<String>,
    /// The task's verdict in the baseline.
    pub before_status: VerdictStatus,
    /// The task's verdict in this run.
    pub now_status: VerdictStatus,
    /// The task's mean score in the baseline.
    pub before_score: f64,
    /// The task's mean score in this run.
    pub now_score: f64,
    /// The task's mean robustness in the baseline (`None`: no fault was injected).
    pub before_robustness: Option<f64>,
    /// The task's mean robustness in this run (`None`: no fault was injected).
    pub now_robustness: Option<f64>,
    /// Why this counts as a regression or an improvement, in words.
    pub reason: String,
}

/// The comparison of a run with its baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineComparison {
    /// How far a mean score or robustness may move before it counts
    /// (`[gates] baseline_tolerance`, default 0.05).
    pub tolerance: f64,
    /// The tasks that got worse: they fail the run.
    pub regressions: Vec<Change>,
    /// The tasks that got better.
    pub improvements: Vec<Change>,
    /// Tasks in this run that the baseline did not have (`harness/model/task` in a matrix:
    /// a new model is a new column).
    pub new_tasks: Vec<String>,
    /// Tasks of the baseline that this run did not run.
    pub missing_tasks: Vec<String>,
    /// The baseline's mean score over all graded trials.
    pub before_mean_score: f64,
    /// This run's mean score over all graded trials.
    pub now_mean_score: f64,
    /// The suite's mean score dropped by more than the tolerance.
    pub suite_regressed: bool,
}

impl BaselineComparison {
    /// A task regressed or the suite's mean score dropped: the run fails.
    pub(crate) fn failed(&self) -> bool {
        !self.regressions.is_empty() || self.suite_regressed
    }
}

fn change(before: &Verdict, now: &Verdict, reason: String) -> Change {
    Change {
        task_id: now.task_id.clone(),
        cell: now.cell.as_ref().map(super::matrix::Cell::name),
        before_status: before.status,
        now_status: now.status,
        before_score: before.mean_score,
        now_score: now.mean_score,
        before_robustness: before.mean_robustness,
        now_robustness: now.mean_robustness,
        reason,
    }
}

/// Compares `now` with `before`; a score or robustness moves only when it changes by more than
/// `tolerance`.
pub(crate) fn compare(before: &RunSummary, now: &RunSummary, tolerance: f64) -> BaselineComparison {
    use super::matrix::key;
    let earlier: BTreeMap<String, &Verdict> = before
        .verdicts
        .iter()
        .map(|verdict| (key(verdict), verdict))
        .collect();
    let mut regressions = Vec::new();
    let mut improvements = Vec::new();
    let mut new_tasks = Vec::new();
    for verdict in &now.verdicts {
        let Some(previous) = earlier.get(&key(verdict)) else {
            new_tasks.push(key(verdict));
            continue;
        };
        let k = verdict.k;
        let score_drop = previous.mean_score - verdict.mean_score;
        // Compared only when both runs injected faults into the task: a run without any has
        // no robustness to lose.
        let robustness_drop = match (previous.mean_robustness, verdict.mean_robustness) {
            (Some(before), Some(now)) => before - now,
            _ => 0.0,
        };
        if previous.status == VerdictStatus::Passed && verdict.status != VerdictStatus::Passed {
            regressions.push(change(
                previous,
                verdict,
                format!("passed pass^{k} before, {} now", describe(verdict.status)),
            ));
        } else if score_drop > tolerance {
            regressions.push(change(
                previous,
                verdict,
                format!("mean score fell by {score_drop:.3} (tolerance {tolerance})"),
            ));
        } else if robustness_drop > tolerance {
            regressions.push(change(
                previous,
                verdict,
                format!("robustness fell by {robustness_drop:.3} (tolerance {tolerance})"),
            ));
        } else if previous.status != VerdictStatus::Passed
            && verdict.status == VerdictStatus::Passed
        {
            improvements.push(change(
                previous,
                verdict,
                format!("fails pass^{k} before, passes now"),
            ));
        } else if -score_drop > tolerance {
            improvements.push(change(
                previous,
                verdict,
                format!("mean score rose by {:.3}", -score_drop),
            ));
        }
    }
    let current: std::collections::BTreeSet<String> = now.verdicts.iter().map(key).collect();
    let missing_tasks = before
        .verdicts
        .iter()
        .map(key)
        .filter(|key| !current.contains(key))
        .collect();
    BaselineComparison {
        tolerance,
        regressions,
        improvements,
        new_tasks,
        missing_tasks,
        before_mean_score: before.mean_score,
        now_mean_score: now.mean_score,
        suite_regressed: before.mean_score - now.mean_score > tolerance,
    }
}

fn describe(status: VerdictStatus) -> &'static str {
    match status {
        VerdictStatus::Passed => "passes",
        VerdictStatus::Failed => "fails",
        VerdictStatus::Error => "errors",
        VerdictStatus::Interrupted => "was interrupted",
        VerdictStatus::NotRun => "was not run",
    }
}

/// Records the comparison in the summary and fails a run that would otherwise pass.
pub(crate) fn apply(summary: &mut RunSummary, comparison: BaselineComparison) {
    if comparison.failed() && summary.status == RunStatus::Passed {
        summary.status = RunStatus::Failed;
    }
    summary.baseline = Some(comparison);
}
