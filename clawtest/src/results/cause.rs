//! Why a run did not pass, in words: one sentence built from the summary alone, which the
//! terminal's result line, the Markdown summary, JUnit and the HTML report all print, so each
//! output names the same reasons (tasks, gates, regressions, snapshots: which ones).

use serde::{Deserialize, Serialize};

use super::{RunStatus, RunSummary, VerdictStatus};

/// The grade snapshots that failed the run (`--snapshots`), by what happened to them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotFailures {
    /// Tasks with no committed snapshot yet, in task order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub new: Vec<String>,
    /// Tasks whose breakdown differs from the committed snapshot, in task order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<String>,
    /// The snapshots could not be compared (the folder could not be read or written).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub not_compared: bool,
}

impl SnapshotFailures {
    /// True when no snapshot failed the run.
    pub fn is_empty(&self) -> bool {
        self.new.is_empty() && self.changed.is_empty() && !self.not_compared
    }

    /// The failures of several shards as one (`merge`): the tasks of each, once, sorted.
    pub(crate) fn merge(&mut self, other: &SnapshotFailures) {
        for (mine, theirs) in [
            (&mut self.new, &other.new),
            (&mut self.changed, &other.changed),
        ] {
            mine.extend(theirs.iter().cloned());
            mine.sort();
            mine.dedup();
        }
        self.not_compared |= other.not_compared;
    }
}

/// At most this many task ids are named per reason; the rest are counted.
const NAMED: usize = 5;

/// `n thing(s) (a, b, c, and 2 more)`.
fn counted(what: &str, ids: &[String]) -> String {
    let mut named: Vec<String> = ids.iter().take(NAMED).cloned().collect();
    if ids.len() > NAMED {
        named.push(format!("and {} more", ids.len() - NAMED));
    }
    format!("{} {what} ({})", ids.len(), named.join(", "))
}

impl RunSummary {
    /// Why the run did not pass, every reason in one sentence (`None` for a run that passed):
    /// e.g. "1 task failed pass^3 (todo-review); 2 new snapshot(s) (a, b)".
    pub fn failure_cause(&self) -> Option<String> {
        if self.status == RunStatus::Passed {
            return None;
        }
        // In a matrix a task is named with its cell: `harness/model/task`.
        let ids = |status: VerdictStatus| -> Vec<String> {
            self.verdicts
                .iter()
                .filter(|verdict| verdict.status == status)
                .map(super::matrix::key)
                .collect()
        };
        let mut reasons = Vec::new();
        if self.interrupted {
            reasons.push("interrupted before every trial finished (partial results)".to_string());
        }
        if !self.invalid.is_empty() {
            reasons.push(format!("{} invalid task file(s)", self.invalid.len()));
        }
        let errored = ids(VerdictStatus::Error);
        if !errored.is_empty() {
            reasons.push(counted("task(s) with an infrastructure error", &errored));
        }
        let failed = ids(VerdictStatus::Failed);
        if !failed.is_empty() {
            reasons.push(counted(&format!("task(s) failed pass^{}", self.k), &failed));
        }
        for gate in self.gates.iter().filter(|gate| !gate.passed) {
            reasons.push(match gate.shortfall() {
                Some(shortfall) => format!("gate {} not met ({shortfall})", gate.name),
                None => format!("gate {} not met (nothing to measure)", gate.name),
            });
        }
        if let Some(comparison) = &self.baseline {
            let regressed: Vec<String> = comparison
                .regressions
                .iter()
                .map(|change| match &change.cell {
                    Some(cell) => format!("{cell}/{}", change.task_id),
                    None => change.task_id.clone(),
                })
                .collect();
            if !regressed.is_empty() {
                reasons.push(counted(
                    "task(s) regressed against the baseline",
                    &regressed,
                ));
            }
            if comparison.suite_regressed {
                reasons.push("the suite's mean score regressed against the baseline".into());
            }
        }
        let not_run = ids(VerdictStatus::NotRun);
        if !not_run.is_empty() {
            reasons.push(counted(
                "task(s) not run: the cost limit was reached",
                &not_run,
            ));
        }
        let snapshots = &self.snapshots;
        for (what, tasks) in [
            ("new snapshot(s)", &snapshots.new),
            ("changed snapshot(s)", &snapshots.changed),
        ] {
            if !tasks.is_empty() {
                reasons.push(counted(what, tasks));
            }
        }
        if snapshots.not_compared {
            reasons.push("the grade snapshots could not be compared".into());
        }
        if reasons.is_empty() && self.snapshots_changed {
            // Results written before the snapshots were named (or by hand).
            reasons.push("a grade snapshot changed".into());
        }
        Some(reasons.join("; "))
    }
}
