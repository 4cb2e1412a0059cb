//! The in-process backend: a [`Sandbox`] that calls a [`RustHarness`] on the current tokio
//! runtime with an [`Env`] built from the [`Launch`]. `Ok(answer)` is the output (exit code 0);
//! `Err(message)` is a failed harness (exit code 1, the message as stderr). The task's time
//! limit and the run's interrupt cancel the future. There is no workspace: an in-process agent
//! works through its tools only.

use std::collections::BTreeMap;
use std::time::Instant;

use tokio::sync::watch;

use super::{Env, RustHarness};
use crate::sandbox::{Finished, Launch, Running, Sandbox, SandboxError};
use crate::trajectory::HarnessExit;

/// Runs a Rust agent inside the test process.
#[derive(Debug, Clone)]
pub struct InProcessSandbox {
    harness: RustHarness,
}

impl InProcessSandbox {
    pub fn new(harness: RustHarness) -> InProcessSandbox {
        InProcessSandbox { harness }
    }
}

impl Sandbox for InProcessSandbox {
    fn name(&self) -> &'static str {
        "in-process"
    }

    fn run(&self, launch: Launch, interrupt: watch::Receiver<bool>) -> Running<'_> {
        Box::pin(run(self.harness.clone(), launch, interrupt))
    }
}

async fn run(
    harness: RustHarness,
    launch: Launch,
    mut interrupt: watch::Receiver<bool>,
) -> Result<Finished, SandboxError> {
    if !launch.files.is_empty() {
        return Err(SandboxError::Prepare {
            message: format!(
                "task `{}` copies files into a workspace, which an in-process Rust harness does not have; run it with a process harness",
                launch.task_id
            ),
        });
    }
    let env = Env::new(
        launch.task_id.clone(),
        launch.trial,
        launch.prompt.clone(),
        &launch.tools,
        launch.services_url.clone(),
        launch.gateway_url.clone(),
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
        () = crate::sandbox::process::interrupted(&mut interrupt) => {
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
        exit: HarnessExit { code, timed_out },
        stdout,
        stderr,
        output_file: None,
        workspace: BTreeMap::new(),
        duration: started.elapsed(),
    })
}
