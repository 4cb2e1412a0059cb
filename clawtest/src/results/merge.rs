//! Merging shards: the results of `--partition` runs combined into one summary, gated and
//! compared as if the suite had run in one job, costing what the shards cost together. Each
//! shard's results name their shard ([`Shard`]), and a set with a shard missing, twice, or of
//! another partition is refused: a lost shard job must not merge into a passing run.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::cause::SnapshotFailures;
use super::{RunSummary, SummaryInputs};
use crate::config::Gates;
use crate::llm::Money;

/// Which shard of a sharded run a results file holds: `--partition hash:2/4` is shard 2 of 4,
/// dealt by hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// How the tasks were dealt: `hash` or `count`.
    pub kind: String,
    /// The shard, from 1 to `count`.
    pub index: u64,
    /// How many shards the run was cut into.
    pub count: u64,
}

impl fmt::Display for Shard {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}:{}/{}", self.kind, self.index, self.count)
    }
}

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
    /// Some results files hold shards and one holds a whole run (or results from before shards
    /// were recorded).
    #[error("{} holds no shard (it was not run with --partition) but {} holds {shard}: merge the results of one sharded run", path.display(), sharded.display())]
    NotAShard {
        /// The results file without a shard.
        path: PathBuf,
        /// A results file with one.
        sharded: PathBuf,
        /// Its shard.
        shard: Shard,
    },
    /// Two shards were cut differently (another kind or another number of shards).
    #[error("{} holds {found} but {} holds {expected}: the shards of one run are cut the same way", found_in.display(), expected_in.display())]
    OtherPartition {
        /// The first shard, as `--partition` writes it.
        expected: String,
        /// Its results file.
        expected_in: PathBuf,
        /// The shard cut otherwise.
        found: String,
        /// Its results file.
        found_in: PathBuf,
    },
    /// One shard's results were given twice.
    #[error("{shard} is given twice ({}): give each shard's results once", files.iter().map(|file| file.display().to_string()).collect::<Vec<_>>().join(", "))]
    SameShard {
        /// The shard.
        shard: Shard,
        /// The results files that both hold it.
        files: Vec<PathBuf>,
    },
    /// A shard's results are missing: its tasks would be neither passed nor failed.
    #[error("{} of {count} shards given: {} missing (did its job fail before writing results?); merge needs every shard", given, missing.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))]
    Incomplete {
        /// The shards without results.
        missing: Vec<Shard>,
        /// How many were given.
        given: usize,
        /// How many the run was cut into.
        count: u64,
    },
}

/// Checks that the shards are one whole sharded run: each of its N shards once, cut the same
/// way. Results without shards (whole runs, or results written before shards were recorded)
/// merge as before, when none has one.
fn check_complete(shards: &[(&Path, Option<&Shard>)]) -> Result<(), MergeError> {
    let Some((sharded, first)) = shards
        .iter()
        .find_map(|(path, shard)| shard.map(|shard| (*path, shard)))
    else {
        return Ok(());
    };
    let mut given: BTreeMap<u64, &Path> = BTreeMap::new();
    for (path, shard) in shards {
        let Some(shard) = shard else {
            return Err(MergeError::NotAShard {
                path: path.to_path_buf(),
                sharded: sharded.to_path_buf(),
                shard: first.clone(),
            });
        };
        if shard.kind != first.kind || shard.count != first.count {
            return Err(MergeError::OtherPartition {
                expected: first.to_string(),
                expected_in: sharded.to_path_buf(),
                found: shard.to_string(),
                found_in: path.to_path_buf(),
            });
        }
        if let Some(other) = given.insert(shard.index, path) {
            return Err(MergeError::SameShard {
                shard: (*shard).clone(),
                files: vec![other.to_path_buf(), path.to_path_buf()],
            });
        }
    }
    let missing: Vec<Shard> = (1..=first.count)
        .filter(|index| !given.contains_key(index))
        .map(|index| Shard {
            index,
            ..first.clone()
        })
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(MergeError::Incomplete {
            missing,
            given: given.len(),
            count: first.count,
        })
    }
}

/// Combines shard results; gates are evaluated, and `baseline` compared, over the whole.
pub fn merge(
    parts: Vec<(PathBuf, RunSummary)>,
    gates: &Gates,
    baseline: Option<&RunSummary>,
) -> Result<RunSummary, MergeError> {
    if parts.is_empty() {
        return Err(MergeError::Empty);
    }
    // Each set of cells is cut into shards of its own (a job per cell and shard, or a job per
    // shard running every cell): each set must be whole.
    let mut by_cells: BTreeMap<Vec<String>, Vec<(&Path, Option<&Shard>)>> = BTreeMap::new();
    for (path, part) in &parts {
        let cells = part.cells.iter().map(super::matrix::Cell::name).collect();
        by_cells
            .entry(cells)
            .or_default()
            .push((path.as_path(), part.shard.as_ref()));
    }
    for shards in by_cells.values() {
        check_complete(shards)?;
    }
    combine(parts, gates, baseline)
}

/// Combines results of disjoint parts of a run (shards, or a matrix's cells), without asking
/// whether the set is whole: gates are evaluated, and `baseline` compared, over the whole.
pub(crate) fn combine(
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
    let mut seen: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut cells = BTreeSet::new();
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
            // In a matrix, one task in two cells is two verdicts.
            let key = super::matrix::key(verdict);
            if let Some(other) = seen.get(&key) {
                return Err(MergeError::Duplicate {
                    task_id: key,
                    files: vec![other.clone(), path.clone()],
                });
            }
            seen.insert(key, path.clone());
        }
        interrupted |= part.interrupted;
        snapshots.merge(&part.snapshots);
        // Results written before the snapshots were named say only that one changed.
        snapshots.not_compared |= part.snapshots_changed && part.snapshots.is_empty();
        cost += Money::from_usd(part.cost_usd);
        spent += Money::from_usd(part.spent_usd);
        cells.extend(part.cells);
        verdicts.extend(part.verdicts);
        invalid.extend(part.invalid);
    }
    // The order of an unsharded run: by cell, then by task file, as discovered.
    verdicts.sort_by(|left, right| {
        left.cell
            .cmp(&right.cell)
            .then(left.path.cmp(&right.path))
            .then(left.task_id.cmp(&right.task_id))
    });
    // Every shard reports the same invalid files (validation runs before partitioning).
    let mut unique = BTreeSet::new();
    invalid.retain(|entry| unique.insert(entry.path.clone()));
    let mut summary = RunSummary::new(SummaryInputs {
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
    });
    summary.cells = cells.into_iter().collect();
    Ok(summary)
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

    /// A shard's results with no tasks, for shard `index` of `count` dealt by `kind`.
    fn numbered(kind: &str, index: u64, count: u64) -> RunSummary {
        RunSummary {
            shard: Some(Shard {
                kind: kind.into(),
                index,
                count,
            }),
            ..shard(0.0)
        }
    }

    fn merged(parts: &[(&str, RunSummary)]) -> Result<RunSummary, MergeError> {
        let parts = parts
            .iter()
            .map(|(file, part)| (PathBuf::from(file), part.clone()))
            .collect();
        merge(parts, &Gates::default(), None)
    }

    #[test]
    fn every_shard_once_and_cut_the_same_way_merges_in_any_order() {
        let set = [
            ("3.json", numbered("hash", 3, 3)),
            ("1.json", numbered("hash", 1, 3)),
            ("2.json", numbered("hash", 2, 3)),
        ];
        let whole = merged(&set).unwrap();
        // The merged run is whole: it names no shard.
        assert_eq!(whole.shard, None);
        // Results without shards (whole runs, older files) merge as before.
        assert!(merged(&[("a.json", shard(0.0)), ("b.json", shard(0.0))]).is_ok());
    }

    #[test]
    fn a_set_with_a_shard_missing_twice_or_cut_otherwise_is_refused_naming_it() {
        let error = merged(&[
            ("1.json", numbered("hash", 1, 4)),
            ("3.json", numbered("hash", 3, 4)),
        ])
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "2 of 4 shards given: hash:2/4, hash:4/4 missing (did its job fail before writing \
             results?); merge needs every shard"
        );
        let twice = merged(&[
            ("1.json", numbered("count", 1, 2)),
            ("again.json", numbered("count", 1, 2)),
        ])
        .unwrap_err();
        assert_eq!(
            twice.to_string(),
            "count:1/2 is given twice (1.json, again.json): give each shard's results once"
        );
        let other = merged(&[
            ("1.json", numbered("hash", 1, 2)),
            ("2.json", numbered("count", 2, 2)),
        ])
        .unwrap_err();
        assert_eq!(
            other.to_string(),
            "2.json holds count:2/2 but 1.json holds hash:1/2: the shards of one run are cut \
             the same way"
        );
        let whole_run = merged(&[
            ("whole.json", shard(0.0)),
            ("1.json", numbered("hash", 1, 1)),
        ])
        .unwrap_err();
        assert!(
            matches!(&whole_run, MergeError::NotAShard { path, .. } if path.as_os_str() == "whole.json"),
            "{whole_run:?}"
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
