//! Re-grading saved trajectories: each file's task is found in the suite by its id, and the
//! grade is computed again, purely, from the saved trajectory. No agent, model or service runs.

use std::path::{Path, PathBuf};

use crate::grade::{self, Grade};
use crate::judge::Judge;
use crate::spec::Task;
use crate::trajectory::Trajectory;

/// The result of re-grading one file.
#[derive(Debug)]
pub struct Regraded {
    pub path: PathBuf,
    pub outcome: Result<(Trajectory, Grade), String>,
}

/// Every `*.json` file under the given files or folders, sorted.
pub fn trajectory_files(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending: Vec<PathBuf> = paths.to_vec();
    while let Some(path) = pending.pop() {
        if path.is_dir() {
            if let Ok(entries) = std::fs::read_dir(&path) {
                pending.extend(entries.filter_map(Result::ok).map(|entry| entry.path()));
            }
        } else if path
            .extension()
            .is_some_and(|extension| extension == "json")
            || paths.contains(&path)
        {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// Re-grades each file against the task of the same id in `tasks`; `llm_judge` components are
/// answered by `judge` (normally the suite's judge cache, which holds the run's answers).
pub async fn regrade(
    files: &[PathBuf],
    tasks: &[Task],
    default_threshold: f64,
    judge: &dyn Judge,
) -> Vec<Regraded> {
    let mut results = Vec::new();
    for path in files {
        results.push(Regraded {
            path: path.clone(),
            outcome: one(path, tasks, default_threshold, judge).await,
        });
    }
    results
}

async fn one(
    path: &Path,
    tasks: &[Task],
    default_threshold: f64,
    judge: &dyn Judge,
) -> Result<(Trajectory, Grade), String> {
    let trajectory = Trajectory::read(path).map_err(|error| error.to_string())?;
    let task = tasks
        .iter()
        .find(|task| task.id == trajectory.task_id)
        .ok_or_else(|| {
            format!(
                "{}: no task `{}` in the suite (is the configuration the one the run used?)",
                path.display(),
                trajectory.task_id
            )
        })?;
    let requests = grade::judge::plan(task, &trajectory);
    let answers = crate::judge::answer_all(judge, &requests)
        .await
        .map_err(|error| format!("{}: {error}", path.display()))?;
    let grade = grade::grade(
        task,
        &trajectory,
        &answers,
        task.pass_threshold.unwrap_or(default_threshold),
    );
    Ok((trajectory, grade))
}
