//! Re-grading saved trajectories: each file's task is found in the suite by its id, and the
//! grade is computed again, purely, from the saved trajectory. No agent, model or service runs.
//! [`grade_one`] is the same for one result given by hand (`grade TASK.yaml --audit FILE`), in
//! ClawEnvKit's form or as a clawtest trajectory, with a suite configuration if there is one.

use std::path::{Path, PathBuf};

use crate::config::{Config, ConfigError, DEFAULT_PASS_THRESHOLD};
use crate::grade::Grade;
use crate::judge::{Judge, JudgeError, NoJudge, Recorded, grade_trajectory};
use crate::services::Catalogue;
use crate::task::{InvalidTask, Task};
use crate::trajectory::{Trajectory, from_clawenvkit};

/// The result of re-grading one file.
#[derive(Debug)]
pub struct Regraded {
    /// The trajectory file.
    pub path: PathBuf,
    /// The trajectory and its new grade, or why it could not be graded (one line, with the path).
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
/// answered by the trajectory's own judge calls (the run's answers), else by `judge`
/// (normally the suite's judge cache).
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

/// One result to grade (`grade TASK.yaml --audit FILE [--output FILE] [--workspace DIR]`).
#[derive(Debug, Clone)]
pub struct OneResult {
    /// The task file to grade against.
    pub task: PathBuf,
    /// ClawEnvKit's audit `{service: [{action, params, status}]}` (with `_injected_errors`), or
    /// a clawtest trajectory file.
    pub audit: PathBuf,
    /// The agent's final output, a text file (ClawEnvKit form only).
    pub output: Option<PathBuf>,
    /// The workspace folder the file checks read (ClawEnvKit form only).
    pub workspace: Option<PathBuf>,
    /// `--config`: the suite configuration. Without it, the one found from the task's folder,
    /// if any: it supplies only the pass threshold and the judge.
    pub config: Option<PathBuf>,
}

/// Why one result could not be graded.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum GradeOneError {
    /// The task file is invalid.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Task(Box<InvalidTask>),
    /// The configuration given, or the one found, cannot be used.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Config(#[from] ConfigError),
    /// The audit or output file cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Unreadable {
        /// The audit (`--audit`) or output (`--output`) file given.
        path: PathBuf,
        /// Why it cannot be read.
        source: std::io::Error,
    },
    /// The audit file is not JSON.
    #[error("{} is not JSON: {source}", path.display())]
    NotJson {
        /// The audit file.
        path: PathBuf,
        /// Where and why it does not parse.
        source: serde_json::Error,
    },
    /// The `--workspace` folder cannot be read.
    #[error("cannot read the workspace {}: {source}", folder.display())]
    Workspace {
        /// The `--workspace` folder the file checks would read.
        folder: PathBuf,
        /// Why it cannot be read.
        source: std::io::Error,
    },
    /// The audit is neither a clawtest trajectory nor ClawEnvKit's form.
    #[error("{}: {message}", path.display())]
    Audit {
        /// The audit file.
        path: PathBuf,
        /// What does not fit either form.
        message: String,
    },
    /// An `llm_judge` component could not be answered: not the result's fault.
    #[error(transparent)]
    Judge(#[from] JudgeError),
}

/// A result graded by [`grade_one`].
#[derive(Debug)]
pub struct GradedOne {
    /// The task file, loaded and validated.
    pub task: Task,
    /// The result's grade against it.
    pub grade: Grade,
    /// The judge's warnings (a cache answer it could not write), one line each without the
    /// `warning: ` prefix, for the caller to show.
    pub warnings: Vec<String>,
}

/// Grades one result: the task, the suite configuration (optional here: given, found from the
/// task's folder, or none), the audit, output and workspace, then the judge's answers. The
/// threshold is the task's, else the configuration's, else [`DEFAULT_PASS_THRESHOLD`].
pub async fn grade_one(
    result: &OneResult,
    catalogue: &Catalogue,
) -> Result<GradedOne, GradeOneError> {
    let start = result
        .task
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let start = std::path::absolute(&start).unwrap_or(start);
    let config = Config::optional(result.config.as_deref(), &start)?;
    // The task is a file of the suite the configuration roots (its sources may be kept there).
    let dataset = config.as_ref().map(|config| config.root.as_path());
    let task = crate::task::load_in(&result.task, dataset, catalogue)
        .map_err(|error| GradeOneError::Task(Box::new(error)))?;
    let limits = config
        .as_ref()
        .map(|config| config.limits)
        .unwrap_or_default();
    // Regular files only (a FIFO would hang, a link to /dev/zero fill the memory), each capped:
    // the audit as a saved trajectory is, the output as `agent_output.txt` is in a trial.
    let read = |path: &Path, cap: u64| {
        crate::task::read::read_regular(path, cap)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .map_err(|source| GradeOneError::Unreadable {
                path: path.to_path_buf(),
                source,
            })
    };
    let audit_text = read(&result.audit, crate::trajectory::MAX_FILE_BYTES)?;
    let audit: serde_json::Value =
        serde_json::from_str(&audit_text).map_err(|source| GradeOneError::NotJson {
            path: result.audit.clone(),
            source,
        })?;
    let output = match &result.output {
        Some(path) => read(path, limits.output_file_bytes as u64)?
            .trim()
            .to_string(),
        None => String::new(),
    };
    let workspace = match &result.workspace {
        Some(folder) => crate::sandbox::capture::snapshot(folder, &limits, &mut Vec::new())
            .map_err(|source| GradeOneError::Workspace {
                folder: folder.clone(),
                source,
            })?,
        None => Default::default(),
    };
    let trajectory = if audit.get("schema").and_then(serde_json::Value::as_str)
        == Some(crate::trajectory::SCHEMA)
    {
        Trajectory::read(&result.audit).map_err(|error| error.to_string())
    } else {
        from_clawenvkit(&task, &audit, output, workspace)
    }
    .map_err(|message| GradeOneError::Audit {
        path: result.audit.clone(),
        message,
    })?;
    let cached = config.as_ref().map(crate::judge::from_config);
    let judge: &dyn Judge = match &cached {
        Some(cached) => cached.as_ref(),
        None => &NoJudge,
    };
    let threshold = task
        .pass_threshold
        .or(config.map(|config| config.run.pass_threshold))
        .unwrap_or(DEFAULT_PASS_THRESHOLD);
    let judge = Recorded::new(&trajectory.model_calls, judge);
    let grade = grade_trajectory(&task, &trajectory, &judge, threshold).await?;
    let warnings = cached
        .map(|cached| cached.take_warnings())
        .unwrap_or_default();
    Ok(GradedOne {
        task,
        grade,
        warnings,
    })
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
    let threshold = task.pass_threshold.unwrap_or(default_threshold);
    let judge = Recorded::new(&trajectory.model_calls, judge);
    let grade = grade_trajectory(task, &trajectory, &judge, threshold)
        .await
        .map_err(|error| format!("{}: {error}", path.display()))?;
    Ok((trajectory, grade))
}
