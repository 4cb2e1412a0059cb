//! Gates held over a set of verdicts: what the set measures ([`Measured`]: mean score over
//! the trials, mean robustness over those with a fault, pass^k, recovery per fault kind) and
//! each threshold against it ([`held`]). The whole run's `[gates]` and each cell's
//! `[gates.cells."<glob>"]` are held by these same two functions, so a cell's `min_score`
//! means what the run's does; where a gate reached beyond the whole run is its [`GateScope`].

use serde::{Deserialize, Serialize};

use super::{GateResult, TrialStatus, TrialSummary, Verdict, VerdictStatus};
use crate::config::Thresholds;
use crate::grade::RecoveryProfile;

/// What a gate measured, beyond the whole run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GateScope {
    /// One cell's verdicts (`[gates.cells."<glob>"]`).
    Cell {
        /// The cell, `harness/model`; `None` when the glob matched no cell of the results
        /// (the gate then failed: nothing to measure).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cell: Option<String>,
        /// The glob of `[gates.cells]` that matched it.
        pattern: String,
    },
    /// The change of a measure from one cell to another (`[[gates.change]]`): `to` − `from`.
    Change {
        /// The cell compared from.
        from: String,
        /// The cell compared to.
        to: String,
        /// The measure: `pass_hat_k`, `mean_score`, `mean_completion` or `mean_robustness`.
        measure: String,
        /// The tasks compared: `all`, `category:<name>` or `capability:<name>`.
        group: String,
    },
}

/// Which side of its threshold a gate's value must be on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// The value must reach the threshold (every `min_*` gate).
    #[default]
    AtLeast,
    /// The value must not pass it (a change gate's `max`).
    AtMost,
}

impl Bound {
    /// Whether this is the default, left out of the results.
    pub(crate) fn is_at_least(&self) -> bool {
        *self == Bound::AtLeast
    }

    /// Whether `actual` is on the right side of `threshold` (by a hair's tolerance, so that
    /// 0.1 + 0.2 reaches 0.3).
    pub(crate) fn holds(self, actual: f64, threshold: f64) -> bool {
        match self {
            Bound::AtLeast => actual + 1e-9 >= threshold,
            Bound::AtMost => actual <= threshold + 1e-9,
        }
    }
}

/// What a set of verdicts measures, as the gates read it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Measured {
    /// The mean final score over the graded trials (0 when none was).
    pub(crate) mean_score: f64,
    /// The mean robustness over the graded trials with an injected fault; `None` when none had.
    pub(crate) mean_robustness: Option<f64>,
    /// The share of the tasks that passed pass^k (0 when there are none).
    pub(crate) pass_hat_k: f64,
    /// The tasks' recovery profiles, summed kind by kind.
    pub(crate) recovery: RecoveryProfile,
}

impl Measured {
    /// The measures of `verdicts`, summed in their order.
    pub(crate) fn of<'a>(verdicts: impl Iterator<Item = &'a Verdict> + Clone) -> Measured {
        let scores: Vec<f64> = verdicts
            .clone()
            .flat_map(|verdict| verdict.trials.iter().filter_map(TrialSummary::score))
            .collect();
        let robustness: Vec<f64> = verdicts
            .clone()
            .flat_map(|verdict| verdict.trials.iter())
            .filter_map(measured_robustness)
            .collect();
        let (tasks, passed) =
            verdicts
                .clone()
                .fold((0usize, 0usize), |(tasks, passed), verdict| {
                    (
                        tasks + 1,
                        passed + usize::from(verdict.status == VerdictStatus::Passed),
                    )
                });
        Measured {
            mean_score: mean(&scores),
            mean_robustness: (!robustness.is_empty()).then(|| mean(&robustness)),
            pass_hat_k: if tasks == 0 {
                0.0
            } else {
                passed as f64 / tasks as f64
            },
            recovery: crate::grade::sum_profiles(verdicts.map(|verdict| &verdict.recovery)),
        }
    }
}

/// A graded trial's robustness when a fault was injected into it: a trial without one has
/// nothing to show (ClawEnvKit's 1 stays in its final score, out of every mean and gate).
pub(crate) fn measured_robustness(record: &TrialSummary) -> Option<f64> {
    match record.status {
        TrialStatus::Graded {
            robustness,
            faults_injected,
            ..
        } if faults_injected > 0 => Some(robustness),
        _ => None,
    }
}

/// The mean of `values`, 0 for none.
pub(crate) fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        0.0
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

/// Each threshold set in `thresholds` with the value `measured` has and whether it held,
/// named `prefix` then the key (`min_score`, `min_recovery.rate_limited`). A gate with nothing
/// to measure (no fault injected, or none of its kind) fails: a robustness gate that measured
/// nothing must not pass a merge.
pub(crate) fn held(
    thresholds: &Thresholds,
    measured: &Measured,
    prefix: &str,
    scope: Option<&GateScope>,
) -> Vec<GateResult> {
    let overall = [
        (
            "min_score".to_string(),
            thresholds.min_score,
            Some(measured.mean_score),
        ),
        (
            "min_robustness".to_string(),
            thresholds.min_robustness,
            measured.mean_robustness,
        ),
        (
            "min_pass_hat_k".to_string(),
            thresholds.min_pass_hat_k,
            Some(measured.pass_hat_k),
        ),
    ];
    let per_kind = thresholds.min_recovery.iter().map(|(kind, threshold)| {
        (
            format!("min_recovery.{kind}"),
            Some(*threshold),
            measured
                .recovery
                .get(kind)
                .and_then(crate::grade::Recovery::rate),
        )
    });
    overall
        .into_iter()
        .chain(per_kind)
        .filter_map(|(name, threshold, actual)| {
            let threshold = threshold?;
            Some(GateResult::new(
                format!("{prefix}{name}"),
                threshold,
                actual,
                Bound::AtLeast,
                scope.cloned(),
            ))
        })
        .collect()
}

impl GateResult {
    /// A gate's outcome: `actual` against `threshold` on the `bound`'s side; no value fails.
    pub(crate) fn new(
        name: String,
        threshold: f64,
        actual: Option<f64>,
        bound: Bound,
        scope: Option<GateScope>,
    ) -> GateResult {
        GateResult {
            name,
            threshold,
            actual,
            passed: actual.is_some_and(|actual| bound.holds(actual, threshold)),
            scope,
            bound,
        }
    }

    /// The threshold as people read it: `threshold 0.8` for a least value, `at most 0.1`
    /// for a most.
    pub fn threshold_text(&self) -> String {
        match self.bound {
            Bound::AtLeast => format!("threshold {}", self.threshold),
            Bound::AtMost => format!("at most {}", self.threshold),
        }
    }

    /// The threshold with its side, for a table's column: `0.8` (a least value, as every
    /// `min_*` gate) or `≤ 0.1`.
    pub fn threshold_column(&self) -> String {
        match self.bound {
            Bound::AtLeast => self.threshold.to_string(),
            Bound::AtMost => format!("≤ {}", self.threshold),
        }
    }

    /// How a failed gate's value stood to its threshold: `0.500 < 0.8`, `0.200 > 0.1`.
    pub fn shortfall(&self) -> Option<String> {
        let actual = self.actual?;
        let side = match self.bound {
            Bound::AtLeast => "<",
            Bound::AtMost => ">",
        };
        Some(format!("{actual:.3} {side} {}", self.threshold))
    }
}
