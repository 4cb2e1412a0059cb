//! The process backend: the harness runs as a local command in a fresh temporary folder
//! (`clawtest/` with the prompt and tools, `workspace/` as its working directory), with a
//! cleared environment (only the sandbox contract's variables, PATH, and the names listed in
//! `harness.env`), in its own process group so that the whole group is killed at the limit.
//! The launch's checks then run the same way, in the same workspace.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Instant;

use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio::sync::watch;

use super::{
    CheckCommand, CheckOutcome, Endpoints, Finished, Launch, OUTPUT_FILE, Running, Sandbox,
    SandboxError,
};
use crate::trajectory::{HarnessExit, WorkspaceFile};

/// Output beyond this many bytes per stream is dropped (the end is what matters less).
pub(crate) const OUTPUT_LIMIT: usize = 4 << 20;

/// Runs harnesses as local processes.
#[derive(Debug, Default, Clone)]
pub(crate) struct ProcessSandbox;

impl Sandbox for ProcessSandbox {
    fn name(&self) -> &'static str {
        "process"
    }

    fn run(&self, launch: Launch, interrupt: watch::Receiver<bool>) -> Running<'_> {
        Box::pin(run(launch, interrupt))
    }
}

fn prepare_error(error: std::io::Error) -> SandboxError {
    SandboxError::Prepare {
        message: error.to_string(),
    }
}

async fn run(
    launch: Launch,
    mut interrupt: watch::Receiver<bool>,
) -> Result<Finished, SandboxError> {
    let folder = tempfile::Builder::new()
        .prefix(super::TRIAL_FOLDER_PREFIX)
        .tempdir()
        .map_err(prepare_error)?;
    let control = folder.path().join("clawtest");
    let workspace = folder.path().join("workspace");
    let home = folder.path().join("home");
    for path in [&control, &workspace, &home] {
        std::fs::create_dir_all(path).map_err(prepare_error)?;
    }
    let prompt_file = control.join("prompt.md");
    let tools_file = control.join("tools.json");
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
        Some(&home),
    )?;
    let program = launch.command[0].clone();
    let mut command = Command::new(&program);
    command
        .args(&launch.command[1..])
        .current_dir(&workspace)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("TMPDIR", folder.path())
        .env("LANG", "C.UTF-8")
        .env("CLAWTEST_SERVICES_URL", services_url)
        .env("OPENAI_BASE_URL", format!("{gateway_url}/v1"))
        .env("ANTHROPIC_BASE_URL", gateway_url)
        // The real key stays with the gateway; harnesses that insist on a key get a dummy.
        .env("OPENAI_API_KEY", "clawtest-dummy-key")
        .env("ANTHROPIC_API_KEY", "clawtest-dummy-key")
        .env("CLAWTEST_PROMPT", &launch.prompt)
        .env("CLAWTEST_PROMPT_FILE", &prompt_file)
        .env("CLAWTEST_TOOLS_FILE", &tools_file)
        .env("EVAL_TOOLS_FILE", &tools_file)
        .env("CLAWTEST_WORKSPACE", &workspace)
        .env("CLAWTEST_DIR", &control)
        .env("CLAWTEST_TASK_ID", &launch.task_id)
        .env("CLAWTEST_TRIAL", launch.trial.to_string())
        .env("AGENT_MAX_TURNS", launch.max_turns.to_string())
        .envs(super::shared_environment(&launch))
        .envs(launch.passthrough.iter().map(|(name, value)| (name, value)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    // Checks see what the harness saw: same folder, same environment.
    let environment: Vec<(std::ffi::OsString, std::ffi::OsString)> = command
        .as_std()
        .get_envs()
        .filter_map(|(name, value)| Some((name.to_os_string(), value?.to_os_string())))
        .collect();

    let started = Instant::now();
    let child = command.spawn().map_err(|error| match error.kind() {
        std::io::ErrorKind::NotFound => SandboxError::CommandNotFound {
            program: program.clone(),
        },
        _ => SandboxError::CannotStart {
            program: program.clone(),
            message: error.to_string(),
        },
    })?;
    let Supervised {
        status,
        timed_out,
        stdout,
        stderr,
    } = supervise(child, launch.timeout, &mut interrupt).await?;
    let duration = started.elapsed();
    let exit = HarnessExit {
        code: status.and_then(|status| status.code()),
        timed_out,
    };
    let output_file = std::fs::read_to_string(workspace.join(OUTPUT_FILE)).ok();
    let mut checks = Vec::with_capacity(launch.checks.len());
    for check in &launch.checks {
        checks.push(run_check(check, &workspace, &environment, &mut interrupt).await?);
    }
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

/// Runs one check in `workspace` with the harness's environment, killed at its time limit.
async fn run_check(
    check: &CheckCommand,
    workspace: &Path,
    environment: &[(std::ffi::OsString, std::ffi::OsString)],
    interrupt: &mut watch::Receiver<bool>,
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
    let spawned = Command::new(program)
        .args(&arguments)
        .current_dir(workspace)
        .env_clear()
        .envs(environment.iter().map(|(name, value)| (name, value)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn();
    let child = match spawned {
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
    } = supervise(child, check.timeout, interrupt).await?;
    Ok(CheckOutcome {
        exit_code: if timed_out {
            None
        } else {
            status.and_then(|status| status.code())
        },
        timed_out,
        stdout,
        stderr,
    })
}

/// How a supervised child ended, with its output.
struct Supervised {
    status: Option<std::process::ExitStatus>,
    timed_out: bool,
    stdout: String,
    stderr: String,
}

/// Waits for a child (the harness, or a check command) until it exits, its time limit (its
/// process group is killed) or an interrupt (killed too, and the run is interrupted), and
/// collects its output.
async fn supervise(
    mut child: tokio::process::Child,
    timeout: std::time::Duration,
    interrupt: &mut watch::Receiver<bool>,
) -> Result<Supervised, SandboxError> {
    let group = child.id();
    let stdout = tokio::spawn(read_limited(child.stdout.take()));
    let stderr = tokio::spawn(read_limited(child.stderr.take()));
    let mut timed_out = false;
    let status = tokio::select! {
        status = child.wait() => status.ok(),
        () = tokio::time::sleep(timeout) => {
            timed_out = true;
            kill_group(group);
            child.wait().await.ok()
        }
        () = interrupted(interrupt) => {
            kill_group(group);
            let _ = child.wait().await;
            return Err(SandboxError::Interrupted);
        }
    };
    // Children that outlive the process would hold the pipes open; end them too.
    kill_group(group);
    Ok(Supervised {
        status,
        timed_out,
        stdout: stdout.await.unwrap_or_default(),
        stderr: stderr.await.unwrap_or_default(),
    })
}

/// Completes when the run is interrupted; never, if nobody can interrupt it any more.
pub(crate) async fn interrupted(interrupt: &mut watch::Receiver<bool>) {
    if interrupt.wait_for(|stop| *stop).await.is_err() {
        std::future::pending::<()>().await;
    }
}

fn kill_group(group: Option<u32>) {
    if let Some(id) = group.and_then(|id| i32::try_from(id).ok()) {
        // SAFETY: killpg only sends a signal; a stale group id fails with ESRCH, which is fine.
        unsafe {
            libc::killpg(id, libc::SIGKILL);
        }
    }
}

pub(crate) async fn read_limited(stream: Option<impl AsyncRead + Unpin>) -> String {
    let Some(mut stream) = stream else {
        return String::new();
    };
    let mut kept = Vec::new();
    let mut buffer = [0u8; 8192];
    loop {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            // Keep reading past the limit so the harness never blocks on a full pipe.
            Ok(read) => {
                kept.extend_from_slice(&buffer[..read.min(OUTPUT_LIMIT.saturating_sub(kept.len()))])
            }
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}

/// Every regular file under `root`, by relative path, with its size and SHA-256 (what the
/// file checks read).
pub(crate) fn snapshot(root: &Path) -> std::io::Result<BTreeMap<String, WorkspaceFile>> {
    let mut files = BTreeMap::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            let path = entry.path();
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_file() {
                let bytes = std::fs::read(&path)?;
                let relative = path
                    .strip_prefix(root)
                    .unwrap_or(&path)
                    .to_string_lossy()
                    .into_owned();
                files.insert(
                    relative,
                    WorkspaceFile {
                        size: bytes.len() as u64,
                        sha256: hex(&Sha256::digest(&bytes)),
                    },
                );
            }
        }
    }
    Ok(files)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::sandbox::CheckCommand;

    fn words(text: &[&str]) -> Vec<String> {
        text.iter().map(|word| word.to_string()).collect()
    }

    #[tokio::test]
    async fn checks_run_after_the_harness_in_its_workspace() {
        let check = |command: &[&str], timeout| CheckCommand {
            command: words(command),
            timeout,
        };
        let launch = Launch {
            task_id: "checks".into(),
            trial: 0,
            command: words(&["sh", "-c", "printf forty-two > answer.txt"]),
            prompt: "p".into(),
            tools: "[]".into(),
            skill: String::new(),
            mcp_config: String::new(),
            setup: Default::default(),
            files: Vec::new(),
            endpoints: Endpoints::Loopback {
                services_url: "http://127.0.0.1:9".into(),
                gateway_url: "http://127.0.0.1:9".into(),
            },
            passthrough: Vec::new(),
            timeout: Duration::from_secs(30),
            max_turns: 1,
            checks: vec![
                check(&["sh", "-c", "exit 3"], Duration::from_secs(30)),
                check(
                    &["sh", "-c", "cat answer.txt; echo \" $CLAWTEST_TASK_ID\""],
                    Duration::from_secs(30),
                ),
                check(&["sleep", "30"], Duration::from_millis(200)),
                check(&["/no/such/program"], Duration::from_secs(30)),
            ],
        };
        let (_stop, interrupt) = watch::channel(false);
        let finished = ProcessSandbox.run(launch, interrupt).await.unwrap();
        assert_eq!(finished.exit.code, Some(0));
        assert_eq!(finished.checks.len(), 4);
        assert_eq!(finished.checks[0].exit_code, Some(3));
        assert_eq!(finished.checks[1].exit_code, Some(0));
        assert_eq!(finished.checks[1].stdout.trim(), "forty-two checks");
        assert!(finished.checks[2].timed_out);
        assert_eq!(finished.checks[2].exit_code, None);
        assert_eq!(finished.checks[3].exit_code, None);
        assert!(finished.checks[3].stderr.contains("/no/such/program"));
    }
}
