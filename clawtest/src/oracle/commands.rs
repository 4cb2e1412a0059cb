//! The command checks (`exit_code`, `pytest_pass`) of a feasibility proof: laid out in a
//! scratch workspace holding the task's files and the oracle's, and run where the
//! `sandbox::commands` rule says (on the host as the process backend runs a trial's checks,
//! `sh -c` in the workspace with the same time limits; in a container of the harness image on
//! the docker backend), or not at all.

use std::path::Path;

use super::PlannedFile;
use crate::grade::commands;
use crate::sandbox::CheckCommand;
use crate::sandbox::commands::{Commands, CommandsError as RunError};
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
    /// The rule refused them, or their runner failed (not the commands).
    #[error(transparent)]
    Run(#[from] RunError),
    /// The thread they ran on panicked.
    #[error("the commands' thread panicked")]
    Panicked,
}

/// The task's commands, run where `place` says after an agent that left `files`; empty when
/// the task has none (then nothing is refused either).
pub(super) fn run(
    task: &Task,
    files: &[PlannedFile],
    place: &Commands,
) -> Result<Vec<CommandRun>, CommandsError> {
    let planned = commands::plan(task);
    if planned.is_empty() {
        return Ok(Vec::new());
    }
    if let Some(refusal) = place.refusal() {
        return Err(RunError::Refused(refusal.clone()).into());
    }
    let folder =
        crate::sandbox::scratch::folder("feasibility").map_err(CommandsError::Workspace)?;
    let workspace = folder.path().join("workspace");
    lay_out(task, files, &workspace)?;
    let checks: Vec<CheckCommand> = planned
        .iter()
        .map(|command| CheckCommand {
            command: vec!["sh".into(), "-c".into(), command.command.clone()],
            timeout: std::time::Duration::from_secs(command.timeout_seconds),
        })
        .collect();
    // The commands run on a thread of their own: a proof is synchronous, and its callers
    // (`run --variants` among them) may already be inside a runtime, where another cannot
    // block.
    let outcomes = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(CommandsError::Runtime)?;
                // Nothing interrupts a proof: validate is not a run.
                let interrupt = tokio_util::sync::CancellationToken::new();
                runtime
                    .block_on(place.run(
                        &task.id,
                        folder.path(),
                        &checks,
                        // The default cap on a command's output (`[limits] output_bytes`).
                        crate::config::LimitsConfig::default().output_bytes,
                        &interrupt,
                    ))
                    .map_err(CommandsError::from)
            })
            .join()
            .unwrap_or(Err(CommandsError::Panicked))
    })?;
    Ok(planned
        .into_iter()
        .zip(outcomes)
        .map(|(command, outcome)| {
            let output = format!("{}{}", outcome.stdout, outcome.stderr);
            let cut = output.len().saturating_sub(OUTPUT_TAIL);
            let start = (cut..=output.len())
                .find(|&at| output.is_char_boundary(at))
                .unwrap_or(output.len());
            CommandRun {
                command: command.command,
                exit_code: outcome.exit_code,
                timed_out: outcome.timed_out,
                output_tail: output[start..].to_owned(),
            }
        })
        .collect())
}

/// The task's files (checked again as they are copied) and the oracle's, in `workspace`.
fn lay_out(task: &Task, files: &[PlannedFile], workspace: &Path) -> Result<(), CommandsError> {
    let written = |path: &Path, result: std::io::Result<u64>| {
        result.map(drop).map_err(|source| CommandsError::Write {
            path: path.to_path_buf(),
            source,
        })
    };
    written(workspace, std::fs::create_dir_all(workspace).map(|()| 0))?;
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
