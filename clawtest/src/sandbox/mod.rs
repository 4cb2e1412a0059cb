//! Where one trial's harness runs (docs/sandbox.md). The [`Sandbox`] trait is the seam: the
//! trial asks it its [`BackendKind`] (which says the [`Transport`] it needs), serves the
//! trial's services and gateway there, asks it the services' URL as the harness sees them
//! ([`Sandbox::services_seen`]), hands it a [`Launch`] (command, prompt, tools, files, the
//! trial's folder, [`Endpoints`], limits, checks to run afterwards) and gets back a
//! [`Finished`] (exit, output, workspace, check results). `process` runs the harness as a
//! local command; `docker` runs it in a container.

pub(crate) mod capture;
pub mod commands;
pub(crate) mod contain;
pub mod disk;
pub mod docker;
pub(crate) mod owner;
pub(crate) mod process;
pub mod scratch;
pub mod select;
pub mod session;
pub(crate) mod spawn;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::config::{FileBase, HarnessFile, TemplateValues};
use crate::task::FileCopy;
use crate::trajectory::{HarnessExit, WorkspaceFile};

/// Everything a backend needs to start one trial's harness.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The task's `task_id` (`CLAWTEST_TASK_ID` for the harness).
    pub task_id: String,
    /// The trial's number within the task, from 0 (`CLAWTEST_TRIAL`).
    pub trial: u32,
    /// The harness program and its arguments (`harness.command`).
    pub command: Vec<String>,
    /// The task's prompt, written to `prompt.md` in the control folder.
    pub prompt: String,
    /// The tools.json text.
    pub tools: String,
    /// ClawEnvKit's eval-tools.json text (the same tools in its plugin's shape), written
    /// beside tools.json; `EVAL_TOOLS_FILE` names it. Empty: not written.
    pub eval_tools: String,
    /// The SKILL.md text, written to the workspace.
    pub skill: String,
    /// The mcp.json text, written to the control folder.
    pub mcp_config: String,
    /// The task's `files`, copied into the workspace before the harness starts.
    pub files: Vec<FileCopy>,
    /// The trial's folder (`clawtest/`, `workspace/`, `home/` are made in it), made by the
    /// trial (which also tells the gateway, to hide it in cassettes) and kept from one round
    /// of a closed loop to the next, so that the workspace the harness left is the one it
    /// finds; the trial removes it.
    pub folder: PathBuf,
    /// Where the trial's services and gateway are served.
    pub endpoints: Endpoints,
    /// Host variables passed through by name (`harness.env`).
    pub passthrough: Vec<(String, String)>,
    /// The task's time limit (`limits.timeout`): the harness is killed when it is reached.
    pub timeout: Duration,
    /// The task's `limits.max_turns`, passed as `AGENT_MAX_TURNS` for the harness to honour.
    pub max_turns: u32,
    /// The caps on what reaches the host (`[limits]`).
    pub limits: crate::config::LimitsConfig,
    /// Commands run after the harness has ended, in the same environment (the process
    /// backend: the workspace with the harness's environment; docker: an exec in the
    /// still-running container), in order. Their results are [`Finished::checks`].
    pub checks: Vec<CheckCommand>,
    /// The model, the MCP endpoint, generated workspace files and `[harness] files`.
    pub setup: HarnessSetup,
}

/// What a harness is given besides the prompt and the tool surfaces above.
#[derive(Debug, Clone, Default)]
pub struct HarnessSetup {
    /// `harness.model`, given as `CLAWTEST_MODEL`.
    pub model: Option<String>,
    /// The MCP endpoint as the harness sees it, given as `CLAWTEST_MCP_URL`; `None` when the
    /// harness's tier leaves MCP out.
    pub mcp_url: Option<String>,
    /// Generated files for the workspace besides `SKILL.md` (the skill again at
    /// `skills/<name>/SKILL.md`, Claude Code's `.mcp.json`), by workspace-relative path.
    pub workspace_files: Vec<(PathBuf, String)>,
    /// `[harness] files`: filled in by the backend with the values the harness sees.
    pub files: Vec<HarnessFile>,
    /// Set for a closed-loop task's rounds: which round this is, the conversation so far,
    /// and the trial's folder, kept from one round to the next.
    pub round: Option<RoundSetup>,
}

/// One round of a closed-loop trial, as the backends give it to the harness (the follow-up
/// protocol, docs/closed-loop.md): `CLAWTEST_ROUND`, the round's user message as the prompt,
/// and the earlier rounds in [`CONVERSATION_FILE`] (`CLAWTEST_CONVERSATION_FILE`), in the
/// trial's folder ([`Launch::folder`]) that the earlier rounds used.
#[derive(Debug, Clone)]
pub struct RoundSetup {
    /// The round's number, from 1.
    pub number: u32,
    /// The earlier rounds as JSON lines, `{"role": "user" | "assistant", "content": ...}`.
    pub conversation: String,
    /// Set when the harness keeps its session (`[harness] follow_up = "session"`): the
    /// backend keeps it running after each answer and hands each answered round back here.
    pub session: Option<session::SessionLink>,
}

/// The control folder's file with the conversation of the earlier rounds.
pub const CONVERSATION_FILE: &str = "conversation.jsonl";

/// Whether the trial's folder is a follow-up round's: laid out by an earlier round already.
fn follow_up(launch: &Launch) -> bool {
    launch
        .setup
        .round
        .as_ref()
        .is_some_and(|round| round.number > 1)
}

/// Columns the harness's terminal libraries are told they have (`COLUMNS`): text wrapped at
/// 80 columns splits a keyword the grader looks for across two lines, and at thousands a
/// library that draws rules across the terminal (rich, smolagents' logs) writes kilobytes of
/// box-drawing per step (366 KB of it became one trial's graded answer).
pub const COLUMNS: &str = "200";

/// The variables both backends set to the same values (the paths and URLs differ between
/// them): no colours or terminal control sequences in the output, wide lines, and the model
/// and MCP endpoint when known.
pub(crate) fn shared_environment(launch: &Launch) -> Vec<(&'static str, String)> {
    let mut variables = vec![
        ("TERM", "dumb".to_string()),
        ("NO_COLOR", "1".into()),
        ("COLUMNS", COLUMNS.into()),
    ];
    if let Some(model) = &launch.setup.model {
        variables.push(("CLAWTEST_MODEL", model.clone()));
    }
    if let Some(url) = &launch.setup.mcp_url {
        variables.push(("CLAWTEST_MCP_URL", url.clone()));
    }
    if let Some(round) = &launch.setup.round {
        variables.push(("CLAWTEST_ROUND", round.number.to_string()));
    }
    variables
}

/// Whether `launch`'s harness keeps its session across rounds (`CLAWTEST_SESSION_DIR` is
/// given then).
pub(crate) fn keeps_session(launch: &Launch) -> bool {
    launch
        .setup
        .round
        .as_ref()
        .is_some_and(|round| round.session.is_some())
}

/// The kept session of `launch`, if it has one, in the trial's session folder on the host
/// (made here), answering the launch's round first.
pub(crate) fn session_rounds(launch: &Launch) -> Result<Option<session::Rounds>, SandboxError> {
    let Some(round) = &launch.setup.round else {
        return Ok(None);
    };
    let Some(link) = &round.session else {
        return Ok(None);
    };
    session::Rounds::new(
        link.clone(),
        launch.folder.join(session::SESSION_FOLDER),
        round.number,
    )
    .map(Some)
    .map_err(|error| SandboxError::Prepare {
        message: format!("making the session folder: {error}"),
    })
}

/// Writes `[harness] files` under `workspace` and `home`, filled in with `values` (the
/// paths and URLs as the harness sees them, which differ between backends).
pub(crate) fn write_harness_files(
    launch: &Launch,
    values: &TemplateValues<'_>,
    workspace: &std::path::Path,
    home: &std::path::Path,
) -> Result<(), SandboxError> {
    for file in &launch.setup.files {
        let base = match file.base {
            FileBase::Workspace => workspace,
            FileBase::Home => home,
        };
        write_file(&base.join(&file.path), &file.template.render(values))?;
    }
    Ok(())
}

fn write_file(path: &std::path::Path, text: &str) -> Result<(), SandboxError> {
    let prepare = |error: std::io::Error| SandboxError::Prepare {
        message: format!("writing {}: {error}", path.display()),
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(prepare)?;
    }
    std::fs::write(path, text).map_err(prepare)
}

/// What kind of place a backend runs the harness in: what its command names and how the
/// trial is served to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    /// On this host (the process backend, and the in-process and oracle ones): the command
    /// is a host path, the trial is served on loopback ports.
    Host,
    /// In a container (docker): the command names a program of the image, the trial is
    /// served on Unix sockets the container's shim bridges to fixed ports.
    Container,
}

impl BackendKind {
    /// How the trial's services and gateway are served to a harness of this kind.
    pub fn transport(self) -> Transport {
        match self {
            BackendKind::Host => Transport::Loopback,
            BackendKind::Container => Transport::Sockets,
        }
    }
}

/// The trial's services as the harness sees them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServicesSeen {
    /// The services' base URL the harness is given.
    pub url: String,
    /// The program that bridges MCP to stdio for the harness (written into mcp.json), when
    /// the backend has one.
    pub stdio_bridge: Option<&'static str>,
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
    /// On loopback TCP ports of the host ([`Transport::Loopback`]).
    Loopback {
        /// Base URL of the trial's services, e.g. `http://127.0.0.1:41234`.
        services_url: String,
        /// Base URL of the trial's model gateway (without `/v1`).
        gateway_url: String,
    },
    /// A folder holding [`SERVICES_SOCKET`] and [`GATEWAY_SOCKET`].
    Sockets {
        /// The host folder the backend shares with the harness.
        folder: PathBuf,
    },
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
    /// The program and its arguments.
    pub command: Vec<String>,
    /// How long it may run before it is killed.
    pub timeout: Duration,
}

/// What a [`CheckCommand`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckOutcome {
    /// The exit code; `None` when it timed out, was killed, or could not start.
    pub exit_code: Option<i32>,
    /// It was killed at its time limit.
    pub timed_out: bool,
    /// Its standard output, as text.
    pub stdout: String,
    /// Its standard error, as text.
    pub stderr: String,
}

/// How a harness run ended and what it left.
#[derive(Debug, Clone)]
pub struct Finished {
    /// How the harness ended: its exit code, or killed at the time limit or by a signal.
    pub exit: HarnessExit,
    /// The harness's standard output (its final answer when it wrote no output file).
    pub stdout: String,
    /// The harness's standard error.
    pub stderr: String,
    /// `agent_output.txt` in the workspace, if the harness wrote it.
    pub output_file: Option<String>,
    /// The workspace's files after the run, by workspace-relative path.
    pub workspace: BTreeMap<String, WorkspaceFile>,
    /// How long the harness ran.
    pub duration: Duration,
    /// One outcome per [`Launch::checks`] entry, in order.
    pub checks: Vec<CheckOutcome>,
    /// The `[limits]` caps that bit, one note each.
    pub limits_reached: Vec<String>,
    /// Set when the trial's folder passed `[limits] workspace_disk_bytes` and the harness was
    /// stopped (its checks were not run): the trial is an error.
    pub disk_full: Option<disk::DiskFull>,
}

/// Why a backend could not run the harness at all (an infrastructure error, not a failed
/// trial).
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum SandboxError {
    /// The harness program does not exist (a path) or is not on PATH.
    #[error("the harness command `{program}` was not found{}", hint(.program))]
    CommandNotFound {
        /// The program, as `harness.command` names it.
        program: String,
    },
    /// The harness program exists but could not be started.
    #[error("the harness command `{program}` could not be started: {message}")]
    CannotStart {
        /// The program, as `harness.command` names it.
        program: String,
        /// Why it could not start.
        message: String,
    },
    /// The workspace or control folder could not be laid out.
    #[error("could not prepare the trial's sandbox: {message}")]
    Prepare {
        /// What could not be written or copied.
        message: String,
    },
    /// The run was interrupted before or while the harness ran.
    #[error("the run was interrupted")]
    Interrupted,
    /// The docker engine refused or failed an operation of the trial.
    #[error("the docker sandbox failed: {message}")]
    Docker {
        /// The engine's error, in words.
        message: String,
    },
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

/// A trial's folder on the host ([`Launch::folder`]): made for the trial and removed after it
/// ([`TrialFolder::fresh`]), or lent by the backend for the trial's time and given back when
/// this is dropped (the docker backend's worker containers mount theirs once, and empty it
/// between trials).
pub struct TrialFolder {
    path: PathBuf,
    sockets: Option<PathBuf>,
    /// Removes the folder, or gives it back, when dropped.
    _held: Box<dyn Send + Sync>,
}

impl TrialFolder {
    /// A new scratch folder of the trial's own (`scratch::folder`), removed when dropped.
    pub fn fresh() -> std::io::Result<TrialFolder> {
        TrialFolder::fresh_in(&std::env::temp_dir())
    }

    /// A fresh folder in `parent`, removed when dropped.
    pub fn fresh_in(parent: &std::path::Path) -> std::io::Result<TrialFolder> {
        let folder = scratch::folder_in("trial", parent)?;
        Ok(TrialFolder {
            path: folder.path().to_path_buf(),
            sockets: None,
            _held: Box::new(folder),
        })
    }

    /// A folder a backend lends: `held` gives it back when dropped; the trial's sockets go
    /// in `sockets` when the backend names one.
    pub(crate) fn lent(
        path: PathBuf,
        sockets: Option<PathBuf>,
        held: Box<dyn Send + Sync>,
    ) -> Self {
        TrialFolder {
            path,
            sockets,
            _held: held,
        }
    }

    /// Where the folder is.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Where the trial's endpoints are to be served on a backend that serves them on Unix
    /// sockets ([`Endpoints::Sockets`]), when it says (else they get a folder of their own).
    pub fn sockets(&self) -> Option<&std::path::Path> {
        self.sockets.as_deref()
    }
}

impl std::fmt::Debug for TrialFolder {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("TrialFolder")
            .field("path", &self.path)
            .field("sockets", &self.sockets)
            .finish_non_exhaustive()
    }
}

/// A place where a harness runs.
pub trait Sandbox: Send + Sync {
    /// The backend's name, as `--backend` spells it.
    fn name(&self) -> &'static str;

    /// Where this backend runs the harness (which also says how the trial is served).
    fn kind(&self) -> BackendKind {
        BackendKind::Host
    }

    /// The trial's services as the harness sees them, when they are served at `endpoints`:
    /// on loopback, the URL they are served at.
    fn services_seen(&self, endpoints: &Endpoints) -> ServicesSeen {
        ServicesSeen {
            url: match endpoints {
                Endpoints::Loopback { services_url, .. } => services_url.clone(),
                Endpoints::Sockets { .. } => String::new(),
            },
            stdio_bridge: None,
        }
    }

    /// Runs the harness to completion, the time limit, or `interrupt` being cancelled, then
    /// the launch's checks. Leaves nothing running behind.
    fn run(&self, launch: Launch, interrupt: CancellationToken) -> Running<'_>;

    /// A folder for one trial ([`Launch::folder`], kept for all of a closed loop's rounds),
    /// whose workspace may take `disk_cap` bytes: by default a fresh one, in memory when it
    /// can be (`scratch::trial_parent`); the docker backend lends one of its worker
    /// containers', or makes one where the engine can mount it from (a docker engine may not
    /// share the host's memory file system).
    fn trial_folder(&self, disk_cap: u64) -> std::io::Result<TrialFolder> {
        TrialFolder::fresh_in(&scratch::trial_parent(disk_cap))
    }

    /// Every trial of the run has started: no trial asks for a folder after those already
    /// started have theirs. What the backend keeps for trials to come (the docker backend's
    /// worker containers) may go as the trials give it back, while the others still run.
    fn all_trials_started(&self) {}

    /// Lets go of what the backend keeps between trials (the docker backend's worker
    /// containers, removed before this completes); a run ends with it.
    fn settle(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async {})
    }

    /// Where a task's commands run outside a harness run (a feasibility proof, the oracle's
    /// checks): on the host, or in a container of the harness image (`commands`).
    fn command_place(&self) -> commands::CommandPlace {
        match self.command_container() {
            Some(container) => commands::CommandPlace::Container(container),
            None => commands::CommandPlace::Host,
        }
    }

    /// The container this backend runs a task's commands in; `None`: on the host.
    fn command_container(&self) -> Option<docker::ContainerCommands> {
        None
    }

    /// Ends at once everything this backend still has running (the second Ctrl-C, before
    /// the process exits without running destructors).
    fn abort(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async {})
    }
}

/// Writes what every backend gives a harness: the prompt, tools.json and mcp.json in the
/// control folder, SKILL.md, the generated workspace files and the task's files in the
/// workspace. A follow-up round gets its prompt and conversation only: the rest is there.
pub(crate) fn lay_out(
    launch: &Launch,
    control: &std::path::Path,
    workspace: &std::path::Path,
) -> Result<(), SandboxError> {
    let prepare = |error: std::io::Error| SandboxError::Prepare {
        message: error.to_string(),
    };
    std::fs::write(control.join("prompt.md"), &launch.prompt).map_err(prepare)?;
    if let Some(round) = &launch.setup.round {
        std::fs::write(control.join(CONVERSATION_FILE), &round.conversation).map_err(prepare)?;
    }
    if follow_up(launch) {
        // The workspace is the one the harness left: the task's files are not copied over
        // its changes again, and the last round's answer is not taken for this round's.
        match std::fs::remove_file(workspace.join(OUTPUT_FILE)) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                return Err(prepare(error));
            }
            _ => {}
        }
        return Ok(());
    }
    std::fs::write(control.join("tools.json"), &launch.tools).map_err(prepare)?;
    if !launch.eval_tools.is_empty() {
        std::fs::write(control.join(EVAL_TOOLS_FILE), &launch.eval_tools).map_err(prepare)?;
    }
    // A surface the harness's tier leaves out is not there at all.
    if !launch.mcp_config.is_empty() {
        std::fs::write(control.join("mcp.json"), &launch.mcp_config).map_err(prepare)?;
    }
    if !launch.skill.is_empty() {
        std::fs::write(workspace.join("SKILL.md"), &launch.skill).map_err(prepare)?;
    }
    for (path, text) in &launch.setup.workspace_files {
        write_file(&workspace.join(path), text)?;
    }
    for file in &launch.files {
        let target = workspace.join(&file.target);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(prepare)?;
        }
        // Opened as validated (a regular file inside the task's folder), never through a
        // link planted since: the copy must not carry host files into the sandbox.
        file.open_source()
            .and_then(|mut source| std::io::copy(&mut source, &mut std::fs::File::create(&target)?))
            .map_err(|error| SandboxError::Prepare {
                message: format!(
                    "copying {} into the workspace: {error}",
                    file.source.display()
                ),
            })?;
    }
    Ok(())
}

/// ClawEnvKit's tools file in the control folder (`EVAL_TOOLS_FILE`).
pub const EVAL_TOOLS_FILE: &str = "eval-tools.json";

/// The workspace-relative path of the final answer file.
pub const OUTPUT_FILE: &str = "agent_output.txt";
