//! Worker containers (docs/sandbox.md, "Worker containers"): a container of the harness image
//! is kept for the run and runs one trial after another, instead of one container made and
//! removed per trial (most of a trial's cost on this backend). A trial borrows a worker's
//! folder for its whole time ([`Pool::lend`], `Sandbox::trial_folder`): the worker's container
//! mounts its parts where a trial's are (`/clawtest`, `/clawtest/sockets`, `/workspace`,
//! `/home/clawtest`), the trial lays its files out there and serves its endpoints in its
//! `sockets/`, and the worker's shim runs the harness as its child (`clawtest-shim --worker`).
//! This file starts a worker and runs a trial in it; `pool` lends the folders and empties them.
//!
//! What a trial leaves is gone before the next one starts, and each part has one owner:
//!
//! - processes: after the checks, the shim (the container's PID 1) kills every other process
//!   of the container, whatever session or group it made, reaps them and waits until `/proc`
//!   lists itself alone;
//! - files: the container's root file system is read-only; the shim removes what was made in
//!   the container's own writable mounts (`/tmp`, `/dev/shm`, `/dev`, `/dev/mqueue`, an
//!   image's volumes) and System V IPC objects, and fails the reset when something it recorded
//!   at the start was changed; the host empties the folders it mounts (workspace, home folder,
//!   control folder, sockets: `pool::empty_worker_folder`) and puts their mode, times and
//!   extended attributes back, when the folder is given back;
//! - variables: the container has none but the image's; each harness gets its trial's.
//!
//! Whatever cannot be made clean ends the container: a reset that fails, a harness past the
//! host's deadline or the disk cap, an interrupt, a shim that stops answering. The next trial
//! in that folder starts a new container. A kept session (a harness that lives across a
//! closed loop's rounds) runs in a container of its own in the lent folder, as on
//! `[docker] reuse = false`.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bollard::query_parameters::{CreateContainerOptionsBuilder, StopContainerOptionsBuilder};
use futures_util::StreamExt;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio_util::sync::CancellationToken;

use super::container::environment;
use super::folder::{
    Streams, Supervised, finished, lay_out_folder, prepare_error, remove_stale, socket_folder,
};
use super::pool::{Live, Slot};
use super::trial::{REPORT_GRACE, STOP_GRACE_SECONDS, docker_error, parse_report};
use super::{DockerSandbox, SOCKETS_MOUNT, STDERR_SOCKET, STDOUT_SOCKET, WORKER_SOCKET};
use crate::sandbox::disk::DiskWatch;
use crate::sandbox::{Finished, Launch, SandboxError};
use crate::trajectory::HarnessExit;

/// How long a new worker's shim may take to connect and say it is ready.
const START_LIMIT: Duration = Duration::from_secs(30);
/// How long a reset may take (the shim waits up to 5 s for killed processes to go).
const RESET_LIMIT: Duration = Duration::from_secs(15);
/// Why a worker container could not be started.
enum Start {
    /// Its shim would not promise a reset: the run's trials get containers of their own.
    Refused(String),
    /// The engine or the shim failed.
    Failed(SandboxError),
}

/// Lower-case hex of `bytes`: how free text crosses the worker socket.
fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut text, byte| {
        let _ = write!(text, "{byte:02x}");
        text
    })
}

/// Hex back to text (lossy: the shim writes what it said as UTF-8).
fn unhex(text: &str) -> String {
    let bytes: Vec<u8> = (0..text.len() / 2)
        .filter_map(|at| u8::from_str_radix(text.get(2 * at..2 * at + 2)?, 16).ok())
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// What a trial's run in a worker came to: the run (or why it failed), and whether the
/// container may be reset and kept.
struct Ran {
    outcome: Result<Supervised, SandboxError>,
    keep: bool,
}

impl DockerSandbox {
    /// Runs one trial in the worker of its lent folder (see the module documentation).
    pub(super) async fn run_in_worker(
        &self,
        slot: Slot,
        launch: Launch,
        interrupt: CancellationToken,
    ) -> Result<Finished, SandboxError> {
        let sockets = socket_folder(&launch)?;
        let disk_cap = launch.limits.workspace_disk_bytes;
        let live = match slot.live {
            Some(live) if live.disk_cap == disk_cap && live.answers() => live,
            other => {
                if let Some(old) = other {
                    old.guard.remove().await;
                }
                match self.start_worker(&launch.folder, disk_cap).await {
                    Ok(live) => live,
                    Err(Start::Refused(why)) => {
                        self.pool.refuse(why);
                        return self.run_trial(launch, interrupt).await;
                    }
                    Err(Start::Failed(error)) => return Err(error),
                }
            }
        };
        let prepared = lay_out_folder(&launch)
            .and_then(|()| Streams::open(&sockets, launch.limits.output_bytes));
        let streams = match prepared {
            Ok(streams) => streams,
            Err(error) => {
                // No harness ran: the worker is as it was.
                self.pool
                    .put_back(&launch.folder, Slot { live: Some(live) });
                return Err(error);
            }
        };
        let mut live = live;
        let environment = environment(&launch);
        let disk = DiskWatch::start(launch.folder.clone(), disk_cap);
        let ran = self
            .supervise_worker(&mut live, &launch, &environment, &interrupt, disk)
            .await;
        let kept = ran.keep && live.reset().await.is_ok();
        if kept {
            self.pool
                .put_back(&launch.folder, Slot { live: Some(live) });
        } else {
            if matches!(ran.outcome, Err(SandboxError::Interrupted)) {
                // First Ctrl-C: SIGTERM to the shim (forwarded to the harness), then SIGKILL.
                let options = StopContainerOptionsBuilder::default()
                    .t(STOP_GRACE_SECONDS)
                    .build();
                let _ = self
                    .docker
                    .stop_container(&live.guard.id, Some(options))
                    .await;
            }
            live.guard.remove().await;
        }
        // The trial's processes are gone: its streams end now, or after a grace.
        let output = streams.finish().await;
        finished(&launch, ran.outcome?, output)
    }

    /// Makes and starts a worker container on `folder` and waits until its shim is ready.
    async fn start_worker(&self, folder: &Path, disk_cap: u64) -> Result<Live, Start> {
        let failed = |error: SandboxError| Start::Failed(error);
        let socket = folder.join("sockets").join(WORKER_SOCKET);
        remove_stale(&socket).map_err(failed)?;
        let listener = UnixListener::bind(&socket)
            .map_err(prepare_error)
            .map_err(failed)?;
        let number = self.pool.started.fetch_add(1, Ordering::Relaxed);
        let name = format!("clawtest-{}-worker-{number}", self.run_id);
        let body = self.worker_body(folder, &name, disk_cap);
        let created = self
            .docker
            .create_container(
                Some(CreateContainerOptionsBuilder::default().name(&name).build()),
                body,
            )
            .await
            .map_err(|error| failed(docker_error("creating a worker container", error)))?;
        let guard = self.guard(created.id);
        let ready = async {
            self.docker
                .start_container(&guard.id, None)
                .await
                .map_err(|error| docker_error("starting a worker container", error))?;
            let mut ended = self.docker.wait_container(&guard.id, None);
            let accepted = tokio::select! {
                accepted = tokio::time::timeout(START_LIMIT, listener.accept()) => accepted,
                _ = ended.next() => return Err(SandboxError::Docker {
                    message: "the worker container ended before its shim was ready".into(),
                }),
            };
            let (stream, _) = accepted
                .map_err(|_| SandboxError::Docker {
                    message: format!("no worker shim connected within {START_LIMIT:?}"),
                })?
                .map_err(prepare_error)?;
            let mut shim = BufReader::new(stream);
            let greeting = read_line(&mut shim, START_LIMIT).await?;
            Ok((shim, greeting))
        }
        .await;
        drop(listener);
        let _ = std::fs::remove_file(&socket);
        match ready {
            Ok((shim, greeting)) if greeting == "ready" => Ok(Live {
                guard,
                shim,
                disk_cap,
            }),
            Ok((_, greeting)) => {
                guard.remove().await;
                let why = greeting
                    .strip_prefix("refused ")
                    .map_or(greeting.clone(), unhex);
                Err(Start::Refused(why))
            }
            Err(error) => {
                guard.remove().await;
                Err(failed(error))
            }
        }
    }

    /// Asks the worker's shim for the trial, waits for its report (or the host's deadline,
    /// the disk cap, an interrupt), then runs the checks as execs.
    async fn supervise_worker(
        &self,
        live: &mut Live,
        launch: &Launch,
        environment: &[String],
        interrupt: &CancellationToken,
        mut disk: DiskWatch,
    ) -> Ran {
        let started = Instant::now();
        let request = trial_request(launch, environment);
        if let Err(error) = live.shim.get_mut().write_all(request.as_bytes()).await {
            return Ran {
                outcome: Err(worker_gone(&error.to_string())),
                keep: false,
            };
        }
        let deadline = launch.timeout + REPORT_GRACE;
        let reported = tokio::select! {
            reported = read_report(&mut live.shim, deadline) => reported,
            () = disk.passed() => {
                self.kill(&live.guard.id).await;
                let supervised = Supervised::stopped_at_disk_cap(started.elapsed(), disk.finish(None));
                return Ran { outcome: Ok(supervised), keep: false };
            }
            () = interrupt.cancelled() => {
                return Ran { outcome: Err(SandboxError::Interrupted), keep: false };
            }
        };
        let duration = started.elapsed();
        let (exit, shim_said, keep) = match reported {
            Ok(Some((line, said))) => match parse_report(&line, &launch.command) {
                Ok(exit) => (exit, said, true),
                Err(error) => {
                    return Ran {
                        outcome: Err(error),
                        // The shim answered: the container is as a finished trial leaves it.
                        keep: true,
                    };
                }
            },
            // The host's deadline passed without a report.
            Ok(None) => (
                HarnessExit {
                    code: None,
                    timed_out: true,
                    signal: None,
                },
                String::new(),
                false,
            ),
            Err(error) => {
                return Ran {
                    outcome: Err(error),
                    keep: false,
                };
            }
        };
        let disk_full = disk.finish(exit.signal);
        // A trial past its disk cap is an error: its checks would grade nothing.
        let checks = match disk_full {
            None => {
                self.checks(&live.guard.id, launch, environment, interrupt)
                    .await
            }
            Some(_) => Ok(Vec::new()),
        };
        let checks = match checks {
            Ok(checks) => checks,
            Err(error) => {
                return Ran {
                    outcome: Err(error),
                    keep: false,
                };
            }
        };
        Ran {
            keep: keep && disk_full.is_none(),
            outcome: Ok(Supervised {
                exit,
                shim_said,
                checks,
                duration,
                disk_full,
            }),
        }
    }
}

impl Live {
    /// Whether the shim is still there to ask: its connection not closed (a worker container
    /// that ended while idle, killed from outside, is replaced before a trial is lost to it).
    fn answers(&self) -> bool {
        let mut byte = [0u8; 1];
        // Between trials the shim says nothing: anything but "nothing yet" is a dead worker.
        matches!(
            self.shim.get_ref().try_read(&mut byte),
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock
        ) && self.shim.buffer().is_empty()
    }

    /// Asks the shim to end every process and put the container back; an error says why it
    /// could not (the container must then go).
    async fn reset(&mut self) -> Result<(), String> {
        self.shim
            .get_mut()
            .write_all(b"reset\n")
            .await
            .map_err(|error| error.to_string())?;
        match read_line(&mut self.shim, RESET_LIMIT).await {
            Ok(line) if line == "clean" => Ok(()),
            Ok(line) => Err(line.strip_prefix("dirty ").map_or(line.clone(), unhex)),
            Err(error) => Err(error.to_string()),
        }
    }
}

/// A trial's request to the worker's shim: its command, variables, time limit and streams.
fn trial_request(launch: &Launch, environment: &[String]) -> String {
    use std::fmt::Write as _;
    let mut request = String::new();
    for word in &launch.command {
        let _ = writeln!(request, "arg {}", hex(word.as_bytes()));
    }
    for variable in environment {
        let _ = writeln!(request, "env {}", hex(variable.as_bytes()));
    }
    let _ = write!(
        request,
        "timeout {:.3}\nstdout {SOCKETS_MOUNT}/{STDOUT_SOCKET}\nstderr {SOCKETS_MOUNT}/{STDERR_SOCKET}\nrun\n",
        launch.timeout.as_secs_f64()
    );
    request
}

/// The shim's report and what it said before it (`said` lines); `None` when `limit` passed.
async fn read_report(
    shim: &mut BufReader<UnixStream>,
    limit: Duration,
) -> Result<Option<(String, String)>, SandboxError> {
    let deadline = tokio::time::Instant::now() + limit;
    let mut said = String::new();
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match read_line(shim, left).await {
            Ok(line) => match line.strip_prefix("said ") {
                Some(text) => said.push_str(&unhex(text)),
                None => return Ok(Some((line, said))),
            },
            Err(LineError::TimedOut) => return Ok(None),
            Err(error) => return Err(worker_gone(&error.to_string())),
        }
    }
}

/// Why no line came from the shim.
#[derive(Debug)]
enum LineError {
    TimedOut,
    Closed,
    Failed(std::io::Error),
}

impl std::fmt::Display for LineError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LineError::TimedOut => write!(formatter, "the worker's shim did not answer in time"),
            LineError::Closed => write!(formatter, "the worker's shim hung up"),
            LineError::Failed(error) => {
                write!(formatter, "reading from the worker's shim: {error}")
            }
        }
    }
}

impl From<LineError> for SandboxError {
    fn from(error: LineError) -> SandboxError {
        worker_gone(&error.to_string())
    }
}

/// The worker container ended or stopped answering.
fn worker_gone(why: &str) -> SandboxError {
    SandboxError::Docker {
        message: format!("the worker container stopped serving trials: {why}"),
    }
}

/// One line from the shim, within `limit`, without its line end.
async fn read_line(shim: &mut BufReader<UnixStream>, limit: Duration) -> Result<String, LineError> {
    let mut line = String::new();
    match tokio::time::timeout(limit, shim.read_line(&mut line)).await {
        Err(_) => Err(LineError::TimedOut),
        Ok(Ok(0)) => Err(LineError::Closed),
        Ok(Ok(_)) => Ok(line.trim_end().to_string()),
        Ok(Err(error)) => Err(LineError::Failed(error)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_crosses_the_socket_both_ways() {
        let text = "PROMPT=two\nlines ü";
        assert_eq!(unhex(&hex(text.as_bytes())), text);
    }
}
