//! Where one trial's harness runs (DESIGN.md §5). The [`Sandbox`] trait is the seam: the
//! executor hands it a [`Launch`] (command, prompt, tools, files, the URLs of the trial's
//! services and gateway, limits) and gets back a [`Finished`] (exit, output, workspace).
//! `process` runs the harness as a local command; `docker` will run it in a container.

pub mod process;

use std::collections::BTreeMap;
use std::future::Future;
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
    /// Base URL of the trial's services, e.g. `http://127.0.0.1:41234`.
    pub services_url: String,
    /// Base URL of the trial's model gateway (without `/v1`).
    pub gateway_url: String,
    /// Host variables passed through by name (`harness.env`).
    pub passthrough: Vec<(String, String)>,
    pub timeout: Duration,
    pub max_turns: u32,
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

    /// Runs the harness to completion, the time limit, or `interrupt` becoming true.
    fn run(&self, launch: Launch, interrupt: watch::Receiver<bool>) -> Running<'_>;
}

/// The workspace-relative path of the final answer file.
pub const OUTPUT_FILE: &str = "agent_output.txt";
