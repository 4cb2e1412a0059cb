//! The oracle: a correct solution of a task, played instead of an agent, to prove the task
//! can be passed and that it tells a solution from doing nothing (DESIGN §8). A [`Plan`] is
//! the author's `oracle:` where written and otherwise derived from the checks (`derive.rs`);
//! `feasibility.rs` plays it against a fresh World with the real grader and says, at the
//! line of the component concerned, why a task cannot be passed; `agent.rs` and
//! `sandbox.rs` play it as the harness of a real run (`cargo clawtest run --oracle`).

pub mod agent;
mod commands;
mod derive;
pub mod feasibility;
mod grounding;
mod sample;
pub mod sandbox;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::task::{OracleFile, Task};
use crate::trajectory::{AuditEntry, RobustnessRule, Trajectory, WorkspaceFile};

pub use derive::plan;
pub use feasibility::{Feasibility, Infeasible, check};

/// What the oracle does in a trial: its calls in order, its final answer, its files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The tool calls, in order.
    pub calls: Vec<PlannedCall>,
    /// The final answer.
    pub answer: String,
    /// Files left in the workspace, by workspace-relative path.
    pub files: Vec<PlannedFile>,
    /// The task's author wrote the answer, so it is taken to meet the rubrics of the task's
    /// `llm_judge` components (a derived answer is not: nothing derives prose for a rubric).
    pub answer_written: bool,
}

/// One call of a [`Plan`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedCall {
    /// The task's tool (or, for a derived call, the action) called.
    pub tool: String,
    /// The service that serves it.
    pub service: String,
    /// The route's path.
    pub endpoint: String,
    /// The HTTP method.
    pub method: crate::method::Method,
    /// The request body.
    pub arguments: Map<String, Value>,
    /// Why the call is made, for messages about it.
    pub cause: Cause,
}

/// Why a [`PlannedCall`] is in the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// The author wrote it in `oracle.calls`, at this line.
    Written(Option<u64>),
    /// Derived for the scoring component with this index.
    Component(usize),
}

/// A file the oracle leaves in the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedFile {
    /// Relative to the workspace.
    pub path: String,
    /// Its text.
    pub content: String,
}

impl From<&OracleFile> for PlannedFile {
    fn from(file: &OracleFile) -> Self {
        PlannedFile {
            path: file.path.clone(),
            content: file.content.clone(),
        }
    }
}

impl PlannedCall {
    /// The request body as sent.
    pub fn body(&self) -> Vec<u8> {
        serde_json::to_vec(&self.arguments).unwrap_or_default()
    }
}

/// Why an answer to one of the oracle's calls is a failure: a status outside 2xx, or a JSON
/// object with an `error` (ClawEnvKit's services answer "not found" with 200 and an error).
pub fn failure(status: u16, answer: &Value) -> Option<String> {
    let error = answer.get("error").filter(|error| !error.is_null());
    match (status, error) {
        (200..=299, None) => None,
        (200..=299, Some(error)) => Some(match error {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        }),
        (status, _) => Some(format!("HTTP {status}: {answer}")),
    }
}

/// The trajectory of a trial in which the oracle (or a variation of it: nothing, or one
/// forbidden step more) did what `audit` holds and answered `answer`, leaving `files`.
pub(crate) fn trajectory(
    task: &Task,
    audit: Vec<AuditEntry>,
    answer: &str,
    files: &[PlannedFile],
) -> Trajectory {
    // The workspace holds the task's files (copied in before any agent starts), then what
    // the agent wrote over or beside them.
    let mut workspace: BTreeMap<String, WorkspaceFile> = task
        .files
        .iter()
        .filter_map(|file| {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut file.open_source().ok()?, &mut bytes).ok()?;
            Some((
                file.target.to_string_lossy().into_owned(),
                workspace_file(&bytes),
            ))
        })
        .collect();
    workspace.extend(
        files
            .iter()
            .map(|file| (file.path.clone(), workspace_file(file.content.as_bytes()))),
    );
    // No fault is injected into the oracle's World: its robustness is full.
    Trajectory::without_harness(
        &task.id,
        audit,
        answer.to_owned(),
        workspace,
        RobustnessRule::InjectedFaults,
    )
}

fn workspace_file(bytes: &[u8]) -> WorkspaceFile {
    use sha2::{Digest, Sha256};
    WorkspaceFile {
        size: bytes.len() as u64,
        sha256: Sha256::digest(bytes)
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect(),
    }
}
