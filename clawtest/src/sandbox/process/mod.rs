//! The process backend: the harness runs as a local command in a fresh scratch folder
//! (`clawtest/` with the prompt and tools, `workspace/` as its working directory), with a
//! cleared environment (only the sandbox contract's variables, PATH, and the names listed in
//! `harness.env`), in its own process group, with a death signal (`PR_SET_PDEATHSIG`: it is
//! killed if clawtest dies), held by the trial's [`Containment`] (a cgroup of its own, else a
//! mark in the environment: see `contain`), started without a copy of clawtest (`spawn`). One deadline holds for it and its pipes: at the
//! time limit its group is killed; once it has ended its pipes get a short grace, then are
//! dropped, and every process still held (descendants that left the group with `setsid`) is
//! killed too. The launch's checks then run the same way, in the same workspace.
//!
//! It isolates nothing else: the harness runs as the user, sees the host's files and
//! network. It is for trusted agents; docker is the boundary (docs/reliability.md).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::capture::{self, Tail, read_tail};
use super::contain::{Containment, GroupPool, Mechanism};
use super::disk::{DiskFull, DiskWatch};
use super::session;
use super::spawn::{Child, Launcher, Spawn};
use super::{
    CheckCommand, CheckOutcome, Endpoints, Finished, Launch, Running, Sandbox, SandboxError,
};
use crate::trajectory::HarnessExit;

/// How long a child's pipes may stay open after it ended (descendants holding them) before
/// they are dropped.
pub(crate) const PIPE_GRACE: Duration = Duration::from_secs(2);

/// Runs harnesses as local processes.
#[derive(Debug, Default, Clone)]
pub(crate) struct ProcessSandbox {
    /// How a trial's processes are held (a cgroup where the machine allows; the tests of the
    /// fallback ask for the mark).
    containment: Mechanism,
    /// How its children are made (`clone3` where the machine allows; the tests of the
    /// fallback ask for a fork).
    launcher: Launcher,
    /// The trials' empty cgroups, kept for the next trials (removed with the backend).
    groups: Arc<GroupPool>,
}

impl ProcessSandbox {
    /// A process backend holding each trial's processes by `containment`, its children made
    /// by `launcher`.
    #[cfg(test)]
    pub(crate) fn holding_by(containment: Mechanism, launcher: Launcher) -> ProcessSandbox {
        ProcessSandbox {
            containment,
            launcher,
            groups: Arc::default(),
        }
    }
}

impl Sandbox for ProcessSandbox {
    fn name(&self) -> &'static str {
        "process"
    }

    fn run(&self, launch: Launch, interrupt: CancellationToken) -> Running<'_> {
        Box::pin(async move {
            let containment =
                Containment::drawing_on(self.containment, Some(Arc::clone(&self.groups)))
                    .made_by(self.launcher);
            let finished = run(launch, &containment, interrupt).await;
            // Whatever outcome: nothing of the trial outlives it.
            containment.release().await;
            finished
        })
    }
}

fn prepare_error(error: std::io::Error) -> SandboxError {
    SandboxError::Prepare {
        message: error.to_string(),
    }
}

async fn run(
    launch: Launch,
    containment: &Containment,
    interrupt: CancellationToken,
) -> Result<Finished, SandboxError> {
    let folder = launch.folder.clone();
    let control = folder.join("clawtest");
    let workspace = folder.join("workspace");
    let home = folder.join("home");
    for path in [&control, &workspace, &home] {
        std::fs::create_dir_all(path).map_err(prepare_error)?;
    }
    super::lay_out(&launch, &control, &workspace)?;

    let Endpoints::Loopback {
        services_url,
        gateway_url,
    } = &launch.endpoints
    else {
        return Err(SandboxError::Prepare {
            message: "the process backend serves the trial on loopback ports, not sockets".into(),
        });
    };
    super::write_harness_files(
        &launch,
        &crate::config::TemplateValues {
            services_url,
            gateway_url,
            model: launch.setup.model.as_deref().unwrap_or_default(),
            workspace: &workspace.to_string_lossy(),
            home: &home.to_string_lossy(),
        },
        &workspace,
        &home,
    )?;
    let program = launch.command[0].clone();
    let mut command = harness_command(
        &launch,
        &Folders {
            trial: &folder,
            control: &control,
            workspace: &workspace,
            home: &home,
        },
        services_url,
        gateway_url,
    );
    // Checks see what the harness saw: same folder, same environment.
    let environment = command.environment().to_vec();
    command.cap_file_size(launch.limits.workspace_disk_bytes);

    // Made before the harness starts, which may answer at once.
    let rounds = super::session_rounds(&launch)?;
    let mut disk_watch = DiskWatch::start(folder.clone(), launch.limits.workspace_disk_bytes);
    let started = Instant::now();
    let child = containment
        .start(&mut command)
        .map_err(|error| match error.kind() {
            std::io::ErrorKind::NotFound => SandboxError::CommandNotFound {
                program: program.clone(),
            },
            _ => SandboxError::CannotStart {
                program: program.clone(),
                message: error.to_string(),
            },
        })?;
    let cap = launch.limits.output_bytes;
    let mut session = rounds.map(|rounds| SessionRounds {
        rounds,
        launch: &launch,
        workspace: &workspace,
        environment: &environment,
        containment,
        started,
        ended: false,
    });
    let Supervised {
        status,
        timed_out,
        stdout,
        stderr,
    } = supervise(
        child,
        launch.timeout,
        cap,
        &interrupt,
        Some(&mut disk_watch),
        session.as_mut(),
    )
    .await?;
    let ended_session = session.is_some_and(|session| session.ended);
    containment.kill();
    let duration = started.elapsed();
    let mut limits_reached = Vec::new();
    let (stdout, stdout_note) = stdout.finish("stdout");
    let (stderr, stderr_note) = stderr.finish("stderr");
    limits_reached.extend(stdout_note.into_iter().chain(stderr_note));
    let exit = exit_of(status, timed_out);
    let disk_full = disk_watch.finish(exit.signal);
    limits_reached.extend(disk_full.as_ref().map(DiskFull::note));
    let output_file = capture::read_output_file(
        &workspace,
        launch.limits.output_file_bytes,
        &mut limits_reached,
    );
    let mut checks = Vec::with_capacity(launch.checks.len());
    // A trial past its disk cap is an error: its checks would grade nothing. A session's
    // rounds were checked as they were answered.
    let to_check = if disk_full.is_some() || ended_session {
        &[][..]
    } else {
        &launch.checks[..]
    };
    for check in to_check {
        checks.push(
            run_check(
                check,
                &workspace,
                &environment,
                cap,
                &interrupt,
                containment,
            )
            .await?,
        );
        containment.kill();
    }
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

/// A kept session's rounds on this backend: what handing one over takes (the answer, the
/// checks in the workspace with the harness's environment, the workspace's files).
struct SessionRounds<'a> {
    rounds: session::Rounds,
    launch: &'a Launch,
    workspace: &'a Path,
    environment: &'a [(std::ffi::OsString, std::ffi::OsString)],
    containment: &'a Containment,
    /// When the round being answered was started.
    started: Instant,
    /// The trial sent the end: the checks and the workspace were handed over already.
    ended: bool,
}

impl SessionRounds<'_> {
    /// The answered round collected and handed over; the next round's time limit, or `None`
    /// at the end. The harness is left running: the checks' own processes are killed at their
    /// limits, and whatever they left goes with the trial's end.
    async fn answered(
        &mut self,
        interrupt: &CancellationToken,
    ) -> Result<Option<Duration>, SandboxError> {
        let limits = &self.launch.limits;
        let mut notes = Vec::new();
        let answer = self.rounds.answer(limits.output_file_bytes, &mut notes);
        let duration = self.started.elapsed();
        let mut checks = Vec::with_capacity(self.launch.checks.len());
        for check in &self.launch.checks {
            // Boxed: a check is supervised like the harness, whose supervision is here.
            let outcome = Box::pin(run_check(
                check,
                self.workspace,
                self.environment,
                limits.output_bytes,
                interrupt,
                self.containment,
            ));
            checks.push(outcome.await?);
        }
        let workspace =
            capture::snapshot(self.workspace, limits, &mut notes).map_err(prepare_error)?;
        let answered = session::Answered {
            answer,
            workspace,
            duration,
            checks,
            notes,
        };
        let next = self.rounds.hand_over(answered, interrupt).await?;
        self.started = Instant::now();
        self.ended = next.is_none();
        Ok(next)
    }
}

/// The folders of one trial on the host.
struct Folders<'a> {
    trial: &'a Path,
    control: &'a Path,
    workspace: &'a Path,
    home: &'a Path,
}

/// The harness's command: its program and arguments, in the workspace, with an environment
/// holding only the sandbox contract's variables (docs/sandbox.md) and the names
/// `[harness] env` passes through.
fn harness_command(
    launch: &Launch,
    folders: &Folders<'_>,
    services_url: &str,
    gateway_url: &str,
) -> Spawn {
    let mut command = Spawn::new(&launch.command[0], &launch.command[1..], folders.workspace);
    command
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", folders.home)
        .env("TMPDIR", folders.trial)
        .env("LANG", "C.UTF-8")
        .env("CLAWTEST_SERVICES_URL", services_url)
        .env("OPENAI_BASE_URL", format!("{gateway_url}/v1"))
        .env("ANTHROPIC_BASE_URL", gateway_url)
        // The real key stays with the gateway; harnesses that insist on a key get a dummy.
        .env("OPENAI_API_KEY", "clawtest-dummy-key")
        .env("ANTHROPIC_API_KEY", "clawtest-dummy-key")
        .env("CLAWTEST_PROMPT", &launch.prompt)
        .env("CLAWTEST_PROMPT_FILE", folders.control.join("prompt.md"))
        .env("CLAWTEST_TOOLS_FILE", folders.control.join("tools.json"))
        .env(
            "EVAL_TOOLS_FILE",
            folders.control.join(super::EVAL_TOOLS_FILE),
        )
        .env("CLAWTEST_WORKSPACE", folders.workspace)
        .env("CLAWTEST_DIR", folders.control)
        .env("CLAWTEST_TASK_ID", &launch.task_id)
        .env("CLAWTEST_TRIAL", launch.trial.to_string())
        .env(
            "CLAWTEST_CONVERSATION_FILE",
            folders.control.join(super::CONVERSATION_FILE),
        )
        .env("AGENT_MAX_TURNS", launch.max_turns.to_string())
        .envs(super::shared_environment(launch))
        .envs(launch.passthrough.iter().map(|(name, value)| (name, value)));
    if super::keeps_session(launch) {
        command.env(
            "CLAWTEST_SESSION_DIR",
            folders.trial.join(session::SESSION_FOLDER),
        );
    }
    command
}

/// How a child ended, as a trajectory records it.
fn exit_of(status: Option<std::process::ExitStatus>, timed_out: bool) -> HarnessExit {
    use std::os::unix::process::ExitStatusExt;
    HarnessExit {
        code: if timed_out {
            None
        } else {
            status.and_then(|status| status.code())
        },
        timed_out,
        signal: if timed_out {
            None
        } else {
            status.and_then(|status| status.signal())
        },
    }
}

/// Runs one check in `workspace` with the harness's environment, killed at its time limit,
/// held by `containment` (the caller kills what it left).
pub(crate) async fn run_check(
    check: &CheckCommand,
    workspace: &Path,
    environment: &[(std::ffi::OsString, std::ffi::OsString)],
    cap: usize,
    interrupt: &CancellationToken,
    containment: &Containment,
) -> Result<CheckOutcome, SandboxError> {
    let Some((program, arguments)) = check.command.split_first() else {
        return Ok(CheckOutcome {
            exit_code: None,
            timed_out: false,
            stdout: String::new(),
            stderr: "empty check command".into(),
        });
    };
    // Task files write `/workspace/...` (the container path); here the workspace is a
    // temporary folder, so the same command must name that folder instead.
    let here = workspace.display().to_string();
    let arguments: Vec<String> = arguments
        .iter()
        .map(|argument| argument.replace("/workspace", &here))
        .collect();
    let mut command = Spawn::new(program, arguments, workspace);
    command.envs(environment.iter().map(|(name, value)| (name, value)));
    let child = match containment.start(&mut command) {
        Ok(child) => child,
        Err(error) => {
            return Ok(CheckOutcome {
                exit_code: None,
                timed_out: false,
                stdout: String::new(),
                stderr: format!("cannot start `{program}`: {error}"),
            });
        }
    };
    let Supervised {
        status,
        timed_out,
        stdout,
        stderr,
    } = supervise(child, check.timeout, cap, interrupt, None, None).await?;
    Ok(CheckOutcome {
        exit_code: exit_of(status, timed_out).code,
        timed_out,
        stdout: stdout.finish("check stdout").0,
        stderr: stderr.finish("check stderr").0,
    })
}

/// How a supervised child ended, with its output.
struct Supervised {
    status: Option<std::process::ExitStatus>,
    timed_out: bool,
    stdout: Tail,
    stderr: Tail,
}

/// What ended one wait of [`supervise`].
enum Waited {
    /// The child ended by itself.
    Ended(Option<std::process::ExitStatus>),
    /// Its time limit or its disk cap: it is killed.
    Killed,
    /// A kept session's harness answered its round.
    Answered,
}

/// Waits for a child (the harness, or a check command) until it exits, its time limit (its
/// process group is killed), its trial folder's disk cap when `disk` watches it (killed too)
/// or an interrupt (killed too, and the run is interrupted), and collects its output: to the
/// pipes' end, or for [`PIPE_GRACE`] after the child ended if something else still holds them
/// (then they are dropped). A kept `session`'s harness runs round after round: each answer
/// is handed over and the next round gets its own time limit, until the end is sent (then it
/// is killed).
async fn supervise(
    mut child: Child,
    timeout: Duration,
    cap: usize,
    interrupt: &CancellationToken,
    disk: Option<&mut DiskWatch>,
    mut session: Option<&mut SessionRounds<'_>>,
) -> Result<Supervised, SandboxError> {
    let group = Some(child.id());
    let (stop_stdout, stdout_stopped) = oneshot::channel::<()>();
    let (stop_stderr, stderr_stopped) = oneshot::channel::<()>();
    let until = |stopped: oneshot::Receiver<()>| async move {
        let _ = stopped.await;
    };
    let mut stdout = tokio::spawn(read_tail(child.stdout.take(), cap, until(stdout_stopped)));
    let mut stderr = tokio::spawn(read_tail(child.stderr.take(), cap, until(stderr_stopped)));
    let mut timed_out = false;
    let mut deadline = tokio::time::Instant::now() + timeout;
    let mut disk = disk;
    let status = loop {
        let disk_passed = async {
            match disk.as_deref_mut() {
                Some(watch) => watch.passed().await,
                None => std::future::pending().await,
            }
        };
        let answered = async {
            match session.as_deref() {
                Some(session) => session.rounds.answered().await,
                None => std::future::pending().await,
            }
        };
        let waited = tokio::select! {
            status = child.wait() => Waited::Ended(status.ok()),
            () = disk_passed => Waited::Killed,
            () = tokio::time::sleep_until(deadline) => {
                timed_out = true;
                Waited::Killed
            }
            () = interrupt.cancelled() => {
                kill_group(group);
                let _ = child.wait().await;
                return Err(SandboxError::Interrupted);
            }
            () = answered => Waited::Answered,
        };
        match waited {
            Waited::Ended(status) => break status,
            // The watch keeps what it found; the caller reads it with the exit.
            Waited::Killed => {
                kill_group(group);
                break child.wait().await.ok();
            }
            Waited::Answered => {
                let Some(session) = session.as_deref_mut() else {
                    continue;
                };
                match session.answered(interrupt).await? {
                    Some(limit) => deadline = tokio::time::Instant::now() + limit,
                    // No round follows: the session ends here.
                    None => {
                        kill_group(group);
                        break child.wait().await.ok();
                    }
                }
            }
        }
    };
    // Children left in its group would hold the pipes open; end them too.
    kill_group(group);
    let grace = tokio::time::sleep(PIPE_GRACE);
    tokio::pin!(grace);
    let (mut stdout_tail, mut stderr_tail) = (None, None);
    while stdout_tail.is_none() || stderr_tail.is_none() {
        tokio::select! {
            read = &mut stdout, if stdout_tail.is_none() => stdout_tail = Some(read.unwrap_or_default()),
            read = &mut stderr, if stderr_tail.is_none() => stderr_tail = Some(read.unwrap_or_default()),
            () = &mut grace => break,
        }
    }
    // Past the grace: the readers stop and hand over what they have.
    let _ = stop_stdout.send(());
    let _ = stop_stderr.send(());
    let stdout = match stdout_tail {
        Some(tail) => tail,
        None => stdout.await.unwrap_or_default(),
    };
    let stderr = match stderr_tail {
        Some(tail) => tail,
        None => stderr.await.unwrap_or_default(),
    };
    Ok(Supervised {
        status,
        timed_out,
        stdout,
        stderr,
    })
}

/// Kills a process group (a child started with `process_group(0)`, by its id).
pub(crate) fn kill_group(group: Option<u32>) {
    let group = group
        .and_then(|id| i32::try_from(id).ok())
        .and_then(rustix::process::Pid::from_raw);
    if let Some(group) = group {
        // A stale group id fails with ESRCH, which is fine.
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }
}

#[cfg(test)]
mod tests;
