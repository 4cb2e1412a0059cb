//! Merging shards: the results of `--partition` runs combined into one summary, gated and
//! compared as if the suite had run in one job, costing what the shards cost together.

use std::collections::BTreeSet;
use std::path::PathBuf;

use super::cause::SnapshotFailures;
use super::{RunSummary, SummaryInputs};
use crate::config::Gates;
use crate::llm::Money;

/// Shards that cannot be merged.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MergeError {
    /// No results file was given.
    #[error("nothing to merge: give one or more results files")]
    Empty,
    /// Two shards ran a different number of trials per task.
    #[error("{} ran {found} trial(s) per task but {} ran {expected}: shards of one run must use the same --trials", found_in.display(), expected_in.display())]
    Trials {
        /// The trials per task of the first shard.
        expected: u32,
        /// The first shard's results file.
        expected_in: PathBuf,
        /// The trials per task of the shard that differs.
        found: u32,
        /// That shard's results file.
        found_in: PathBuf,
    },
    /// One task is in two shards.
    #[error("task `{task_id}` appears in more than one shard ({}): were the shards partitioned the same way?", files.iter().map(|file| file.display().to_string()).collect::<Vec<_>>().join(", "))]
    Duplicate {
        /// The task's `task_id`.
        task_id: String,
        /// The results files that both hold it.
        files: Vec<PathBuf>,
    },
}

/// Combines shard results; gates are evaluated, and `baseline` compared, over the whole.
pub fn merge(
    parts: Vec<(PathBuf, RunSummary)>,
    gates: &Gates,
    baseline: Option<&RunSummary>,
) -> Result<RunSummary, MergeError> {
    let Some((first_path, first)) = parts.first() else {
        return Err(MergeError::Empty);
    };
    let (k, backend) = (first.k, first.backend.clone());
    let first_path = first_path.clone();
    let mut verdicts = Vec::new();
    let mut invalid = Vec::new();
    let mut interrupted = false;
    let mut snapshots = SnapshotFailures::default();
    // Each shard's own cost and spend: the shards together cost and spent the sums (in whole
    // nano-dollars, so the same in any order).
    let (mut cost, mut spent) = (Money::ZERO, Money::ZERO);
    let mut seen: Vec<(String, PathBuf)> = Vec::new();
    for (path, part) in parts {
        if part.k != k {
            return Err(MergeError::Trials {
                expected: k,
                expected_in: first_path,
                found: part.k,
                found_in: path,
            });
        }
        for verdict in &part.verdicts {
            if let Some((_, other)) = seen.iter().find(|(id, _)| *id == verdict.task_id) {
                return Err(MergeError::Duplicate {
                    task_id: verdict.task_id.clone(),
                    files: vec![other.clone(), path.clone()],
                });
            }
            seen.push((verdict.task_id.clone(), path.clone()));
        }
        interrupted |= part.interrupted;
        snapshots.merge(&part.snapshots);
        // Results written before the snapshots were named say only that one changed.
        snapshots.not_compared |= part.snapshots_changed && part.snapshots.is_empty();
        cost += Money::from_usd(part.cost_usd);
        spent += Money::from_usd(part.spent_usd);
        verdicts.extend(part.verdicts);
        invalid.extend(part.invalid);
    }
    // The order of an unsharded run: by task file, as discovered.
    verdicts.sort_by(|left, right| {
        left.path
            .cmp(&right.path)
            .then(left.task_id.cmp(&right.task_id))
    });
    // Every shard reports the same invalid files (validation runs before partitioning).
    let mut unique = BTreeSet::new();
    invalid.retain(|entry| unique.insert(entry.path.clone()));
    Ok(RunSummary::new(SummaryInputs {
        verdicts,
        invalid,
        k,
        backend: &backend,
        interrupted,
        cost_usd: cost.usd(),
        spent_usd: spent.usd(),
        gates,
        baseline,
        snapshots,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::RunStatus;

    /// A shard's results with no tasks that cost `cost_usd`.
    fn shard(cost_usd: f64) -> RunSummary {
        shard_with(cost_usd, false)
    }

    fn shard_with(cost_usd: f64, snapshots_changed: bool) -> RunSummary {
        RunSummary::new(SummaryInputs {
            verdicts: Vec::new(),
            invalid: Vec::new(),
            k: 3,
            backend: "process",
            interrupted: false,
            cost_usd,
            // A live shard spends what its calls cost.
            spent_usd: cost_usd,
            gates: &Gates::default(),
            baseline: None,
            snapshots: if snapshots_changed {
                SnapshotFailures {
                    changed: vec!["todo-review".into()],
                    ..SnapshotFailures::default()
                }
            } else {
                SnapshotFailures::default()
            },
        })
    }

    #[test]
    fn a_shard_failed_by_a_changed_snapshot_fails_the_merged_run() {
        let changed = shard_with(0.0, true);
        assert_eq!(changed.status, RunStatus::Failed);
        // Through the results file, as `merge` reads shards.
        let text = serde_json::to_string(&changed).unwrap();
        let read: RunSummary = serde_json::from_str(&text).unwrap();
        let parts = vec![
            (PathBuf::from("shard1.json"), shard(0.0)),
            (PathBuf::from("shard2.json"), read),
        ];
        let merged = merge(parts, &Gates::default(), None).unwrap();
        assert_eq!(merged.status, RunStatus::Failed);
        assert!(merged.snapshots_changed);
        // The merged run names the snapshot, as the shard did.
        assert_eq!(merged.snapshots.changed, ["todo-review"]);
        assert_eq!(
            merged.failure_cause().as_deref(),
            Some("1 changed snapshot(s) (todo-review)")
        );
        // A passing shard's file does not mention snapshots at all.
        assert!(
            !serde_json::to_string(&shard(0.0))
                .unwrap()
                .contains("snapshots_changed")
        );
    }

    #[test]
    fn the_merged_cost_is_the_sum_of_the_shards_costs() {
        let parts = vec![
            (PathBuf::from("shard1.json"), shard(0.1)),
            (PathBuf::from("shard2.json"), shard(0.2)),
        ];
        let merged = merge(parts, &Gates::default(), None).unwrap();
        // Summed as money, not floats (0.1 + 0.2 is 0.30000000000000004 as floats).
        assert_eq!((merged.cost_usd, merged.spent_usd), (0.3, 0.3));
    }
}
