//! The docker backend (DESIGN.md §5): each trial's harness runs in a fresh container of the
//! project's harness image, created through the Docker Engine API (bollard; the only place
//! that talks to Docker). The container has no network (`network_mode: none`), no
//! capabilities, no-new-privileges, memory/CPU/pids limits, and no host variable but those
//! named in `harness.env`. The static `clawtest-shim` (bind-mounted as its entrypoint)
//! forwards the sandbox contract's loopback ports 9100 (services) and 9201 (model gateway)
//! to the Unix sockets the executor serves in the per-trial folder mounted at
//! `/clawtest/sockets`, runs the harness, and reports how it ended on a control socket.
//! Checks then run as execs in the still-running container, which is removed afterwards
//! (also on error and interrupt; a dead host makes the shim exit, and the engine
//! auto-removes the container). Every container carries the labels [`RUN_LABEL`],
//! [`TASK_LABEL`] and [`TRIAL_LABEL`], so [`clean`] can remove what a crashed run left.

pub mod image;
pub mod shim;

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bollard::Docker;
use bollard::container::LogOutput;
use bollard::exec::{CreateExecOptions, StartExecResults};
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, ListContainersOptionsBuilder, LogsOptionsBuilder,
    RemoveContainerOptionsBuilder, StopContainerOptionsBuilder, WaitContainerOptionsBuilder,
};
use futures_util::{Stream, StreamExt};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::UnixListener;
use tokio::sync::watch;

use super::process::{OUTPUT_LIMIT, interrupted, snapshot};
use super::{
    CheckCommand, CheckOutcome, Endpoints, Finished, GATEWAY_SOCKET, Launch, OUTPUT_FILE, Running,
    SERVICES_SOCKET, Sandbox, SandboxError, Transport,
};
use crate::trajectory::HarnessExit;

/// Label holding the run id of every container clawtest creates.
pub const RUN_LABEL: &str = "clawtest.run";
/// Label holding the task id.
pub const TASK_LABEL: &str = "clawtest.task";
/// Label holding the trial number.
pub const TRIAL_LABEL: &str = "clawtest.trial";
/// Label holding `<host name>/<process id>` of the clawtest process that owns the container,
/// so that `clean` leaves the containers of runs still in progress alone.
pub const OWNER_LABEL: &str = "clawtest.owner";

/// The services port of the sandbox contract, inside the container.
pub const SERVICES_PORT: u16 = 9100;
/// The model gateway port of the sandbox contract, inside the container.
pub const GATEWAY_PORT: u16 = 9201;

/// Where things are inside the container.
const CONTROL_MOUNT: &str = "/clawtest";
const SOCKETS_MOUNT: &str = "/clawtest/sockets";
const WORKSPACE_MOUNT: &str = "/workspace";
/// Where the shim is mounted in the container (also the MCP stdio bridge's command).
pub const SHIM_MOUNT: &str = "/.clawtest-shim";
const CONTROL_SOCKET: &str = "control.sock";
/// The harness's output, written by the shim into the shared folder.
const STDOUT_FILE: &str = "harness.stdout";
const STDERR_FILE: &str = "harness.stderr";
/// Time a harness gets to stop after SIGTERM when a run is interrupted.
const STOP_GRACE_SECONDS: i32 = 2;
/// How much longer than the trial's limit the host waits for the shim's report (container
/// start-up, a shim that cannot report).
const REPORT_GRACE: Duration = Duration::from_secs(30);

/// Why the docker backend cannot be used.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum DockerError {
    #[error("the Docker engine does not answer: {0}")]
    Unreachable(String),
    #[error("the harness image `{image}` is not in the local Docker engine")]
    ImageMissing { image: String },
    #[error("building the harness image failed: {0}")]
    Build(String),
    #[error("the Docker engine refused: {0}")]
    Engine(String),
    #[error(transparent)]
    Shim(#[from] shim::ShimError),
}

impl DockerError {
    /// What the user can do about it.
    pub fn advice(&self) -> &'static str {
        match self {
            DockerError::Unreachable(_) => {
                "start the Docker engine (check `docker info`, or DOCKER_HOST), or run with --backend process"
            }
            DockerError::ImageMissing { .. } => {
                "build it (`docker build -t IMAGE .`, or set harness.dockerfile so clawtest builds it), pull it, or run with --backend process"
            }
            DockerError::Build(_) => "fix the Dockerfile, or run with --backend process",
            DockerError::Engine(_) => "check the engine with `docker info`",
            DockerError::Shim(_) => "build the static shim (see README: docker backend)",
        }
    }
}

/// Connects to the engine (`DOCKER_HOST`, else the local socket), agreeing on an API version
/// both sides speak, and checks that it answers.
pub async fn connect() -> Result<Docker, DockerError> {
    let docker = Docker::connect_with_defaults()
        .map_err(|error| DockerError::Unreachable(error.to_string()))?;
    let answer = tokio::time::timeout(Duration::from_secs(5), async {
        let docker = docker.negotiate_version().await?;
        docker.ping().await?;
        Ok::<_, bollard::errors::Error>(docker)
    })
    .await;
    match answer {
        Ok(Ok(docker)) => Ok(docker),
        Ok(Err(error)) => Err(DockerError::Unreachable(error.to_string())),
        Err(_) => Err(DockerError::Unreachable("no answer within 5 s".into())),
    }
}

/// Resource limits of each container.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    pub memory_mb: u64,
    pub cpus: f64,
    pub pids: u32,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            memory_mb: 2048,
            cpus: 2.0,
            pids: 512,
        }
    }
}

/// Runs harnesses in containers of one image.
pub struct DockerSandbox {
    docker: Docker,
    image: String,
    shim: PathBuf,
    run_id: String,
    limits: Limits,
    /// Containers of this run not yet removed, for [`Sandbox::abort`].
    live: Arc<Mutex<HashSet<String>>>,
}

impl DockerSandbox {
    /// A sandbox for an image already present in the engine (checked here).
    pub async fn new(
        docker: Docker,
        image: &str,
        shim: PathBuf,
        limits: Limits,
    ) -> Result<DockerSandbox, DockerError> {
        image::require(&docker, image).await?;
        Ok(DockerSandbox {
            docker,
            image: image.to_string(),
            shim,
            run_id: new_run_id(),
            limits,
            live: Arc::new(Mutex::new(HashSet::new())),
        })
    }

    /// This run's id (the value of [`RUN_LABEL`] on its containers).
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

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

    fn transport(&self) -> Transport {
        Transport::Sockets
    }

    fn run(&self, launch: Launch, interrupt: watch::Receiver<bool>) -> Running<'_> {
        Box::pin(self.run_trial(launch, interrupt))
    }

    fn abort(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            let _ = remove_labelled(&self.docker, &format!("{RUN_LABEL}={}", self.run_id)).await;
        })
    }
}

fn docker_error(context: &str, error: impl std::fmt::Display) -> SandboxError {
    SandboxError::Docker {
        message: format!("{context}: {error}"),
    }
}

fn prepare_error(error: std::io::Error) -> SandboxError {
    SandboxError::Prepare {
        message: error.to_string(),
    }
}

/// Removes its container when dropped without [`ContainerGuard::remove`] (a cancelled trial).
struct ContainerGuard {
    docker: Docker,
    id: String,
    live: Arc<Mutex<HashSet<String>>>,
    removed: bool,
}

impl ContainerGuard {
    async fn remove(mut self) {
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

async fn remove_container(docker: &Docker, id: &str) {
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
    async fn run_trial(
        &self,
        launch: Launch,
        mut interrupt: watch::Receiver<bool>,
    ) -> Result<Finished, SandboxError> {
        let Endpoints::Sockets { folder: sockets } = &launch.endpoints else {
            return Err(SandboxError::Prepare {
                message: "the docker backend needs the trial served on Unix sockets".into(),
            });
        };
        let folder = tempfile::Builder::new()
            .prefix("clawtest-trial-")
            .tempdir()
            .map_err(prepare_error)?;
        let control = folder.path().join("clawtest");
        let workspace = folder.path().join("workspace");
        for path in [&control, &workspace, &control.join("sockets")] {
            std::fs::create_dir_all(path).map_err(prepare_error)?;
        }
        super::lay_out(&launch, &control, &workspace)?;
        let control_listener =
            UnixListener::bind(sockets.join(CONTROL_SOCKET)).map_err(prepare_error)?;

        let environment = environment(&launch);
        let body = self.container_body(&launch, &control, sockets, &workspace, &environment);
        let name = container_name(&self.run_id, &launch.task_id, launch.trial);
        let created = self
            .docker
            .create_container(
                Some(CreateContainerOptionsBuilder::default().name(&name).build()),
                body,
            )
            .await
            .map_err(|error| docker_error("creating the container", error))?;
        if let Ok(mut live) = self.live.lock() {
            live.insert(created.id.clone());
        }
        let guard = ContainerGuard {
            docker: self.docker.clone(),
            id: created.id.clone(),
            live: Arc::clone(&self.live),
            removed: false,
        };
        let outcome = self
            .supervise(
                &guard.id,
                &launch,
                sockets,
                control_listener,
                &environment,
                &mut interrupt,
            )
            .await;
        if matches!(outcome, Err(SandboxError::Interrupted)) {
            // First Ctrl-C: SIGTERM to the shim (forwarded to the harness), then SIGKILL.
            let options = StopContainerOptionsBuilder::default()
                .t(STOP_GRACE_SECONDS)
                .build();
            let _ = self.docker.stop_container(&guard.id, Some(options)).await;
        }
        guard.remove().await;
        let (exit, stdout, stderr, checks, duration) = outcome?;
        let output_file = std::fs::read_to_string(workspace.join(OUTPUT_FILE)).ok();
        let workspace = snapshot(&workspace).map_err(prepare_error)?;
        Ok(Finished {
            exit,
            stdout,
            stderr,
            output_file,
            workspace,
            duration,
            checks,
        })
    }

    fn container_body(
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
            format!("{:.3}", launch.timeout.as_secs_f64()),
            "--stdout".into(),
            socket(STDOUT_FILE),
            "--stderr".into(),
            socket(STDERR_FILE),
            "--".into(),
        ];
        command.extend(launch.command.iter().cloned());
        let labels = HashMap::from([
            (RUN_LABEL.to_string(), self.run_id.clone()),
            (TASK_LABEL.to_string(), launch.task_id.clone()),
            (TRIAL_LABEL.to_string(), launch.trial.to_string()),
            (OWNER_LABEL.to_string(), owner()),
        ]);
        let memory =
            i64::try_from(self.limits.memory_mb.saturating_mul(1 << 20)).unwrap_or(i64::MAX);
        // SAFETY: getuid/getgid cannot fail.
        let (user, group) = unsafe { (libc::getuid(), libc::getgid()) };
        ContainerCreateBody {
            image: Some(self.image.clone()),
            entrypoint: Some(vec![SHIM_MOUNT.to_string()]),
            cmd: Some(command),
            env: Some(environment.to_vec()),
            working_dir: Some(WORKSPACE_MOUNT.into()),
            // The host's user, so the workspace stays the host's to read and delete.
            user: Some(format!("{user}:{group}")),
            labels: Some(labels),
            network_disabled: Some(true),
            host_config: Some(HostConfig {
                binds: Some(vec![
                    format!("{}:{CONTROL_MOUNT}:ro", control.display()),
                    format!("{}:{SOCKETS_MOUNT}", sockets.display()),
                    format!("{}:{WORKSPACE_MOUNT}", workspace.display()),
                    format!("{}:{SHIM_MOUNT}:ro", self.shim.display()),
                ]),
                network_mode: Some("none".into()),
                cap_drop: Some(vec!["ALL".into()]),
                security_opt: Some(vec!["no-new-privileges".into()]),
                memory: Some(memory),
                memory_swap: Some(memory),
                nano_cpus: Some((self.limits.cpus * 1e9) as i64),
                pids_limit: Some(i64::from(self.limits.pids)),
                tmpfs: Some(HashMap::from([(
                    "/tmp".to_string(),
                    "rw,nosuid,nodev,size=256m".to_string(),
                )])),
                auto_remove: Some(true),
                ..HostConfig::default()
            }),
            ..ContainerCreateBody::default()
        }
    }

    /// Starts the container, waits for the shim's report, runs the checks, and reads the
    /// logs. The caller removes the container whatever this returns.
    async fn supervise(
        &self,
        id: &str,
        launch: &Launch,
        sockets: &Path,
        control: UnixListener,
        environment: &[String],
        interrupt: &mut watch::Receiver<bool>,
    ) -> Result<(HarnessExit, String, String, Vec<CheckOutcome>, Duration), SandboxError> {
        let started = Instant::now();
        self.docker
            .start_container(id, None)
            .await
            .map_err(|error| docker_error("starting the container", error))?;
        let report = async {
            let (stream, _) = control.accept().await?;
            let mut reader = BufReader::new(stream);
            let mut line = String::new();
            reader.read_line(&mut line).await?;
            Ok::<_, std::io::Error>((line, reader))
        };
        let mut waiting = self.docker.wait_container(id, None);
        let ended = tokio::select! {
            report = report => Some(report.map_err(prepare_error)?),
            () = tokio::time::sleep(launch.timeout + REPORT_GRACE) => None,
            () = interrupted(interrupt) => return Err(SandboxError::Interrupted),
            _ = waiting.next() => {
                let (_, stderr) = self.logs(id).await;
                return Err(SandboxError::Docker {
                    message: format!("the container ended before the shim reported: {}", stderr.trim()),
                });
            }
        };
        let duration = started.elapsed();
        let (exit, _connection) = match ended {
            None => (
                HarnessExit {
                    code: None,
                    timed_out: true,
                },
                None,
            ),
            Some((line, connection)) => (parse_report(&line, &launch.command)?, Some(connection)),
        };
        let mut checks = Vec::with_capacity(launch.checks.len());
        for check in &launch.checks {
            checks.push(self.exec(id, check, environment, interrupt).await?);
        }
        let stdout = read_limited(&sockets.join(STDOUT_FILE));
        let mut stderr = read_limited(&sockets.join(STDERR_FILE));
        // What the shim itself said (e.g. a port it could not forward) goes with stderr.
        let (_, shim_said) = self.logs(id).await;
        stderr.push_str(&shim_said);
        Ok((exit, stdout, stderr, checks, duration))
    }

    /// The container's log (the shim's own messages), stdout and stderr, each cut at the limit.
    async fn logs(&self, id: &str) -> (String, String) {
        let options = LogsOptionsBuilder::default()
            .stdout(true)
            .stderr(true)
            .build();
        collect(self.docker.logs(id, Some(options))).await
    }

    async fn exec(
        &self,
        id: &str,
        check: &CheckCommand,
        environment: &[String],
        interrupt: &mut watch::Receiver<bool>,
    ) -> Result<CheckOutcome, SandboxError> {
        let failed = |message: String| CheckOutcome {
            exit_code: None,
            timed_out: false,
            stdout: String::new(),
            stderr: message,
        };
        if check.command.is_empty() {
            return Ok(failed("empty check command".into()));
        }
        let created = self
            .docker
            .create_exec(
                id,
                CreateExecOptions {
                    cmd: Some(check.command.clone()),
                    env: Some(environment.to_vec()),
                    working_dir: Some(WORKSPACE_MOUNT.to_string()),
                    attach_stdout: Some(true),
                    attach_stderr: Some(true),
                    ..CreateExecOptions::default()
                },
            )
            .await
            .map_err(|error| docker_error("creating a check exec", error))?;
        let started = self
            .docker
            .start_exec(&created.id, None)
            .await
            .map_err(|error| docker_error("starting a check exec", error))?;
        let StartExecResults::Attached { output, .. } = started else {
            return Ok(failed("the check exec did not attach".into()));
        };
        let collected = tokio::select! {
            collected = collect(output) => Some(collected),
            () = tokio::time::sleep(check.timeout) => None,
            () = interrupted(interrupt) => return Err(SandboxError::Interrupted),
        };
        // A check past its limit keeps running until the container is removed.
        let Some((stdout, stderr)) = collected else {
            return Ok(CheckOutcome {
                exit_code: None,
                timed_out: true,
                stdout: String::new(),
                stderr: String::new(),
            });
        };
        let inspected = self
            .docker
            .inspect_exec(&created.id)
            .await
            .map_err(|error| docker_error("inspecting a check exec", error))?;
        let exit_code = inspected
            .exit_code
            .and_then(|code| i32::try_from(code).ok());
        let stderr = if exit_code.is_none() && stderr.is_empty() {
            format!("`{}` could not run in the container", check.command[0])
        } else {
            stderr
        };
        Ok(CheckOutcome {
            exit_code,
            timed_out: false,
            stdout,
            stderr,
        })
    }
}

async fn collect(
    stream: impl Stream<Item = Result<LogOutput, bollard::errors::Error>>,
) -> (String, String) {
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    tokio::pin!(stream);
    while let Some(Ok(chunk)) = stream.next().await {
        let (kept, message) = match chunk {
            LogOutput::StdOut { message } | LogOutput::Console { message } => {
                (&mut stdout, message)
            }
            LogOutput::StdErr { message } => (&mut stderr, message),
            LogOutput::StdIn { .. } => continue,
        };
        let room = OUTPUT_LIMIT.saturating_sub(kept.len());
        kept.extend_from_slice(&message[..message.len().min(room)]);
    }
    (
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

/// A file's text, cut at the output limit (empty if it is not there).
fn read_limited(path: &Path) -> String {
    use std::io::Read;
    let mut kept = Vec::new();
    if let Ok(file) = std::fs::File::open(path) {
        let _ = file.take(OUTPUT_LIMIT as u64).read_to_end(&mut kept);
    }
    String::from_utf8_lossy(&kept).into_owned()
}

/// Reads the shim's one-line report.
fn parse_report(line: &str, command: &[String]) -> Result<HarnessExit, SandboxError> {
    let line = line.trim();
    let (kind, rest) = line.split_once(' ').unwrap_or((line, ""));
    match kind {
        "exit" => Ok(HarnessExit {
            code: rest.parse().ok(),
            timed_out: false,
        }),
        "signal" => Ok(HarnessExit {
            code: None,
            timed_out: false,
        }),
        "timeout" => Ok(HarnessExit {
            code: None,
            timed_out: true,
        }),
        "error" if rest.contains("No such file") => Err(SandboxError::CommandNotFound {
            program: command.first().cloned().unwrap_or_default(),
        }),
        "error" => Err(SandboxError::CannotStart {
            program: command.first().cloned().unwrap_or_default(),
            message: rest.to_string(),
        }),
        _ => Err(SandboxError::Docker {
            message: format!("the shim reported `{line}`"),
        }),
    }
}

/// The harness's environment inside the container: the image's own ENV, plus the sandbox
/// contract and the passthrough names; nothing from the host.
fn environment(launch: &Launch) -> Vec<String> {
    let services_url = format!("http://127.0.0.1:{SERVICES_PORT}");
    let gateway_url = format!("http://127.0.0.1:{GATEWAY_PORT}");
    // PATH is left to the image (its ENV), which knows where its programs are.
    let mut variables = vec![
        ("HOME", "/tmp".to_string()),
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
        ("EVAL_TOOLS_FILE", format!("{CONTROL_MOUNT}/tools.json")),
        ("CLAWTEST_WORKSPACE", WORKSPACE_MOUNT.into()),
        ("CLAWTEST_DIR", CONTROL_MOUNT.into()),
        ("CLAWTEST_TASK_ID", launch.task_id.clone()),
        ("CLAWTEST_TRIAL", launch.trial.to_string()),
        ("AGENT_MAX_TURNS", launch.max_turns.to_string()),
    ]
    .into_iter()
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
fn container_name(run_id: &str, task_id: &str, trial: u32) -> String {
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

/// Removes every container carrying `label` (`name` or `name=value`); returns how many.
pub async fn remove_labelled(docker: &Docker, label: &str) -> Result<usize, DockerError> {
    let containers = containers_labelled(docker, label).await?;
    for id in &containers {
        remove_container(docker, id).await;
    }
    Ok(containers.len())
}

/// `cargo clawtest clean`: removes the containers earlier runs left behind, keeping those of
/// runs still in progress on this host.
pub async fn clean(docker: &Docker) -> Result<usize, DockerError> {
    let filters = HashMap::from([("label".to_string(), vec![RUN_LABEL.to_string()])]);
    let options = ListContainersOptionsBuilder::default()
        .all(true)
        .filters(&filters)
        .build();
    let containers = docker
        .list_containers(Some(options))
        .await
        .map_err(|error| DockerError::Engine(format!("listing containers: {error}")))?;
    let mut removed = 0;
    for container in containers {
        let owner = container
            .labels
            .as_ref()
            .and_then(|labels| labels.get(OWNER_LABEL));
        if owner.is_some_and(|owner| owner_alive(owner)) {
            continue;
        }
        if let Some(id) = container.id {
            remove_container(docker, &id).await;
            removed += 1;
        }
    }
    Ok(removed)
}

fn host_name() -> String {
    let mut buffer = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname NUL-terminates within it.
    let result = unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len() - 1) };
    if result != 0 {
        return String::new();
    }
    let end = buffer.iter().position(|byte| *byte == 0).unwrap_or(0);
    String::from_utf8_lossy(&buffer[..end]).into_owned()
}

fn owner() -> String {
    format!("{}/{}", host_name(), std::process::id())
}

/// True when `owner` is a clawtest process still alive on this host.
fn owner_alive(owner: &str) -> bool {
    let Some((host, process)) = owner.rsplit_once('/') else {
        return false;
    };
    let Ok(process) = process.parse::<i32>() else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists.
    host == host_name() && process != 0 && unsafe { libc::kill(process, 0) } == 0
}

/// The ids of containers carrying `label` (`name` or `name=value`), running or not.
pub async fn containers_labelled(docker: &Docker, label: &str) -> Result<Vec<String>, DockerError> {
    let filters = HashMap::from([("label".to_string(), vec![label.to_string()])]);
    let options = ListContainersOptionsBuilder::default()
        .all(true)
        .filters(&filters)
        .build();
    let containers = docker
        .list_containers(Some(options))
        .await
        .map_err(|error| DockerError::Engine(format!("listing containers: {error}")))?;
    Ok(containers
        .into_iter()
        .filter_map(|container| container.id)
        .collect())
}
