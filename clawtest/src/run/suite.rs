//! Discovery and loading: the configured globs (or explicit paths) → task files → validated
//! tasks and invalid ones, then the command line's filters. Invalid tasks are kept, to be
//! reported; they are never run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::partition::Partition;
use crate::config::Config;
use crate::discover::{self, DiscoverError};
use crate::services::Catalogue;
use crate::task::{self, InvalidTask, Problem, Task};

/// The tasks of one run.
#[derive(Debug)]
pub struct Suite {
    /// The valid tasks selected, in discovery order.
    pub tasks: Vec<Task>,
    /// The task files that failed validation: reported, never run.
    pub invalid: Vec<InvalidTask>,
    /// Tasks left out by the filters.
    pub filtered_out: usize,
    /// The services the tasks were loaded with: the catalogue given and the suite's library
    /// (`services/`, `task::library`); what a run serves and the feasibility proof plays on.
    pub catalogue: Catalogue,
}

/// The folders a task file may be a file of, most specific first: the folders given on the
/// command line (`cargo clawtest run Auto-ClawEval/` runs that folder as ClawEnvKit's
/// `--dataset` would), then the suite root.
fn dataset_roots(root: &Path, paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = paths.iter().filter(|path| path.is_dir()).cloned().collect();
    // The deepest folder first: a file under two folders given belongs to the nearer one.
    roots.sort_by_key(|path| std::cmp::Reverse(path.components().count()));
    roots.push(root.to_path_buf());
    roots
}

/// The dataset `file` is looked up in: the first of `roots` it lies under, else the last
/// (the suite root).
fn dataset_of(roots: &[PathBuf], file: &Path) -> PathBuf {
    roots
        .iter()
        .find(|root| file.starts_with(root))
        .or(roots.last())
        .cloned()
        .unwrap_or_default()
}

/// Loads every task the configuration names (or the explicit `paths`), then keeps those whose
/// id or path contains one of `filters` (all when there are none). Paths in tasks are shown
/// relative to the suite root. The suite's service library extends `catalogue`; a library
/// file that cannot be used is reported with the invalid task files.
pub(crate) fn load(
    config: &Config,
    paths: &[PathBuf],
    filters: &[String],
    partition: Option<Partition>,
    catalogue: &Catalogue,
) -> Result<Suite, DiscoverError> {
    let files = if paths.is_empty() {
        discover::task_files(&config.root, &config.tasks)?
    } else {
        discover::explicit_files(paths)?
    };
    let library = task::library::load(&config.root, catalogue);
    let catalogue = library.catalogue;
    let mut tasks = Vec::new();
    let mut invalid = library.invalid;
    let datasets = dataset_roots(&config.root, paths);
    let dataset_of = |file: &Path| dataset_of(&datasets, file);
    for (file, outcome) in files
        .iter()
        .zip(task::load_all(&files, &dataset_of, &catalogue))
    {
        let shown = display_path(&config.root, file);
        match outcome {
            Ok(mut task) => {
                task.path = shown;
                tasks.push(task);
            }
            Err(mut error) => {
                error.set_path(shown);
                invalid.push(error);
            }
        }
    }
    reject_duplicate_ids(&mut tasks, &mut invalid);
    let before = tasks.len();
    let matches = |task: &Task| {
        filters.is_empty()
            || filters.iter().any(|filter| {
                task.id.contains(filter.as_str())
                    || task.path.to_string_lossy().contains(filter.as_str())
            })
    };
    tasks.retain(matches);
    // The partition applies after the filters, so every shard of one filtered run shares out
    // the same selection.
    if let Some(partition) = partition {
        let mut position = 0;
        tasks.retain(|task| {
            position += 1;
            partition.contains(&task.id, position - 1)
        });
    }
    let filtered_out = before - tasks.len();
    Ok(Suite {
        tasks,
        invalid,
        filtered_out,
        catalogue,
    })
}

/// Two tasks with one id would share a cassette, a JUnit testcase and a snapshot: both are
/// invalid, each pointing at the other.
fn reject_duplicate_ids(tasks: &mut Vec<Task>, invalid: &mut Vec<InvalidTask>) {
    let mut by_id: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (index, task) in tasks.iter().enumerate() {
        by_id.entry(task.id.clone()).or_default().push(index);
    }
    let duplicated: Vec<usize> = by_id
        .values()
        .filter(|indices| indices.len() > 1)
        .flatten()
        .copied()
        .collect();
    if duplicated.is_empty() {
        return;
    }
    for &index in &duplicated {
        let task = &tasks[index];
        let others: Vec<String> = by_id[&task.id]
            .iter()
            .filter(|&&other| other != index)
            .map(|&other| tasks[other].path.display().to_string())
            .collect();
        let position = task::Position {
            line: task.line,
            column: 1,
            span: None,
        };
        let problem = Problem::new(
            "task_id",
            format!("`{}` is also the id of {}", task.id, others.join(", ")),
            Some(position),
        )
        .with_help("give every task a unique task_id");
        invalid.push(InvalidTask::new(&task.path, String::new(), vec![problem]));
    }
    let mut index = 0;
    tasks.retain(|_| {
        let keep = !duplicated.contains(&index);
        index += 1;
        keep
    });
}

fn display_path(root: &Path, file: &Path) -> PathBuf {
    let absolute_root = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
    let absolute_file = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
    absolute_file
        .strip_prefix(&absolute_root)
        .map(Path::to_path_buf)
        .unwrap_or(absolute_file)
}
