//! The trial's folder as a container sees it, in both kinds of container (one of its own,
//! or a worker's): laid out before the harness starts (the control folder, workspace and
//! home folder the container mounts), the harness's output streams (Unix sockets the host
//! listens on in the trial's socket folder, read back capped: no file the container could
//! replace by a link is read for them), and the workspace read back once the harness has
//! ended (through [`crate::sandbox::capture`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::net::UnixListener;
use tokio::sync::watch;

use super::{
    GATEWAY_PORT, HOME_MOUNT, SERVICES_PORT, STDERR_SOCKET, STDOUT_SOCKET, WORKSPACE_MOUNT,
};
use crate::sandbox::capture::{self, Tail, read_tail};
use crate::sandbox::disk::DiskFull;
use crate::sandbox::process::PIPE_GRACE;
use crate::sandbox::{CheckOutcome, Endpoints, Finished, Launch, SandboxError};
use crate::trajectory::HarnessExit;

/// The per-trial folder could not be prepared.
pub(super) fn prepare_error(error: std::io::Error) -> SandboxError {
    SandboxError::Prepare {
        message: error.to_string(),
    }
}

/// How the harness's container ran: its exit, what the shim said, the checks' outcomes, how
/// long it ran, and whether it passed its disk cap.
pub(super) struct Supervised {
    pub(super) exit: HarnessExit,
    pub(super) shim_said: String,
    pub(super) checks: Vec<CheckOutcome>,
    pub(super) duration: Duration,
    pub(super) disk_full: Option<DiskFull>,
}

impl Supervised {
    /// A harness killed when the trial's folder passed its disk cap (`full`), after
    /// `duration`: no checks are run (they would grade nothing).
    pub(super) fn stopped_at_disk_cap(duration: Duration, full: Option<DiskFull>) -> Supervised {
        Supervised {
            exit: HarnessExit {
                code: None,
                timed_out: false,
                signal: Some(rustix::process::Signal::KILL.as_raw()),
            },
            shim_said: String::new(),
            checks: Vec::new(),
            duration,
            disk_full: full,
        }
    }
}

/// The trial's socket folder: the docker backend serves a trial on Unix sockets.
pub(super) fn socket_folder(launch: &Launch) -> Result<PathBuf, SandboxError> {
    match &launch.endpoints {
        Endpoints::Sockets { folder } => Ok(folder.clone()),
        Endpoints::Loopback { .. } => Err(SandboxError::Prepare {
            message: "the docker backend needs the trial served on Unix sockets".into(),
        }),
    }
}

/// Lays out the trial's folder for the harness (its control folder, workspace and home
/// folder, and a kept session's folder): what the container mounts.
pub(super) fn lay_out_folder(launch: &Launch) -> Result<(), SandboxError> {
    let folder = &launch.folder;
    let control = folder.join("clawtest");
    let workspace = folder.join("workspace");
    let home = folder.join("home");
    for path in [&control, &workspace, &home, &control.join("sockets")] {
        std::fs::create_dir_all(path).map_err(prepare_error)?;
    }
    if crate::sandbox::keeps_session(launch) {
        std::fs::create_dir_all(folder.join(crate::sandbox::session::SESSION_FOLDER))
            .map_err(prepare_error)?;
    }
    crate::sandbox::lay_out(launch, &control, &workspace)?;
    crate::sandbox::write_harness_files(
        launch,
        &crate::config::TemplateValues {
            services_url: &format!("http://127.0.0.1:{}", SERVICES_PORT),
            gateway_url: &format!("http://127.0.0.1:{}", GATEWAY_PORT),
            model: launch.setup.model.as_deref().unwrap_or_default(),
            workspace: WORKSPACE_MOUNT,
            home: HOME_MOUNT,
        },
        &workspace,
        &home,
    )
}

/// Removes a socket an earlier round (or trial) left at `path`.
pub(super) fn remove_stale(path: &Path) -> Result<(), SandboxError> {
    match std::fs::remove_file(path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(prepare_error(error)),
        _ => Ok(()),
    }
}

/// The harness's stdout and stderr: sockets the host listens on in the trial's socket folder,
/// each read to its end (or until stopped), its tail kept.
pub(super) struct Streams {
    stop: watch::Sender<bool>,
    stdout: tokio::task::JoinHandle<Tail>,
    stderr: tokio::task::JoinHandle<Tail>,
}

/// What the streams kept: stdout, stderr, and a note for each cut to its cap.
pub(super) struct Output {
    stdout: String,
    stderr: String,
    notes: Vec<String>,
}

impl Streams {
    /// Listens on the two sockets in `sockets` (an earlier round's removed first).
    pub(super) fn open(sockets: &Path, cap: usize) -> Result<Streams, SandboxError> {
        let listen = |name: &str| {
            remove_stale(&sockets.join(name))?;
            UnixListener::bind(sockets.join(name)).map_err(prepare_error)
        };
        let (stdout, stderr) = (listen(STDOUT_SOCKET)?, listen(STDERR_SOCKET)?);
        let (stop, stopped) = watch::channel(false);
        Ok(Streams {
            stop,
            stdout: tokio::spawn(read_stream(stdout, cap, stopped.clone())),
            stderr: tokio::spawn(read_stream(stderr, cap, stopped)),
        })
    }

    /// Once the harness's processes are gone: the streams end now, or after a grace if still
    /// held; what they kept.
    pub(super) async fn finish(mut self) -> Output {
        // Awaited as they end (not polled: a poll every 20 ms cost a trial in a worker, a few
        // milliseconds long, up to 20 ms), both within the one grace.
        let mut stdout = None;
        let mut stderr = None;
        let _ = tokio::time::timeout(PIPE_GRACE, async {
            stdout = Some((&mut self.stdout).await);
            stderr = Some((&mut self.stderr).await);
        })
        .await;
        let _ = self.stop.send(true);
        let stdout = match stdout {
            Some(ended) => ended,
            None => self.stdout.await,
        };
        let stderr = match stderr {
            Some(ended) => ended,
            None => self.stderr.await,
        };
        let (stdout, stdout_note) = stdout.unwrap_or_default().finish("stdout");
        let (stderr, stderr_note) = stderr.unwrap_or_default().finish("stderr");
        Output {
            stdout,
            stderr,
            notes: stdout_note.into_iter().chain(stderr_note).collect(),
        }
    }
}

/// The trial as it finished: the harness's exit, output and checks, and its workspace read
/// back through [`capture`].
pub(super) fn finished(
    launch: &Launch,
    supervised: Supervised,
    output: Output,
) -> Result<Finished, SandboxError> {
    let Supervised {
        exit,
        shim_said,
        checks,
        duration,
        disk_full,
    } = supervised;
    let Output {
        stdout,
        mut stderr,
        notes: mut limits_reached,
    } = output;
    // What the shim itself said (e.g. a port it could not forward) goes with stderr.
    stderr.push_str(&shim_said);
    limits_reached.extend(disk_full.as_ref().map(DiskFull::note));
    let workspace = launch.folder.join("workspace");
    let output_file = capture::read_output_file(
        &workspace,
        launch.limits.output_file_bytes,
        &mut limits_reached,
    );
    let workspace = capture::snapshot(&workspace, &launch.limits, &mut limits_reached)
        .map_err(prepare_error)?;
    Ok(Finished {
        exit,
        stdout,
        stderr,
        output_file,
        workspace,
        duration,
        checks,
        limits_reached,
        disk_full,
    })
}

/// One of the harness's streams: the first connection on `listener` (the shim's, made before
/// the harness starts), read to its end or until `stop` turns true, its tail kept.
async fn read_stream(listener: UnixListener, cap: usize, mut stop: watch::Receiver<bool>) -> Tail {
    let stopped = async move {
        let _ = stop.wait_for(|stop| *stop).await;
    };
    tokio::pin!(stopped);
    let connection = tokio::select! {
        accepted = listener.accept() => accepted.ok().map(|(stream, _)| stream),
        () = &mut stopped => None,
    };
    read_tail(connection, cap, stopped).await
}
