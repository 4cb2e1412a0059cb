//! A task's commands in a container of their own (`sandbox::commands`' container place): a
//! trial of the harness image whose harness is the shim's `none` (it exits at once), so that
//! the commands run as the checks of a trial do, as execs in the still-running container
//! with the folder's workspace mounted at `/workspace`, and the container removed after.

use std::path::Path;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{DockerError, DockerSandbox, ResourceLimits, SHIM_MOUNT};
use crate::sandbox::{CheckCommand, CheckOutcome, Endpoints, HarnessSetup, Launch, SandboxError};

/// How long the shim's `none` may take to end (it ends at once).
const NONE_TIMEOUT: Duration = Duration::from_secs(30);

/// The container a task's commands run in: the harness image, with the static shim as its
/// entrypoint and the docker backend's resource limits.
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerCommands {
    /// The harness image.
    pub image: String,
    /// The static shim mounted as the container's entrypoint.
    pub shim: std::path::PathBuf,
    /// Memory, CPUs, processes.
    pub limits: ResourceLimits,
}

/// Why the commands could not be run in a container (not: why they failed).
#[derive(Debug, thiserror::Error)]
pub enum ContainerError {
    /// No engine, or no image.
    #[error(transparent)]
    Docker(#[from] DockerError),
    /// The container's run failed.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
}

impl ContainerCommands {
    /// Runs `checks` in order in a fresh container of the image (see
    /// [`DockerSandbox::run_commands`]), through an engine connection of the calling runtime's
    /// own (a feasibility proof runs in a runtime of its own).
    pub async fn run(
        &self,
        task_id: &str,
        folder: &Path,
        checks: &[CheckCommand],
        output_bytes: usize,
        interrupt: &CancellationToken,
    ) -> Result<Vec<CheckOutcome>, ContainerError> {
        let engine = super::connect().await?;
        let sandbox =
            DockerSandbox::new(engine, &self.image, self.shim.clone(), self.limits).await?;
        Ok(sandbox
            .run_commands(task_id, folder, checks, output_bytes, interrupt)
            .await?)
    }
}

impl DockerSandbox {
    /// Runs `checks` in order in a fresh container whose `/workspace` is `folder/workspace`
    /// (laid out by the caller); the container's control files and sockets go in `folder`
    /// too. The container gets no host variable and no service.
    pub(crate) async fn run_commands(
        &self,
        task_id: &str,
        folder: &Path,
        checks: &[CheckCommand],
        output_bytes: usize,
        interrupt: &CancellationToken,
    ) -> Result<Vec<CheckOutcome>, SandboxError> {
        let sockets = folder.join("command-sockets");
        std::fs::create_dir_all(&sockets).map_err(|error| SandboxError::Prepare {
            message: format!("{}: {error}", sockets.display()),
        })?;
        let launch = Launch {
            task_id: task_id.to_owned(),
            trial: 0,
            command: vec![SHIM_MOUNT.into(), "none".into()],
            prompt: String::new(),
            tools: String::new(),
            eval_tools: String::new(),
            skill: String::new(),
            mcp_config: String::new(),
            files: Vec::new(),
            folder: folder.to_path_buf(),
            endpoints: Endpoints::Sockets { folder: sockets },
            passthrough: Vec::new(),
            timeout: NONE_TIMEOUT,
            max_turns: 0,
            limits: crate::config::LimitsConfig {
                output_bytes,
                ..crate::config::LimitsConfig::default()
            },
            checks: checks.to_vec(),
            setup: HarnessSetup::default(),
        };
        let finished = self.run_trial(launch, interrupt.clone()).await?;
        Ok(finished.checks)
    }
}
