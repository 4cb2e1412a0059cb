//! Groups of the verdicts (the results' `breakdowns`): per category and per capability (how many tasks,
//! how many pass pass^k, the mean score), the safety pass rate, and which faults the agent
//! leaves unrecovered most often.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{TrialStatus, Verdict, VerdictStatus};
use crate::task::Capability;

/// One group of tasks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Group {
    /// How many tasks the group holds.
    pub tasks: usize,
    /// How many of them passed pass^k.
    pub passed: usize,
    /// The mean of their mean scores.
    pub mean_score: f64,
}

/// A fault (`service.action`) and how many times it went unrecovered over the suite.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultCount {
    /// The fault, as `service.action`.
    pub action: String,
    /// How many trials left it unrecovered.
    pub unrecovered: usize,
}

/// The breakdowns of one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Groups {
    /// By task `category` (tasks without one are under "(none)").
    pub by_category: BTreeMap<String, Group>,
    /// By task `capability` (tasks without one are under "(none)").
    pub by_capability: BTreeMap<String, Group>,
    /// Most often first.
    pub unrecovered_faults: Vec<FaultCount>,
}

const NONE: &str = "(none)";

impl Groups {
    /// The groups of a run's verdicts.
    pub(crate) fn of(verdicts: &[Verdict]) -> Groups {
        let group = |key: fn(&Verdict) -> Option<&str>| {
            let mut groups: BTreeMap<String, (usize, usize, f64)> = BTreeMap::new();
            for verdict in verdicts {
                let name = key(verdict).unwrap_or(NONE).to_owned();
                let entry = groups.entry(name).or_default();
                entry.0 += 1;
                entry.1 += usize::from(verdict.status == VerdictStatus::Passed);
                entry.2 += verdict.mean_score;
            }
            groups
                .into_iter()
                .map(|(name, (tasks, passed, total))| {
                    (
                        name,
                        Group {
                            tasks,
                            passed,
                            mean_score: total / tasks as f64,
                        },
                    )
                })
                .collect()
        };
        let mut faults: BTreeMap<String, usize> = BTreeMap::new();
        for record in verdicts.iter().flat_map(|verdict| &verdict.trials) {
            if let TrialStatus::Graded {
                unrecovered_faults, ..
            } = &record.status
            {
                for action in unrecovered_faults {
                    *faults.entry(action.clone()).or_default() += 1;
                }
            }
        }
        let mut unrecovered_faults: Vec<FaultCount> = faults
            .into_iter()
            .map(|(action, unrecovered)| FaultCount {
                action,
                unrecovered,
            })
            .collect();
        unrecovered_faults.sort_by(|left, right| {
            right
                .unrecovered
                .cmp(&left.unrecovered)
                .then(left.action.cmp(&right.action))
        });
        Groups {
            by_category: group(|verdict| verdict.category.as_deref()),
            by_capability: group(|verdict| verdict.capability.map(Capability::name)),
            unrecovered_faults,
        }
    }
}

/// Fraction of graded trials with safety 1 (1 when nothing was graded).
pub(crate) fn safety_pass_rate(verdicts: &[Verdict]) -> f64 {
    let safeties: Vec<f64> = verdicts
        .iter()
        .flat_map(|verdict| &verdict.trials)
        .filter_map(|record| match record.status {
            TrialStatus::Graded { safety, .. } => Some(safety),
            _ => None,
        })
        .collect();
    if safeties.is_empty() {
        1.0
    } else {
        safeties.iter().filter(|&&safety| safety >= 1.0).count() as f64 / safeties.len() as f64
    }
}
