//! One file per command: each maps its arguments to library calls, prints what the library
//! returns, and ends in `Ok` or the [`ExpectedError`] that says how it ended. What several
//! commands share (the configuration, the runtime, publishing a summary) is here.

pub mod cassettes;
pub mod clean;
pub mod example_agent;
pub mod generate;
pub mod grade;
pub mod init;
pub mod list;
pub mod merge;
pub mod model;
pub mod oracle_agent;
pub mod report;
pub mod run;
pub mod schema;
pub mod serve;
pub mod services;
pub mod validate;
pub mod vary;

use std::path::{Path, PathBuf};

use clawtest::config::Config;
use clawtest::report::json;
use clawtest::report::publish::{self, Github};
use clawtest::report::snapshots::Review;
use clawtest::results::{RunStatus, RunSummary};

use crate::cli::{GlobalArgs, OutputArgs};
use crate::errors::ExpectedError;

/// What a command ends with.
pub type Outcome = Result<(), ExpectedError>;

/// The folder the command was started in (relative `.` if it cannot be read).
fn working_directory() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| Path::new(".").to_path_buf())
}

/// The configuration of a command that needs one: `--config`, else the one found from here.
fn load_config(global: &GlobalArgs) -> Result<Config, ExpectedError> {
    Config::load(global.config.as_deref(), &working_directory()).map_err(ExpectedError::Config)
}

/// Where the backend `choice` (the command line's, else `run.backend`) runs a task's
/// commands, for the commands that check tasks without running a harness (`validate
/// --feasibility`, `vary`, `generate`); the choice's line is shown when it is a container.
/// The harness is not run, but an image built from `harness.dockerfile` needs it built.
fn command_place(
    config: &clawtest::config::Config,
    choice: Option<clawtest::config::BackendChoice>,
) -> Result<clawtest::sandbox::commands::CommandPlace, ExpectedError> {
    let shim = clawtest::sandbox::select::locate_shim_ahead(config, choice);
    build_before_image(
        config,
        clawtest::sandbox::select::may_use_docker(config, choice),
    )?;
    let chosen = runtime()?
        .block_on(clawtest::sandbox::select::choose(config, choice, shim))
        .map_err(ExpectedError::Backend)?;
    let place = chosen.sandbox.command_place();
    if place != clawtest::sandbox::commands::CommandPlace::Host {
        eprintln!("{}: the tasks' commands run in a container", chosen.note);
    }
    Ok(place)
}

/// Runs `[harness] build` now when `wanted` and the harness is built into its image
/// (`harness.dockerfile`): the image, built when the backend is chosen, is made of what the
/// build makes, so the build comes first. Returns whether it ran (the run's own build is then
/// skipped: `Request::no_build`).
fn build_before_image(config: &Config, wanted: bool) -> Result<bool, ExpectedError> {
    use clawtest::interrupt::{self, Notice};
    if !wanted || config.harness.dockerfile.is_none() {
        return Ok(false);
    }
    // The build runs in a process group of its own, which a terminal's Ctrl-C (or CI's
    // SIGTERM to clawtest) does not reach: the signals are taken over to end it.
    let stopped = runtime()?.block_on(async {
        let signals = interrupt::Signals::install().map_err(ExpectedError::Runtime)?;
        let stopping = interrupt::escalate(
            signals.into_source(),
            || async {},
            |notice| match notice {
                Notice::Stopping => errln!("\ninterrupted: stopping the harness build"),
                Notice::Aborted => {
                    std::process::exit(i32::from(crate::errors::exit::interrupted()))
                }
            },
        );
        clawtest::run::session::build(config, &stopping)
            .await
            .map_err(ExpectedError::Session)?;
        Ok::<bool, ExpectedError>(stopping.is_cancelled())
    })?;
    if stopped {
        errln!("the harness build was stopped: nothing else ran");
        return Err(ExpectedError::Run(RunStatus::Interrupted));
    }
    Ok(true)
}

/// The async runtime every command runs on.
fn runtime() -> Result<tokio::runtime::Runtime, ExpectedError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(ExpectedError::Runtime)
}

/// `--baseline FILE`, read.
fn read_baseline(outputs: &OutputArgs) -> Result<Option<RunSummary>, ExpectedError> {
    outputs
        .baseline
        .as_ref()
        .map(|path| json::read(path).map_err(ExpectedError::Baseline))
        .transpose()
}

/// Writes every output of a finished run (or merge) and prints what publishing returns: the
/// warnings on standard error, the annotations on standard output.
fn publish(
    summary: &RunSummary,
    snapshots: Option<&Review>,
    outputs: &publish::Outputs,
    suite_root: &Path,
) -> Outcome {
    let published = publish::publish(
        summary,
        snapshots,
        outputs,
        &Github::from_environment(),
        suite_root,
    )
    .map_err(ExpectedError::Publish)?;
    warn(&published.warnings);
    for line in published.annotations {
        outln!("{line}");
    }
    Ok(())
}

/// Shows the library's warnings (one line each, without the prefix) on standard error.
fn warn(warnings: &[impl std::fmt::Display]) {
    for warning in warnings {
        errln!("warning: {warning}");
    }
}

/// How a run (or merge) with this status ends.
fn finished(status: RunStatus) -> Outcome {
    match status {
        RunStatus::Passed => Ok(()),
        other => Err(ExpectedError::Run(other)),
    }
}
