//! The oracle as a harness process (`cargo clawtest oracle-agent`, started by
//! [`super::sandbox::OracleSandbox`]): it reads its [`Plan`] from the file
//! `CLAWTEST_ORACLE_PLAN` names, makes the plan's calls over HTTP against
//! `CLAWTEST_SERVICES_URL` (so they are served and audited as an agent's are), writes the
//! plan's files and `agent_output.txt` into the workspace, and exits 0; a call that cannot
//! be made at all is exit 1 with the reason on stderr. It runs under the sandbox's limits
//! like any harness.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::Plan;

/// Why the oracle agent could not do its plan.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// A variable of the sandbox contract is not set.
    #[error(
        "{0} is not set: the oracle agent runs as the harness of `cargo clawtest run --oracle`"
    )]
    Missing(&'static str),
    /// The plan file cannot be read.
    #[error("cannot read the oracle's plan {}: {message}", path.display())]
    Plan {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// A call could not be sent or its answer read.
    #[error(transparent)]
    Http(#[from] crate::rust_harness::HttpError),
    /// A file could not be written in the workspace.
    #[error("cannot write {} in the workspace: {message}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
}

/// Plays the plan of the sandbox's environment; the process's exit code.
pub fn run_from_env() -> Result<(), AgentError> {
    let variable = |name: &'static str| std::env::var(name).map_err(|_| AgentError::Missing(name));
    let plan_file = PathBuf::from(variable("CLAWTEST_ORACLE_PLAN")?);
    let services_url = variable("CLAWTEST_SERVICES_URL")?;
    let workspace = PathBuf::from(variable("CLAWTEST_WORKSPACE")?);
    let text = std::fs::read_to_string(&plan_file).map_err(|error| AgentError::Plan {
        path: plan_file.clone(),
        message: error.to_string(),
    })?;
    let plan: Plan = serde_json::from_str(&text).map_err(|error| AgentError::Plan {
        path: plan_file,
        message: error.to_string(),
    })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| AgentError::Plan {
            path: PathBuf::from("(runtime)"),
            message: error.to_string(),
        })?;
    runtime.block_on(play(&plan, &services_url))?;
    for file in &plan.files {
        write(&workspace, Path::new(&file.path), &file.content)?;
    }
    write(
        &workspace,
        Path::new(crate::sandbox::OUTPUT_FILE),
        &plan.answer,
    )
}

/// How often the oracle makes a call that was answered with an injected fault (a 429 or a
/// 5xx), as a careful agent retries: the task's `error_injection` then shows as recoveries.
const ATTEMPTS: usize = 4;

async fn play(plan: &Plan, services_url: &str) -> Result<(), AgentError> {
    let base = services_url.trim_end_matches('/');
    for call in &plan.calls {
        let url = format!("{base}{}", call.endpoint);
        let body = Value::Object(call.arguments.clone());
        // The answer is the service's to judge and the audit's to keep; the oracle reads
        // only its status, to retry a fault.
        for _ in 0..ATTEMPTS {
            let answer = crate::rust_harness::send(call.method, &url, &body).await?;
            if answer.status != 429 && answer.status < 500 {
                break;
            }
        }
    }
    Ok(())
}

fn write(workspace: &Path, relative: &Path, content: &str) -> Result<(), AgentError> {
    let failed = |error: std::io::Error| AgentError::Write {
        path: relative.to_path_buf(),
        message: error.to_string(),
    };
    // Plans name clean workspace paths; a plan file edited by hand must not write elsewhere.
    let inside = relative
        .to_str()
        .and_then(crate::task::check::workspace_relative)
        .ok_or_else(|| failed(std::io::Error::other("the path leaves the workspace")))?;
    let path = workspace.join(inside);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(failed)?;
    }
    std::fs::write(&path, content).map_err(failed)
}
