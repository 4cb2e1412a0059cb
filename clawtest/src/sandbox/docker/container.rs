//! One trial's container: what it is created with (the shim as entrypoint, the mounts of
//! the per-trial folder, no network, no capabilities, resource [`ResourceLimits`], the labels, and
//! an environment of the sandbox contract only), and its removal, also when the trial is
//! cancelled ([`ContainerGuard`]).

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bollard::Docker;
use bollard::models::{ContainerCreateBody, HostConfig, ResourcesUlimits};
use bollard::query_parameters::{RemoveContainerOptionsBuilder, WaitContainerOptionsBuilder};
use futures_util::StreamExt;

use super::{
    CONTROL_MOUNT, CONTROL_SOCKET, DockerSandbox, GATEWAY_PORT, HOME_MOUNT, OWNER_LABEL, RUN_LABEL,
    SERVICES_PORT, SESSION_MOUNT, SHIM_MOUNT, SOCKETS_MOUNT, STDERR_SOCKET, STDOUT_SOCKET,
    TASK_LABEL, TRIAL_LABEL, WORKER_LABEL, WORKER_SOCKET, WORKSPACE_MOUNT,
};
use crate::sandbox::owner::owner;
use crate::sandbox::{GATEWAY_SOCKET, Launch, SERVICES_SOCKET};

/// Resource limits of each container.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ResourceLimits {
    /// Memory, swap included, in MiB (`docker.memory_mb`, default 2048).
    pub memory_mb: u64,
    /// CPUs, fractions allowed (`docker.cpus`).
    pub cpus: f64,
    /// Processes and threads (`docker.pids`, default 512).
    pub pids: u32,
}

impl Default for ResourceLimits {
    fn default() -> ResourceLimits {
        ResourceLimits {
            memory_mb: 2048,
            cpus: 2.0,
            pids: 512,
        }
    }
}

/// Removes its container when dropped without [`ContainerGuard::remove`] (a cancelled trial).
pub(super) struct ContainerGuard {
    pub(super) docker: Docker,
    pub(super) id: String,
    pub(super) live: Arc<Mutex<HashSet<String>>>,
    pub(super) removed: bool,
}

impl ContainerGuard {
    pub(super) async fn remove(mut self) {
        remove_container(&self.docker, &self.id).await;
        self.forget();
    }

    fn forget(&mut self) {
        self.removed = true;
        if let Ok(mut live) = self.live.lock() {
            live.remove(&self.id);
        }
    }
}

impl Drop for ContainerGuard {
    fn drop(&mut self) {
        if self.removed {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let docker = self.docker.clone();
            let id = self.id.clone();
            runtime.spawn(async move { remove_container(&docker, &id).await });
        }
        self.forget();
    }
}

/// Removes a container and waits until it is gone.
pub(super) async fn remove_container(docker: &Docker, id: &str) {
    let options = RemoveContainerOptionsBuilder::default()
        .force(true)
        .v(true)
        .build();
    // Already gone, or being auto-removed, is what we want: then wait until it is gone, so
    // that "no container left" holds when the trial returns.
    let _ = docker.remove_container(id, Some(options)).await;
    let removed = WaitContainerOptionsBuilder::default()
        .condition("removed")
        .build();
    let mut gone = docker.wait_container(id, Some(removed));
    let _ = tokio::time::timeout(Duration::from_secs(30), gone.next()).await;
}

impl DockerSandbox {
    /// What the trial's container is created with.
    pub(super) fn container_body(
        &self,
        launch: &Launch,
        control: &Path,
        sockets: &Path,
        workspace: &Path,
        environment: &[String],
    ) -> ContainerCreateBody {
        let socket = |name: &str| format!("{SOCKETS_MOUNT}/{name}");
        let mut command = vec![
            "--forward".to_string(),
            format!("{SERVICES_PORT}={}", socket(SERVICES_SOCKET)),
            "--forward".into(),
            format!("{GATEWAY_PORT}={}", socket(GATEWAY_SOCKET)),
            "--control".into(),
            socket(CONTROL_SOCKET),
            "--timeout".into(),
            format!("{:.3}", shim_timeout(launch).as_secs_f64()),
            "--stdout".into(),
            socket(STDOUT_SOCKET),
            "--stderr".into(),
            socket(STDERR_SOCKET),
            "--".into(),
        ];
        command.extend(launch.command.iter().cloned());
        let labels = HashMap::from([
            (RUN_LABEL.to_string(), self.run_id.clone()),
            (TASK_LABEL.to_string(), launch.task_id.clone()),
            (TRIAL_LABEL.to_string(), launch.trial.to_string()),
            (OWNER_LABEL.to_string(), owner()),
        ]);
        let binds = vec![
            format!("{}:{CONTROL_MOUNT}:ro", control.display()),
            // Read-only: connecting to a socket needs no write access, and nothing
            // the host reads back lives here for the harness to replace.
            format!("{}:{SOCKETS_MOUNT}:ro", sockets.display()),
            format!("{}:{WORKSPACE_MOUNT}", workspace.display()),
            format!("{}:{SHIM_MOUNT}:ro", self.shim.display()),
        ]
        .into_iter()
        .chain(kept_folders(launch))
        .collect();
        ContainerCreateBody {
            env: Some(environment.to_vec()),
            cmd: Some(command),
            labels: Some(labels),
            host_config: Some(self.host_config(binds, launch.limits.workspace_disk_bytes)),
            ..self.body_of_every_container()
        }
    }

    /// What a worker container (`worker`) is created with: the shim waiting for trials on the
    /// worker socket, the worker folder's parts mounted where a trial's are, no variable but
    /// the image's (each trial's are given to its harness), and a read-only root file system,
    /// so that what a trial can write is what the worker puts back.
    pub(super) fn worker_body(
        &self,
        folder: &Path,
        name: &str,
        disk_cap: u64,
    ) -> ContainerCreateBody {
        let socket = |name: &str| format!("{SOCKETS_MOUNT}/{name}");
        let command = vec![
            "--forward".to_string(),
            format!("{SERVICES_PORT}={}", socket(SERVICES_SOCKET)),
            "--forward".into(),
            format!("{GATEWAY_PORT}={}", socket(GATEWAY_SOCKET)),
            "--worker".into(),
            socket(WORKER_SOCKET),
            "--host-empties".into(),
            WORKSPACE_MOUNT.into(),
            "--host-empties".into(),
            HOME_MOUNT.into(),
        ];
        let labels = HashMap::from([
            (RUN_LABEL.to_string(), self.run_id.clone()),
            (WORKER_LABEL.to_string(), name.to_string()),
            (OWNER_LABEL.to_string(), owner()),
        ]);
        let binds = vec![
            format!("{}:{CONTROL_MOUNT}:ro", folder.join("clawtest").display()),
            format!("{}:{SOCKETS_MOUNT}:ro", folder.join("sockets").display()),
            format!("{}:{WORKSPACE_MOUNT}", folder.join("workspace").display()),
            format!("{}:{HOME_MOUNT}", folder.join("home").display()),
            format!("{}:{SHIM_MOUNT}:ro", self.shim.display()),
        ];
        let mut host_config = self.host_config(binds, disk_cap);
        host_config.readonly_rootfs = Some(true);
        // The shim must be the container's first process: it ends every other between
        // trials (`kill(-1)`) and reaps the orphans. An engine configured to add an init would
        // make it the second; the shim then refuses to serve as a worker.
        host_config.init = Some(false);
        ContainerCreateBody {
            cmd: Some(command),
            labels: Some(labels),
            host_config: Some(host_config),
            ..self.body_of_every_container()
        }
    }

    /// What every container of the harness image has: the shim as its entrypoint, the
    /// workspace as its working folder, the host's user, no network.
    fn body_of_every_container(&self) -> ContainerCreateBody {
        let user = rustix::process::getuid().as_raw();
        let group = rustix::process::getgid().as_raw();
        ContainerCreateBody {
            image: Some(self.image.clone()),
            entrypoint: Some(vec![SHIM_MOUNT.to_string()]),
            working_dir: Some(WORKSPACE_MOUNT.into()),
            // The host's user, so the workspace stays the host's to read and delete.
            user: Some(format!("{user}:{group}")),
            network_disabled: Some(true),
            ..ContainerCreateBody::default()
        }
    }

    /// The limits and isolation every container has, with `binds` mounted and one file capped
    /// at `disk_cap` bytes.
    fn host_config(&self, binds: Vec<String>, disk_cap: u64) -> HostConfig {
        let memory =
            i64::try_from(self.limits.memory_mb.saturating_mul(1 << 20)).unwrap_or(i64::MAX);
        let disk_cap = i64::try_from(disk_cap).unwrap_or(i64::MAX);
        HostConfig {
            binds: Some(binds),
            network_mode: Some("none".into()),
            cap_drop: Some(vec!["ALL".into()]),
            security_opt: Some(vec!["no-new-privileges".into()]),
            memory: Some(memory),
            memory_swap: Some(memory),
            nano_cpus: Some((self.limits.cpus * 1e9) as i64),
            pids_limit: Some(i64::from(self.limits.pids)),
            // One file past the trial's disk cap fails (SIGXFSZ); the host measures the
            // whole workspace (`sandbox::disk`).
            ulimits: Some(vec![ResourcesUlimits {
                name: Some("fsize".into()),
                soft: Some(disk_cap),
                hard: Some(disk_cap),
            }]),
            tmpfs: Some(HashMap::from([(
                "/tmp".to_string(),
                "rw,nosuid,nodev,size=256m".to_string(),
            )])),
            auto_remove: Some(true),
            ..HostConfig::default()
        }
    }
}

/// How long the shim lets the harness run: the round's limit, or a kept session's time over
/// all rounds (the host ends each round at its own limit).
fn shim_timeout(launch: &Launch) -> Duration {
    match launch
        .setup
        .round
        .as_ref()
        .and_then(|round| round.session.as_ref())
    {
        Some(session) => session.lifetime.max(launch.timeout),
        None => launch.timeout,
    }
}

/// The binds of what outlives a round: the home folder, and a kept session's folder.
fn kept_folders(launch: &Launch) -> Vec<String> {
    let mut binds = vec![format!(
        "{}:{HOME_MOUNT}",
        launch.folder.join("home").display()
    )];
    if crate::sandbox::keeps_session(launch) {
        binds.push(format!(
            "{}:{SESSION_MOUNT}",
            launch
                .folder
                .join(crate::sandbox::session::SESSION_FOLDER)
                .display()
        ));
    }
    binds
}

/// The harness's environment inside the container: the image's own ENV, plus the sandbox
/// contract and the passthrough names; nothing from the host.
pub(super) fn environment(launch: &Launch) -> Vec<String> {
    let services_url = format!("http://127.0.0.1:{SERVICES_PORT}");
    let gateway_url = format!("http://127.0.0.1:{GATEWAY_PORT}");
    // PATH is left to the image (its ENV), which knows where its programs are.
    let mut variables = vec![
        ("HOME", HOME_MOUNT.to_string()),
        ("TMPDIR", "/tmp".into()),
        ("LANG", "C.UTF-8".into()),
        ("CLAWTEST_SERVICES_URL", services_url),
        ("OPENAI_BASE_URL", format!("{gateway_url}/v1")),
        ("ANTHROPIC_BASE_URL", gateway_url),
        // The real key stays with the gateway on the host.
        ("OPENAI_API_KEY", "clawtest-dummy-key".into()),
        ("ANTHROPIC_API_KEY", "clawtest-dummy-key".into()),
        ("CLAWTEST_PROMPT", launch.prompt.clone()),
        ("CLAWTEST_PROMPT_FILE", format!("{CONTROL_MOUNT}/prompt.md")),
        ("CLAWTEST_TOOLS_FILE", format!("{CONTROL_MOUNT}/tools.json")),
        (
            "EVAL_TOOLS_FILE",
            format!("{CONTROL_MOUNT}/{}", crate::sandbox::EVAL_TOOLS_FILE),
        ),
        ("CLAWTEST_WORKSPACE", WORKSPACE_MOUNT.into()),
        ("CLAWTEST_DIR", CONTROL_MOUNT.into()),
        ("CLAWTEST_TASK_ID", launch.task_id.clone()),
        ("CLAWTEST_TRIAL", launch.trial.to_string()),
        (
            "CLAWTEST_CONVERSATION_FILE",
            format!("{CONTROL_MOUNT}/{}", crate::sandbox::CONVERSATION_FILE),
        ),
        ("AGENT_MAX_TURNS", launch.max_turns.to_string()),
    ]
    .into_iter()
    .chain(crate::sandbox::shared_environment(launch))
    .chain(
        crate::sandbox::keeps_session(launch)
            .then(|| ("CLAWTEST_SESSION_DIR", SESSION_MOUNT.to_string())),
    )
    .map(|(name, value)| format!("{name}={value}"))
    .collect::<Vec<_>>();
    variables.extend(
        launch
            .passthrough
            .iter()
            .map(|(name, value)| format!("{name}={value}")),
    );
    variables
}

/// A container name the engine accepts, unique per run, task and trial.
pub(super) fn container_name(run_id: &str, task_id: &str, trial: u32) -> String {
    let task: String = task_id
        .chars()
        .map(|character| {
            if character.is_ascii_alphanumeric() || matches!(character, '_' | '.' | '-') {
                character
            } else {
                '-'
            }
        })
        .take(60)
        .collect();
    format!("clawtest-{run_id}-{task}-{trial}")
}
