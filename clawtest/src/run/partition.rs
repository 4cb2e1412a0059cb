//! Sharding a suite across CI jobs: `hash:M/N` keeps a task in shard M when a stable hash of
//! its id falls there (adding or removing tasks never moves the others), `count:M/N` deals
//! the selected tasks round robin (even shards, but they shift as tasks are added).

use std::fmt;
use std::str::FromStr;

/// Which shard of a suite to run. `index` is 1-based, as written on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partition {
    /// How tasks are dealt to the shards.
    pub(crate) kind: PartitionKind,
    /// The shard to run, from 1 to `count`.
    pub(crate) index: u64,
    /// How many shards the suite is cut into.
    pub(crate) count: u64,
}

/// How a [`Partition`] deals the tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PartitionKind {
    /// `hash:M/N`: by a stable hash of the task id.
    Hash,
    /// `count:M/N`: round robin over the selected tasks.
    Count,
}

impl FromStr for Partition {
    type Err = String;

    fn from_str(text: &str) -> Result<Partition, String> {
        let usage =
            || format!("`{text}` is not a partition: write hash:M/N or count:M/N, e.g. hash:1/4");
        let (kind, shard) = text.split_once(':').ok_or_else(usage)?;
        let kind = match kind {
            "hash" => PartitionKind::Hash,
            "count" => PartitionKind::Count,
            _ => return Err(usage()),
        };
        let (index, count) = shard.split_once('/').ok_or_else(usage)?;
        let (index, count): (u64, u64) = (
            index.trim().parse().map_err(|_| usage())?,
            count.trim().parse().map_err(|_| usage())?,
        );
        if count == 0 || index == 0 || index > count {
            return Err(format!(
                "`{text}`: the shard M must be between 1 and N (N ≥ 1)"
            ));
        }
        Ok(Partition { kind, index, count })
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.shard().fmt(formatter)
    }
}

impl Partition {
    /// The shard as a run's results record it, for `merge` to check the set.
    pub(crate) fn shard(&self) -> crate::results::merge::Shard {
        crate::results::merge::Shard {
            kind: match self.kind {
                PartitionKind::Hash => "hash",
                PartitionKind::Count => "count",
            }
            .to_string(),
            index: self.index,
            count: self.count,
        }
    }

    /// Whether the task with this id, at this position among the selected tasks, is in the
    /// shard.
    pub(crate) fn contains(&self, task_id: &str, position: usize) -> bool {
        let bucket = match self.kind {
            PartitionKind::Hash => stable_hash(task_id) % self.count,
            PartitionKind::Count => position as u64 % self.count,
        };
        bucket == self.index - 1
    }
}

/// FNV-1a, 64 bits: stable across builds, platforms and Rust versions (std's hasher is not).
pub(crate) fn stable_hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(count: usize) -> Vec<String> {
        (0..count).map(|index| format!("task-{index:03}")).collect()
    }

    #[test]
    fn shards_cover_every_task_exactly_once() {
        for kind in ["hash", "count"] {
            let tasks = ids(40);
            let mut seen = vec![0; tasks.len()];
            for index in 1..=4 {
                let partition: Partition = format!("{kind}:{index}/4").parse().unwrap();
                for (position, id) in tasks.iter().enumerate() {
                    if partition.contains(id, position) {
                        seen[position] += 1;
                    }
                }
            }
            assert!(seen.iter().all(|&times| times == 1), "{kind}: {seen:?}");
        }
    }

    #[test]
    fn hash_shards_do_not_move_when_tasks_are_added() {
        let partition: Partition = "hash:2/3".parse().unwrap();
        let before: Vec<String> = ids(20)
            .into_iter()
            .filter(|id| partition.contains(id, 0))
            .collect();
        let after: Vec<String> = ids(30)
            .into_iter()
            .filter(|id| partition.contains(id, 0))
            .collect();
        assert!(before.iter().all(|id| after.contains(id)));
    }

    #[test]
    fn bad_partitions_say_how_to_write_one() {
        assert_eq!(
            "hash:0/3".parse::<Partition>().unwrap_err(),
            "`hash:0/3`: the shard M must be between 1 and N (N ≥ 1)"
        );
        assert!(
            "slice:1/2"
                .parse::<Partition>()
                .unwrap_err()
                .contains("hash:M/N or count:M/N")
        );
        assert_eq!(
            "count:2/5".parse::<Partition>().unwrap().to_string(),
            "count:2/5"
        );
    }
}
