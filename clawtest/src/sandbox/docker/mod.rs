//! The docker backend (docs/sandbox.md): each trial's harness runs in a fresh container of the
//! project's harness image, created through the Docker Engine API (bollard; the only place
//! that talks to Docker). The container has no network (`network_mode: none`), no
//! capabilities, no-new-privileges, memory/CPU/pids limits, and no host variable but those
//! named in `harness.env`. The static `clawtest-shim` (bind-mounted as its entrypoint)
//! forwards the sandbox contract's loopback ports 9100 (services) and 9201 (model gateway)
//! to the Unix sockets the executor serves in the per-trial folder mounted at
//! `/clawtest/sockets` (read-only), runs the harness with its stdout and stderr connected to
//! two more sockets there, and reports how it ended on a control socket. Checks then run as
//! execs in the still-running container, which is removed afterwards (also on error and
//! interrupt; a dead host makes the shim kill the harness and exit, and the engine
//! auto-removes the container). Every container carries the labels [`RUN_LABEL`],
//! [`TASK_LABEL`] and [`TRIAL_LABEL`], so [`clean`] can remove what a crashed run left.
//!
//! Its parts: `engine` connects to the engine, `container` creates and removes one
//! container (its mounts, limits, labels and environment), `trial` runs one trial in it
//! (the shim's report, the checks as execs, the output), `clean` removes what crashed runs
//! left, `commands` runs a task's commands alone in a container (`sandbox::commands`), and
//! [`image`] and [`shim`] provide what a container runs.

mod clean;
mod commands;
mod container;
mod engine;
mod folder;
pub mod image;
mod pool;
pub mod shim;
mod source;
mod trial;
mod worker;

use std::collections::HashSet;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use bollard::Docker;
use tokio_util::sync::CancellationToken;

use super::{BackendKind, Endpoints, Launch, Running, Sandbox, ServicesSeen, TrialFolder};

pub(crate) use clean::remove_labelled;
pub use clean::{clean, containers_labelled};
pub use commands::{ContainerCommands, ContainerError};
pub use container::ResourceLimits;
pub use engine::{DockerError, connect};

/// Label holding the run id of every container clawtest creates.
pub const RUN_LABEL: &str = "clawtest.run";
/// Label holding the task id.
pub const TASK_LABEL: &str = "clawtest.task";
/// Label holding the trial number.
pub const TRIAL_LABEL: &str = "clawtest.trial";
/// Label holding `<host name>/<process id>` of the clawtest process that owns the container,
/// so that `clean` leaves the containers of runs still in progress alone.
pub const OWNER_LABEL: &str = "clawtest.owner";
/// Label holding a worker container's name within its run (`worker`).
pub const WORKER_LABEL: &str = "clawtest.worker";

/// The services port of the sandbox contract, inside the container.
pub const SERVICES_PORT: u16 = 9100;
/// The model gateway port of the sandbox contract, inside the container.
pub const GATEWAY_PORT: u16 = 9201;

/// Where things are inside the container.
const CONTROL_MOUNT: &str = "/clawtest";
const SOCKETS_MOUNT: &str = "/clawtest/sockets";
const WORKSPACE_MOUNT: &str = "/workspace";
/// Where the trial folder's `home/` is mounted, the harness's `HOME`: kept from one round of a
/// closed loop to the next, as on the process backend.
const HOME_MOUNT: &str = "/home/clawtest";
/// Where the trial folder's session folder is mounted (`CLAWTEST_SESSION_DIR`) for a harness
/// that keeps its session.
const SESSION_MOUNT: &str = "/clawtest-session";
/// Where the shim is mounted in the container (also the MCP stdio bridge's command).
pub const SHIM_MOUNT: &str = "/.clawtest-shim";
const CONTROL_SOCKET: &str = "control.sock";
/// The harness's output streams: sockets the host listens on, which the shim connects as
/// the harness's stdout and stderr.
const STDOUT_SOCKET: &str = "stdout.sock";
const STDERR_SOCKET: &str = "stderr.sock";
/// Where a worker container's shim asks for its trials (`worker`).
const WORKER_SOCKET: &str = "worker.sock";

/// Runs harnesses in containers of one image.
pub struct DockerSandbox {
    docker: Docker,
    image: String,
    shim: PathBuf,
    run_id: String,
    limits: ResourceLimits,
    /// Containers of this run not yet removed, for [`Sandbox::abort`].
    live: Arc<Mutex<HashSet<String>>>,
    /// Whether trials run in worker containers kept for the run (`[docker] reuse`).
    reuse: bool,
    /// The worker containers and their folders.
    pool: Arc<pool::Pool>,
}

impl DockerSandbox {
    /// A sandbox for an image already present in the engine (checked here).
    pub async fn new(
        docker: Docker,
        image: &str,
        shim: PathBuf,
        limits: ResourceLimits,
    ) -> Result<DockerSandbox, DockerError> {
        image::require(&docker, image).await?;
        Ok(DockerSandbox {
            docker,
            image: image.to_string(),
            shim,
            run_id: new_run_id(),
            limits,
            live: Arc::new(Mutex::new(HashSet::new())),
            reuse: true,
            pool: Arc::default(),
        })
    }

    /// Whether trials run in worker containers kept for the run (the default), or each in a
    /// container of its own (`[docker] reuse = false`). docs/sandbox.md says when each is used.
    pub fn reusing(mut self, reuse: bool) -> DockerSandbox {
        self.reuse = reuse;
        self
    }

    /// This run's id (the value of [`RUN_LABEL`] on its containers).
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The harness image the containers run.
    pub fn image(&self) -> &str {
        &self.image
    }
}

fn new_run_id() -> String {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    format!(
        "{}-{}-{}",
        since_epoch.as_secs(),
        since_epoch.subsec_nanos() % 1_000_000,
        std::process::id()
    )
}

impl Sandbox for DockerSandbox {
    fn name(&self) -> &'static str {
        "docker"
    }

    fn kind(&self) -> BackendKind {
        BackendKind::Container
    }

    // Inside the container the shim serves the services' socket on a fixed port and bridges
    // MCP to stdio.
    fn services_seen(&self, _endpoints: &Endpoints) -> ServicesSeen {
        ServicesSeen {
            url: format!("http://127.0.0.1:{SERVICES_PORT}"),
            stdio_bridge: Some(SHIM_MOUNT),
        }
    }

    fn run(&self, launch: Launch, interrupt: CancellationToken) -> Running<'_> {
        Box::pin(async move {
            match self.pool.take(&launch.folder) {
                // A kept session's harness lives across rounds: a container of its own, in the
                // lent folder.
                Some(slot) if crate::sandbox::keeps_session(&launch) => {
                    self.pool.put_back(&launch.folder, slot);
                    self.run_trial(launch, interrupt).await
                }
                Some(slot) => self.run_in_worker(slot, launch, interrupt).await,
                None => self.run_trial(launch, interrupt).await,
            }
        })
    }

    fn trial_folder(&self, _disk_cap: u64) -> std::io::Result<TrialFolder> {
        if self.reuse {
            pool::Pool::lend(&self.pool)
        } else {
            TrialFolder::fresh()
        }
    }

    fn all_trials_started(&self) {
        self.pool.close();
    }

    fn settle(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(self.pool.settle())
    }

    fn command_container(&self) -> Option<ContainerCommands> {
        Some(ContainerCommands {
            image: self.image.clone(),
            shim: self.shim.clone(),
            limits: self.limits,
        })
    }

    fn abort(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            let _ = remove_labelled(&self.docker, &format!("{RUN_LABEL}={}", self.run_id)).await;
        })
    }
}
