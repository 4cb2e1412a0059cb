//! The in-process backend: a [`Sandbox`] that calls a [`RustHarness`] on the current tokio
//! runtime with an [`Env`] built from the [`Launch`]. `Ok(answer)` is the output (exit code 0);
//! `Err(message)` is a failed harness (exit code 1, the message as stderr). The task's time
//! limit and the run's interrupt cancel the future. There is no workspace: an in-process agent
//! works through its tools only.

use std::collections::BTreeMap;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::{Env, RustHarness};
use crate::sandbox::{Finished, Launch, Running, Sandbox, SandboxError};
use crate::trajectory::HarnessExit;

/// Runs a Rust agent inside the test process.
#[derive(Debug, Clone)]
pub(crate) struct InProcessSandbox {
    harness: RustHarness,
}

impl InProcessSandbox {
    /// A backend that runs `harness` for every trial.
    pub(crate) fn new(harness: RustHarness) -> InProcessSandbox {
        InProcessSandbox { harness }
    }
}

impl Sandbox for InProcessSandbox {
    fn name(&self) -> &'static str {
        "in-process"
    }

    fn run(&self, launch: Launch, interrupt: CancellationToken) -> Running<'_> {
        Box::pin(run(self.harness.clone(), launch, interrupt))
    }
}

async fn run(
    harness: RustHarness,
    launch: Launch,
    interrupt: CancellationToken,
) -> Result<Finished, SandboxError> {
    if !launch.files.is_empty() {
        return Err(SandboxError::Prepare {
            message: format!(
                "task `{}` copies files into a workspace, which an in-process Rust harness does not have; run it with a process harness",
                launch.task_id
            ),
        });
    }
    let crate::sandbox::Endpoints::Loopback {
        services_url,
        gateway_url,
    } = &launch.endpoints
    else {
        return Err(SandboxError::Prepare {
            message:
                "an in-process Rust harness reaches its services over loopback TCP, not sockets"
                    .into(),
        });
    };
    let env = Env::new(
        launch.task_id.clone(),
        launch.trial,
        launch.prompt.clone(),
        &launch.tools,
        services_url.clone(),
        gateway_url.clone(),
        launch.max_turns,
    )
    .map_err(|message| SandboxError::Prepare { message })?;
    let started = Instant::now();
    // Spawned so that a panicking agent is a failed trial, not a crashed test binary.
    let mut running = tokio::spawn(harness.call(env));
    let (result, timed_out) = tokio::select! {
        joined = &mut running => (Some(joined), false),
        () = tokio::time::sleep(launch.timeout) => {
            running.abort();
            (None, true)
        }
        () = interrupt.cancelled() => {
            running.abort();
            return Err(SandboxError::Interrupted);
        }
    };
    let (code, stdout, stderr) = match result {
        Some(Ok(Ok(answer))) => (Some(0), answer, String::new()),
        Some(Ok(Err(message))) => (Some(1), String::new(), message),
        Some(Err(joined)) => (
            Some(101),
            String::new(),
            format!("the harness `{}` panicked: {joined}", harness.name()),
        ),
        None => (None, String::new(), String::new()),
    };
    Ok(Finished {
        exit: HarnessExit {
            code,
            timed_out,
            signal: None,
        },
        stdout,
        stderr,
        output_file: None,
        workspace: BTreeMap::new(),
        duration: started.elapsed(),
        // There is no environment to run a command in: each check says so (and grades 0).
        checks: launch
            .checks
            .iter()
            .map(|_| crate::sandbox::CheckOutcome {
                exit_code: None,
                timed_out: false,
                stdout: String::new(),
                stderr: "an in-process Rust harness has no environment to run check commands in"
                    .into(),
            })
            .collect(),
        limits_reached: Vec::new(),
        disk_full: None,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn launch(timeout: Duration) -> Launch {
        Launch {
            task_id: "t".into(),
            trial: 1,
            command: vec!["agent".into()],
            prompt: "say hello".into(),
            tools: "[]".into(),
            eval_tools: String::new(),
            files: Vec::new(),
            // Never written to: an in-process harness has no folder.
            folder: std::env::temp_dir(),
            endpoints: crate::sandbox::Endpoints::Loopback {
                services_url: "http://127.0.0.1:1".into(),
                gateway_url: "http://127.0.0.1:2".into(),
            },
            checks: Vec::new(),
            skill: String::new(),
            mcp_config: String::new(),
            setup: Default::default(),
            passthrough: Vec::new(),
            timeout,
            max_turns: 4,
            limits: crate::config::LimitsConfig::default(),
        }
    }

    async fn finish(harness: RustHarness, timeout: Duration) -> Finished {
        let interrupt = CancellationToken::new();
        InProcessSandbox::new(harness)
            .run(launch(timeout), interrupt)
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn an_answer_is_the_output_of_a_clean_exit() {
        let harness = RustHarness::new("echo", |env: Env| async move {
            Ok::<_, String>(format!(
                "{} (trial {}, {} turns)",
                env.prompt(),
                env.trial(),
                env.max_turns()
            ))
        });
        let finished = finish(harness, Duration::from_secs(10)).await;
        assert_eq!(
            finished.exit,
            HarnessExit {
                code: Some(0),
                timed_out: false,
                signal: None
            }
        );
        assert_eq!(finished.stdout, "say hello (trial 1, 4 turns)");
        assert_eq!(finished.stderr, "");
    }

    #[tokio::test]
    async fn an_error_is_a_failed_exit_with_its_text_as_stderr() {
        let harness = RustHarness::new("refuses", |_env: Env| async {
            Err::<String, _>("no model")
        });
        let finished = finish(harness, Duration::from_secs(10)).await;
        assert_eq!(finished.exit.code, Some(1));
        assert_eq!(finished.stderr, "no model");
    }

    #[tokio::test]
    async fn a_panic_is_a_failed_trial_not_a_crash() {
        let harness = RustHarness::new("panics", |_env: Env| async {
            if true {
                panic!("agent bug");
            }
            Ok::<String, String>(String::new())
        });
        let finished = finish(harness, Duration::from_secs(10)).await;
        assert_eq!(finished.exit.code, Some(101));
        assert!(
            finished.stderr.contains("`panics` panicked"),
            "{}",
            finished.stderr
        );
    }

    #[tokio::test]
    async fn the_time_limit_cancels_the_agent() {
        let harness = RustHarness::new("sleeps", |_env: Env| async {
            std::future::pending::<()>().await;
            Ok::<String, String>(String::new())
        });
        // The agent never finishes, so the outcome does not depend on how long the limit is.
        let finished = finish(harness, Duration::from_millis(20)).await;
        assert_eq!(
            finished.exit,
            HarnessExit {
                code: None,
                timed_out: true,
                signal: None
            }
        );
    }

    #[tokio::test]
    async fn an_interrupt_stops_the_agent() {
        let harness = RustHarness::new("sleeps", |_env: Env| async {
            std::future::pending::<()>().await;
            Ok::<String, String>(String::new())
        });
        let interrupt = CancellationToken::new();
        let stop = interrupt.clone();
        let sandbox = InProcessSandbox::new(harness);
        let running = sandbox.run(launch(Duration::from_secs(3600)), interrupt);
        stop.cancel();
        assert_eq!(running.await.unwrap_err(), SandboxError::Interrupted);
    }
}
