//! One trial in a container: the per-trial folder laid out, the container created and
//! started, the shim's one-line report awaited (or the time limit, or an interrupt), the
//! checks run as execs in the still-running container, the harness's output read, and the
//! container removed whatever happened.
//!
//! The harness's stdout and stderr come over two Unix sockets the host listens on (the shim
//! connects them as the harness's streams), in a folder mounted read-only: no file the
//! container can replace by a link is read for them. The workspace's files are read through
//! [`crate::sandbox::capture`] (no link followed, every stream capped).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bollard::container::LogOutput;
use bollard::exec::{CreateExecOptions, StartExecResults};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, KillContainerOptionsBuilder, LogsOptionsBuilder,
    StopContainerOptionsBuilder,
};
use futures_util::{Stream, StreamExt};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::UnixListener;
use tokio_util::sync::CancellationToken;

use super::container::{ContainerGuard, container_name, environment};
use super::folder::{
    Streams, Supervised, finished, lay_out_folder, prepare_error, remove_stale, socket_folder,
};
use super::{CONTROL_SOCKET, DockerSandbox, WORKSPACE_MOUNT};
use crate::sandbox::capture::{self, Tail};
use crate::sandbox::disk::DiskWatch;
use crate::sandbox::session::{Answered, Rounds};
use crate::sandbox::{CheckCommand, CheckOutcome, Finished, Launch, SandboxError};
use crate::trajectory::HarnessExit;

/// Time a harness gets to stop after SIGTERM when a run is interrupted.
pub(super) const STOP_GRACE_SECONDS: i32 = 2;
/// How much longer than the trial's limit the host waits for the shim's report (container
/// start-up, a shim that cannot report).
pub(super) const REPORT_GRACE: Duration = Duration::from_secs(30);

/// A failed engine call, in words, as the trial's error.
pub(super) fn docker_error(context: &str, error: impl std::fmt::Display) -> SandboxError {
    SandboxError::Docker {
        message: format!("{context}: {error}"),
    }
}

impl DockerSandbox {
    /// Runs one trial in a container of its own: see the module documentation.
    pub(super) async fn run_trial(
        &self,
        launch: Launch,
        interrupt: CancellationToken,
    ) -> Result<Finished, SandboxError> {
        let sockets = socket_folder(&launch)?;
        let folder = launch.folder.clone();
        lay_out_folder(&launch)?;
        // A follow-up round binds the socket the round before it left behind.
        remove_stale(&sockets.join(CONTROL_SOCKET))?;
        let control_listener =
            UnixListener::bind(sockets.join(CONTROL_SOCKET)).map_err(prepare_error)?;
        let streams = Streams::open(&sockets, launch.limits.output_bytes)?;

        let environment = environment(&launch);
        let control = folder.join("clawtest");
        let workspace = folder.join("workspace");
        let body = self.container_body(&launch, &control, &sockets, &workspace, &environment);
        let name = container_name(&self.run_id, &launch.task_id, launch.trial);
        let created = self
            .docker
            .create_container(
                Some(CreateContainerOptionsBuilder::default().name(&name).build()),
                body,
            )
            .await
            .map_err(|error| docker_error("creating the container", error))?;
        let guard = self.guard(created.id);
        // The workspace is a bind mount of the trial's folder: measured here, on the host.
        let disk = DiskWatch::start(folder.clone(), launch.limits.workspace_disk_bytes);
        let outcome = self
            .supervise(
                &guard.id,
                &launch,
                control_listener,
                &environment,
                &interrupt,
                disk,
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
        // The container is gone: its streams end now, or after a grace if still held.
        let streams = streams.finish().await;
        finished(&launch, outcome?, streams)
    }

    /// A guard that removes container `id` (and counts it live until then).
    pub(super) fn guard(&self, id: String) -> ContainerGuard {
        if let Ok(mut live) = self.live.lock() {
            live.insert(id.clone());
        }
        ContainerGuard {
            docker: self.docker.clone(),
            id,
            live: Arc::clone(&self.live),
            removed: false,
        }
    }

    /// Starts the container, waits for the shim's report (or the trial folder's disk cap,
    /// which kills the container), runs the checks, and reads the logs. The caller removes the
    /// container whatever this returns.
    async fn supervise(
        &self,
        id: &str,
        launch: &Launch,
        control: UnixListener,
        environment: &[String],
        interrupt: &CancellationToken,
        mut disk: DiskWatch,
    ) -> Result<Supervised, SandboxError> {
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
        tokio::pin!(report);
        let mut waiting = self.docker.wait_container(id, None);
        let mut session = crate::sandbox::session_rounds(launch)?;
        let mut deadline = tokio::time::Instant::now() + launch.timeout + REPORT_GRACE;
        let mut round_started = started;
        let ended = loop {
            let answered = async {
                match &session {
                    Some(rounds) => rounds.answered().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                report = &mut report => break Some(report.map_err(prepare_error)?),
                () = disk.passed() => {
                    self.kill(id).await;
                    return Ok(Supervised::stopped_at_disk_cap(started.elapsed(), disk.finish(None)));
                }
                () = tokio::time::sleep_until(deadline) => break None,
                () = interrupt.cancelled() => return Err(SandboxError::Interrupted),
                _ = waiting.next() => {
                    let (_, stderr) = self.logs(id, launch.limits.output_bytes).await;
                    return Err(SandboxError::Docker {
                        message: format!("the container ended before the shim reported: {}", stderr.trim()),
                    });
                }
                () = answered => {}
            }
            // A kept session's harness answered its round: handed over, it waits for the next.
            let Some(rounds) = session.as_mut() else {
                continue;
            };
            let round = RoundInContainer {
                id,
                launch,
                environment,
                started: round_started,
            };
            match self.hand_over(round, rounds, interrupt).await? {
                Some(limit) => {
                    deadline = tokio::time::Instant::now() + limit;
                    round_started = Instant::now();
                }
                // No round follows: the caller removes the container.
                None => {
                    return Ok(Supervised {
                        exit: crate::sandbox::session::answered_exit(),
                        shim_said: String::new(),
                        checks: Vec::new(),
                        duration: round_started.elapsed(),
                        disk_full: None,
                    });
                }
            }
        };
        let duration = started.elapsed();
        let (exit, _connection) = match ended {
            None => (
                HarnessExit {
                    code: None,
                    timed_out: true,
                    signal: None,
                },
                None,
            ),
            Some((line, connection)) => (parse_report(&line, &launch.command)?, Some(connection)),
        };
        let disk_full = disk.finish(exit.signal);
        let cap = launch.limits.output_bytes;
        // A trial past its disk cap is an error: its checks would grade nothing.
        let checks = match disk_full {
            None => self.checks(id, launch, environment, interrupt).await?,
            Some(_) => Vec::new(),
        };
        let (_, shim_said) = self.logs(id, cap).await;
        Ok(Supervised {
            exit,
            shim_said,
            checks,
            duration,
            disk_full,
        })
    }

    /// A kept session's answered round collected (the answer, the checks as execs, the
    /// workspace's files) and handed over; the next round's time limit, or `None` at the end.
    async fn hand_over(
        &self,
        round: RoundInContainer<'_>,
        rounds: &mut Rounds,
        interrupt: &CancellationToken,
    ) -> Result<Option<Duration>, SandboxError> {
        let limits = &round.launch.limits;
        let mut notes = Vec::new();
        let answer = rounds.answer(limits.output_file_bytes, &mut notes);
        let duration = round.started.elapsed();
        let checks = self
            .checks(round.id, round.launch, round.environment, interrupt)
            .await?;
        let workspace = round.launch.folder.join("workspace");
        let workspace = capture::snapshot(&workspace, limits, &mut notes).map_err(prepare_error)?;
        let answered = Answered {
            answer,
            workspace,
            duration,
            checks,
            notes,
        };
        rounds.hand_over(answered, interrupt).await
    }

    /// The container's log (the shim's own messages), stdout and stderr, each capped.
    async fn logs(&self, id: &str, cap: usize) -> (String, String) {
        let options = LogsOptionsBuilder::default()
            .stdout(true)
            .stderr(true)
            .build();
        collect(self.docker.logs(id, Some(options)), cap).await
    }

    /// Runs the launch's checks, one after another, as execs in container `id`.
    pub(super) async fn checks(
        &self,
        id: &str,
        launch: &Launch,
        environment: &[String],
        interrupt: &CancellationToken,
    ) -> Result<Vec<CheckOutcome>, SandboxError> {
        let mut checks = Vec::with_capacity(launch.checks.len());
        for check in &launch.checks {
            let outcome = self
                .exec(
                    id,
                    check,
                    environment,
                    launch.limits.output_bytes,
                    interrupt,
                )
                .await?;
            checks.push(outcome);
        }
        Ok(checks)
    }

    /// Kills container `id` at once (SIGKILL): the trial's folder passed its disk cap.
    pub(super) async fn kill(&self, id: &str) {
        let options = KillContainerOptionsBuilder::default()
            .signal("SIGKILL")
            .build();
        let _ = self.docker.kill_container(id, Some(options)).await;
    }

    /// Runs one check as an exec in the container.
    pub(super) async fn exec(
        &self,
        id: &str,
        check: &CheckCommand,
        environment: &[String],
        cap: usize,
        interrupt: &CancellationToken,
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
            collected = collect(output, cap) => Some(collected),
            () = tokio::time::sleep(check.timeout) => None,
            () = interrupt.cancelled() => return Err(SandboxError::Interrupted),
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

/// The round of a kept session that was answered in container `id`.
struct RoundInContainer<'a> {
    id: &'a str,
    launch: &'a Launch,
    environment: &'a [String],
    /// When the round was started.
    started: Instant,
}

/// A container's or exec's output streams, stdout and stderr, the tail of each kept.
async fn collect(
    stream: impl Stream<Item = Result<LogOutput, bollard::errors::Error>>,
    cap: usize,
) -> (String, String) {
    let mut stdout = Tail::new(cap);
    let mut stderr = Tail::new(cap);
    tokio::pin!(stream);
    while let Some(Ok(chunk)) = stream.next().await {
        match chunk {
            LogOutput::StdOut { message } | LogOutput::Console { message } => stdout.push(&message),
            LogOutput::StdErr { message } => stderr.push(&message),
            LogOutput::StdIn { .. } => continue,
        }
    }
    (stdout.finish("stdout").0, stderr.finish("stderr").0)
}

/// Reads the shim's one-line report.
pub(super) fn parse_report(line: &str, command: &[String]) -> Result<HarnessExit, SandboxError> {
    let line = line.trim();
    let (kind, rest) = line.split_once(' ').unwrap_or((line, ""));
    match kind {
        "exit" => Ok(HarnessExit {
            code: rest.parse().ok(),
            timed_out: false,
            signal: None,
        }),
        "signal" => Ok(HarnessExit {
            code: None,
            timed_out: false,
            signal: rest.parse().ok(),
        }),
        "timeout" => Ok(HarnessExit {
            code: None,
            timed_out: true,
            signal: None,
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
