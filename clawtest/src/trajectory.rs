//! What happened in one trial, as the grader and the reports see it: the audit log, the model
//! calls, the final output, the workspace files, the harness's exit and timing. Produced by the
//! executor, consumed by [`crate::grade`] without any further I/O.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use crate::gateway::ModelCall;
use crate::world::AuditEntry;

/// One trial's record.
#[derive(Debug, Clone, Serialize)]
pub struct Trajectory {
    pub task_id: String,
    /// 0-based trial index.
    pub trial: u32,
    pub audit: Vec<AuditEntry>,
    pub model_calls: Vec<ModelCall>,
    /// The final answer: `agent_output.txt` in the workspace if the harness wrote it, else
    /// its stdout.
    pub output: String,
    pub output_source: OutputOrigin,
    /// The end of the harness's stderr, for failure messages.
    pub stderr_tail: String,
    /// Files in the workspace after the harness exited, by path relative to the workspace.
    pub workspace: BTreeMap<String, WorkspaceFile>,
    pub exit: HarnessExit,
    #[serde(with = "milliseconds")]
    pub duration: Duration,
}

/// Where the final answer was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputOrigin {
    Stdout,
    AgentOutputFile,
}

/// A workspace file, by content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkspaceFile {
    pub size: u64,
    /// SHA-256, lowercase hex.
    pub sha256: String,
}

/// How the harness ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HarnessExit {
    /// The exit code, when it exited (not when killed by a signal).
    pub code: Option<i32>,
    /// True when it was killed at the task's time limit.
    pub timed_out: bool,
}

impl HarnessExit {
    pub fn describe(&self) -> String {
        match (self.timed_out, self.code) {
            (true, _) => "killed at the time limit".into(),
            (false, Some(code)) => format!("exit code {code}"),
            (false, None) => "killed by a signal".into(),
        }
    }
}

mod milliseconds {
    use std::time::Duration;

    pub fn serialize<S: serde::Serializer>(
        duration: &Duration,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(duration.as_millis() as u64)
    }
}
