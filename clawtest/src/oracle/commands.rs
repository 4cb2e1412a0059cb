//! The command checks (`exit_code`, `pytest_pass`) of a feasibility proof: run as the
//! process backend runs them after a harness (the same runner, `sh -c` in the workspace, the
//! same time limits), in a scratch workspace holding the task's files and the oracle's.
//! They run on the host: `validate --feasibility` trusts a task's commands as `run` does
//! on the process backend.

use std::path::Path;

use super::PlannedFile;
use crate::grade::commands;
use crate::sandbox::{CheckCommand, SandboxError};
use crate::task::Task;
use crate::trajectory::CommandRun;

/// How much of a command's output the proof keeps (as a trajectory does).
const OUTPUT_TAIL: usize = 2000;

/// Why a proof's commands could not be run (not: why they failed).
#[derive(Debug, thiserror::Error)]
pub(crate) enum CommandsError {
    /// No scratch workspace could be made.
    #[error("cannot make a scratch workspace: {0}")]
    Workspace(std::io::Error),
    /// No runtime could be started for them.
    #[error("cannot start a runtime for the commands: {0}")]
    Runtime(std::io::Error),
    /// A task's or the oracle's file could not be laid out.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file or folder.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The runner failed (not the command).
    #[error(transparent)]
    Runner(#[from] SandboxError),
    /// The thread they ran on panicked.
    #[error("the commands' thread panicked")]
    Panicked,
}

/// The task's commands, run after an agent that left `files`; empty when the task has none.
pub(super) fn run(task: &Task, files: &[PlannedFile]) -> Result<Vec<CommandRun>, CommandsError> {
    let planned = commands::plan(task);
    if planned.is_empty() {
        return Ok(Vec::new());
    }
    let workspace = tempfile::Builder::new()
        .prefix("clawtest-feasibility-")
        .tempdir()
        .map_err(CommandsError::Workspace)?;
    lay_out(task, files, workspace.path())?;
    let environment: Vec<(std::ffi::OsString, std::ffi::OsString)> = [
        ("PATH", std::env::var_os("PATH").unwrap_or_default()),
        ("HOME", workspace.path().as_os_str().to_owned()),
        ("LANG", "C.UTF-8".into()),
        (
            "CLAWTEST_WORKSPACE",
            workspace.path().as_os_str().to_owned(),
        ),
    ]
    .into_iter()
    .map(|(name, value)| (name.into(), value))
    .collect();
    // The commands run on a thread of their own: a proof is synchronous, and its callers
    // (`run --variants` among them) may already be inside a runtime, where another cannot
    // block.
    std::thread::scope(|scope| {
        scope
            .spawn(|| run_all(planned, workspace.path(), &environment))
            .join()
            .unwrap_or(Err(CommandsError::Panicked))
    })
}

/// Runs `planned` one after another in `workspace`, each as the process backend would.
fn run_all(
    planned: Vec<commands::PlannedCommand>,
    workspace: &Path,
    environment: &[(std::ffi::OsString, std::ffi::OsString)],
) -> Result<Vec<CommandRun>, CommandsError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CommandsError::Runtime)?;
    // Nothing interrupts a proof: validate is not a run.
    let interrupt = tokio_util::sync::CancellationToken::new();
    let mut runs = Vec::new();
    for command in planned {
        let check = CheckCommand {
            command: vec!["sh".into(), "-c".into(), command.command.clone()],
            timeout: std::time::Duration::from_secs(command.timeout_seconds),
        };
        let outcome = runtime.block_on(crate::sandbox::process::run_check(
            &check,
            workspace,
            environment,
            // The default cap on a command's output (`[limits] output_bytes`).
            crate::config::LimitsConfig::default().output_bytes,
            &interrupt,
        ))?;
        let output = format!("{}{}", outcome.stdout, outcome.stderr);
        let cut = output.len().saturating_sub(OUTPUT_TAIL);
        let start = (cut..=output.len())
            .find(|&at| output.is_char_boundary(at))
            .unwrap_or(output.len());
        runs.push(CommandRun {
            command: command.command,
            exit_code: outcome.exit_code,
            timed_out: outcome.timed_out,
            output_tail: output[start..].to_owned(),
        });
    }
    Ok(runs)
}

/// The task's files (checked again as they are copied) and the oracle's, in `workspace`.
fn lay_out(task: &Task, files: &[PlannedFile], workspace: &Path) -> Result<(), CommandsError> {
    let written = |path: &Path, result: std::io::Result<u64>| {
        result.map(drop).map_err(|source| CommandsError::Write {
            path: path.to_path_buf(),
            source,
        })
    };
    for file in &task.files {
        let target = workspace.join(&file.target);
        if let Some(parent) = target.parent() {
            written(parent, std::fs::create_dir_all(parent).map(|()| 0))?;
        }
        let copied = file.open_source().and_then(|mut source| {
            std::io::copy(&mut source, &mut std::fs::File::create(&target)?)
        });
        written(&target, copied)?;
    }
    for file in files {
        let target = workspace.join(&file.path);
        if let Some(parent) = target.parent() {
            written(parent, std::fs::create_dir_all(parent).map(|()| 0))?;
        }
        written(&target, std::fs::write(&target, &file.content).map(|()| 0))?;
    }
    Ok(())
}
