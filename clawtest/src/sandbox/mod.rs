//! Where one trial's harness runs (DESIGN.md §5). The [`Sandbox`] trait is the seam: the
//! executor asks it which [`Transport`] it needs, serves the trial's services and gateway
//! there, hands it a [`Launch`] (command, prompt, tools, files, [`Endpoints`], limits, checks
//! to run afterwards) and gets back a [`Finished`] (exit, output, workspace, check results).
//! `process` runs the harness as a local command; `docker` runs it in a container.

pub mod docker;
pub mod process;
pub mod select;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::Duration;

use tokio::sync::watch;

use crate::spec::FileCopy;
use crate::trajectory::{HarnessExit, WorkspaceFile};

/// Everything a backend needs to start one trial's harness.
#[derive(Debug, Clone)]
pub struct Launch {
    pub task_id: String,
    pub trial: u32,
    pub command: Vec<String>,
    pub prompt: String,
    /// The tools.json text.
    pub tools: String,
    /// The SKILL.md text, written to the workspace.
    pub skill: String,
    /// The mcp.json text, written to the control folder.
    pub mcp_config: String,
    pub files: Vec<FileCopy>,
    /// Where the trial's services and gateway are served.
    pub endpoints: Endpoints,
    /// Host variables passed through by name (`harness.env`).
    pub passthrough: Vec<(String, String)>,
    pub timeout: Duration,
    pub max_turns: u32,
    /// Commands run after the harness has ended, in the same environment (the process
    /// backend: the workspace with the harness's environment; docker: an exec in the
    /// still-running container), in order. Their results are [`Finished::checks`].
    pub checks: Vec<CheckCommand>,
}

/// How a backend wants the trial's services and gateway served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// On loopback TCP ports of the host.
    Loopback,
    /// On Unix sockets in a folder the backend shares with the harness
    /// ([`SERVICES_SOCKET`] and [`GATEWAY_SOCKET`]).
    Sockets,
}

/// Where the trial's services and gateway are served.
#[derive(Debug, Clone)]
pub enum Endpoints {
    Loopback {
        /// Base URL of the trial's services, e.g. `http://127.0.0.1:41234`.
        services_url: String,
        /// Base URL of the trial's model gateway (without `/v1`).
        gateway_url: String,
    },
    /// A folder holding [`SERVICES_SOCKET`] and [`GATEWAY_SOCKET`].
    Sockets { folder: PathBuf },
}

/// File name of the services' socket in [`Endpoints::Sockets`].
pub const SERVICES_SOCKET: &str = "services.sock";
/// File name of the model gateway's socket in [`Endpoints::Sockets`].
pub const GATEWAY_SOCKET: &str = "gateway.sock";

/// A command to run in the finished trial's environment (e.g. an `exit_code` or
/// `pytest_pass` check). `command` is an argv, not a shell line: wrap it in
/// `["sh", "-c", …]` when the image has a shell and one is wanted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckCommand {
    pub command: Vec<String>,
    pub timeout: Duration,
}

/// What a [`CheckCommand`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckOutcome {
    /// The exit code; `None` when it timed out, was killed, or could not start.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
}

/// How a harness run ended and what it left.
#[derive(Debug, Clone)]
pub struct Finished {
    pub exit: HarnessExit,
    pub stdout: String,
    pub stderr: String,
    /// `agent_output.txt` in the workspace, if the harness wrote it.
    pub output_file: Option<String>,
    pub workspace: BTreeMap<String, WorkspaceFile>,
    pub duration: Duration,
    /// One outcome per [`Launch::checks`] entry, in order.
    pub checks: Vec<CheckOutcome>,
}

/// Why a backend could not run the harness at all (an infrastructure error, not a failed
/// trial).
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum SandboxError {
    #[error("the harness command `{program}` was not found{}", hint(.program))]
    CommandNotFound { program: String },
    #[error("the harness command `{program}` could not be started: {message}")]
    CannotStart { program: String, message: String },
    #[error("could not prepare the trial's sandbox: {message}")]
    Prepare { message: String },
    #[error("the run was interrupted")]
    Interrupted,
    #[error("the docker sandbox failed: {message}")]
    Docker { message: String },
}

fn hint(program: &str) -> String {
    if program.contains('/') {
        " (is the path right, and was the harness built? see `harness.build` in clawtest.toml)"
            .into()
    } else {
        " on PATH (install it, or give its path in `harness.command`)".into()
    }
}

/// The future a backend returns.
pub type Running<'a> = Pin<Box<dyn Future<Output = Result<Finished, SandboxError>> + Send + 'a>>;

/// A place where a harness runs.
pub trait Sandbox: Send + Sync {
    /// The backend's name, as `--backend` spells it.
    fn name(&self) -> &'static str;

    /// How the trial's services and gateway must be served for this backend.
    fn transport(&self) -> Transport {
        Transport::Loopback
    }

    /// Runs the harness to completion, the time limit, or `interrupt` becoming true, then
    /// the launch's checks. Leaves nothing running behind.
    fn run(&self, launch: Launch, interrupt: watch::Receiver<bool>) -> Running<'_>;

    /// Ends at once everything this backend still has running (the second Ctrl-C, before
    /// the process exits without running destructors).
    fn abort(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async {})
    }
}

/// Writes what every backend gives a harness: the prompt, tools.json and mcp.json in the
/// control folder, SKILL.md and the task's files in the workspace.
pub fn lay_out(
    launch: &Launch,
    control: &std::path::Path,
    workspace: &std::path::Path,
) -> Result<(), SandboxError> {
    let prepare = |error: std::io::Error| SandboxError::Prepare {
        message: error.to_string(),
    };
    std::fs::write(control.join("prompt.md"), &launch.prompt).map_err(prepare)?;
    std::fs::write(control.join("tools.json"), &launch.tools).map_err(prepare)?;
    // A surface the harness's tier leaves out is not there at all.
    if !launch.mcp_config.is_empty() {
        std::fs::write(control.join("mcp.json"), &launch.mcp_config).map_err(prepare)?;
    }
    if !launch.skill.is_empty() {
        std::fs::write(workspace.join("SKILL.md"), &launch.skill).map_err(prepare)?;
    }
    for file in &launch.files {
        let target = workspace.join(&file.target);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(prepare)?;
        }
        std::fs::copy(&file.source, &target).map_err(|error| SandboxError::Prepare {
            message: format!(
                "copying {} into the workspace: {error}",
                file.source.display()
            ),
        })?;
    }
    Ok(())
}

/// The workspace-relative path of the final answer file.
pub const OUTPUT_FILE: &str = "agent_output.txt";
