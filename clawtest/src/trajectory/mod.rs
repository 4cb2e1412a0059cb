//! What happened in one trial, as the grader and the reports see it: the audit log and its
//! injected faults ([`AuditEntry`], `audit.rs`), the model calls ([`ModelCall`]), the final
//! output, the workspace files, the check commands, the harness's exit and timing, a closed
//! loop's rounds (`rounds.rs`); the
//! saved-trajectory file format; and the import of ClawEnvKit's audits (`clawenvkit.rs`).
//!
//! Leaf data: produced by the world, the gateway and the executor, read by the grader without
//! any further I/O. It imports nothing of the library above [`crate::task`].

pub(crate) mod audit;
pub(crate) mod clawenvkit;
pub(crate) mod model_call;
pub mod rounds;

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The largest saved trajectory or audit file read back (`grade`): far over what a trial's
/// `[limits]` let one hold, and a bound on what a file given on the command line can cost.
pub const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;

pub use audit::{AuditEntry, FaultKind, RecordedBody};

pub(crate) use clawenvkit::from_clawenvkit;
pub use model_call::{ModelCall, Speaker};

/// One trial's record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Trajectory {
    /// The id of the task the trial ran.
    pub task_id: String,
    /// 0-based trial index.
    pub trial: u32,
    /// Every request the trial's services answered, in order.
    pub audit: Vec<AuditEntry>,
    /// Every call through the model gateway, in order (empty without a gateway).
    pub model_calls: Vec<ModelCall>,
    /// The final answer: `agent_output.txt` in the workspace if the harness wrote it, else
    /// its stdout.
    pub output: String,
    /// Which of the two `output` was read from.
    pub output_source: OutputOrigin,
    /// The end of the harness's stderr, for failure messages.
    pub stderr_tail: String,
    /// Files in the workspace after the harness exited, by path relative to the workspace.
    pub workspace: BTreeMap<String, WorkspaceFile>,
    /// How the harness ended.
    pub exit: HarnessExit,
    /// The `exit_code` / `pytest_pass` commands, run in the trial's sandbox after the harness
    /// ended, in task order.
    #[serde(default)]
    pub commands: Vec<CommandRun>,
    /// The `[limits]` caps that bit in this trial, one line each (what was cut, and where).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limits_reached: Vec<String>,
    /// How long the harness ran, wall clock (saved as `duration_ms`).
    #[serde(with = "milliseconds", rename = "duration_ms")]
    pub duration: Duration,
    /// What counts as an error for robustness: clawtest's injected faults, or (an audit
    /// imported from ClawEnvKit) every answer of 400 or above, as engine.py counts them.
    #[serde(default, skip_serializing_if = "RobustnessRule::is_default")]
    pub robustness_rule: RobustnessRule,
    /// A closed-loop trial's rounds and why they stopped (`None` for a one-round task).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<rounds::Rounds>,
}

/// What robustness counts as an error to recover from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RobustnessRule {
    /// The faults clawtest injected (429 and 500; a delay is not an error).
    #[default]
    InjectedFaults,
    /// Every entry answered 400 or above (ClawEnvKit's `_calculate_robustness`, for its
    /// audits, where injected errors are entries with their status).
    ErrorStatuses,
}

impl RobustnessRule {
    fn is_default(&self) -> bool {
        *self == RobustnessRule::default()
    }
}

/// Where the final answer was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputOrigin {
    /// The harness's standard output (it wrote no `agent_output.txt`).
    Stdout,
    /// `agent_output.txt` in the workspace.
    AgentOutputFile,
}

/// A workspace file, by content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceFile {
    /// Its size in bytes.
    pub size: u64,
    /// SHA-256, lowercase hex.
    pub sha256: String,
}

/// A check command run in the sandbox after the harness ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandRun {
    /// The shell command as the check wrote it.
    pub command: String,
    /// `None` when it timed out, was killed, or could not start.
    pub exit_code: Option<i32>,
    /// True when it was killed at its time limit (30 s for `exit_code`, 60 s for
    /// `pytest_pass`).
    pub timed_out: bool,
    /// The end of its stdout and stderr, for reasons and reports.
    pub output_tail: String,
}

/// How the harness ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HarnessExit {
    /// The exit code, when it exited (not when killed by a signal).
    pub code: Option<i32>,
    /// True when it was killed at the task's time limit.
    pub timed_out: bool,
    /// The signal that ended it, when it did not exit (and was not killed at the time limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
}

impl HarnessExit {
    /// In words, for reports: "exit code 1", "killed at the time limit", …
    pub(crate) fn describe(&self) -> String {
        match (self.timed_out, self.code, self.signal) {
            (true, _, _) => TIME_LIMIT_WORDS.into(),
            (false, Some(code), _) => format!("exit code {code}"),
            (false, None, Some(signal)) => format!("killed by signal {signal}"),
            (false, None, None) => "killed by a signal".into(),
        }
    }

    /// The exit that [`HarnessExit::describe`] put in `words` (what the results keep); `None`
    /// for words it never writes. A code beside the time limit is not in the words and not
    /// read back.
    pub fn from_words(words: &str) -> Option<HarnessExit> {
        let exit = |code, timed_out, signal| HarnessExit {
            code,
            timed_out,
            signal,
        };
        if words == TIME_LIMIT_WORDS {
            return Some(exit(None, true, None));
        }
        if words == "killed by a signal" {
            return Some(exit(None, false, None));
        }
        if let Some(code) = words.strip_prefix("exit code ") {
            return Some(exit(Some(code.parse().ok()?), false, None));
        }
        let signal = words.strip_prefix("killed by signal ")?;
        Some(exit(None, false, Some(signal.parse().ok()?)))
    }

    /// It exited by itself with code 0.
    pub fn succeeded(&self) -> bool {
        !self.timed_out && self.code == Some(0)
    }
}

impl std::fmt::Display for HarnessExit {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.describe())
    }
}

const TIME_LIMIT_WORDS: &str = "killed at the time limit";

/// A [`HarnessExit`] as its words (`exit code 0`) in JSON: the results' `harness_exit`.
pub(crate) mod exit_in_words {
    use super::{HarnessExit, TIME_LIMIT_WORDS};

    pub(crate) fn serialize<S: serde::Serializer>(
        exit: &HarnessExit,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&exit.describe())
    }

    pub(crate) fn deserialize<'de, D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> Result<HarnessExit, D::Error> {
        let words: String = serde::Deserialize::deserialize(deserializer)?;
        HarnessExit::from_words(&words).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "`{words}` is no harness exit (`exit code N`, `killed by signal N`, `{TIME_LIMIT_WORDS}`)"
            ))
        })
    }

    #[cfg(test)]
    mod tests {
        use super::HarnessExit;

        #[test]
        fn every_exit_reads_back_from_its_words() {
            let exits = [
                HarnessExit {
                    code: Some(0),
                    timed_out: false,
                    signal: None,
                },
                HarnessExit {
                    code: Some(-3),
                    timed_out: false,
                    signal: None,
                },
                HarnessExit {
                    code: None,
                    timed_out: true,
                    signal: None,
                },
                HarnessExit {
                    code: None,
                    timed_out: false,
                    signal: Some(9),
                },
                HarnessExit {
                    code: None,
                    timed_out: false,
                    signal: None,
                },
            ];
            for exit in &exits {
                assert_eq!(
                    HarnessExit::from_words(&exit.describe()).as_ref(),
                    Some(exit)
                );
            }
            assert!(exits[0].succeeded());
            assert!(!exits[1].succeeded() && !exits[2].succeeded());
            assert_eq!(HarnessExit::from_words("exit code zero"), None);
            assert_eq!(HarnessExit::from_words("finished"), None);
        }
    }
}

mod milliseconds {
    use std::time::Duration;

    pub(super) fn serialize<S: serde::Serializer>(
        duration: &Duration,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(duration.as_millis() as u64)
    }

    pub(super) fn deserialize<'de, D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Duration, D::Error> {
        let milliseconds: u64 = serde::Deserialize::deserialize(deserializer)?;
        Ok(Duration::from_millis(milliseconds))
    }
}

/// The file format of a saved trajectory (`--trajectories DIR`): the trajectory with a schema
/// tag, so that `cargo clawtest grade` can re-grade it later without running the agent.
pub(crate) const SCHEMA: &str = "clawtest-trajectory/1";

#[derive(Serialize)]
struct FileOut<'a> {
    schema: &'static str,
    #[serde(flatten)]
    trajectory: &'a Trajectory,
}

#[derive(Deserialize)]
struct FileIn {
    schema: String,
    #[serde(flatten)]
    trajectory: Trajectory,
}

/// A saved trajectory that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("{}: {message}", path.display())]
pub(crate) struct ReadError {
    /// The file read.
    pub(crate) path: std::path::PathBuf,
    /// What is wrong with it.
    pub(crate) message: String,
}

impl Trajectory {
    /// The trajectory of a trial no harness ran: what an audit (imported, or the oracle's)
    /// holds, the final answer and the workspace, with a clean exit and no model call.
    pub(crate) fn without_harness(
        task_id: &str,
        audit: Vec<AuditEntry>,
        output: String,
        workspace: BTreeMap<String, WorkspaceFile>,
        robustness_rule: RobustnessRule,
    ) -> Trajectory {
        Trajectory {
            task_id: task_id.to_owned(),
            trial: 0,
            audit,
            model_calls: Vec::new(),
            output,
            output_source: OutputOrigin::AgentOutputFile,
            stderr_tail: String::new(),
            workspace,
            exit: HarnessExit {
                code: Some(0),
                timed_out: false,
                signal: None,
            },
            commands: Vec::new(),
            limits_reached: Vec::new(),
            duration: std::time::Duration::ZERO,
            robustness_rule,
            rounds: None,
        }
    }

    /// Where a trajectory is saved inside `folder`: `<task_id>/trial-<n>.json`.
    pub(crate) fn file_in(&self, folder: &std::path::Path) -> std::path::PathBuf {
        Trajectory::path_in(folder, &self.task_id, self.trial)
    }

    /// Where the trajectory of `task_id`'s trial `trial` is saved inside `folder`.
    pub(crate) fn path_in(
        folder: &std::path::Path,
        task_id: &str,
        trial: u32,
    ) -> std::path::PathBuf {
        folder.join(task_id).join(format!("trial-{trial}.json"))
    }

    /// The saved form, pretty-printed.
    pub(crate) fn to_file_text(&self) -> String {
        serde_json::to_string_pretty(&FileOut {
            schema: SCHEMA,
            trajectory: self,
        })
        .unwrap_or_default()
    }

    /// Reads a trajectory saved with [`Trajectory::to_file_text`]: a regular file of at most
    /// [`MAX_FILE_BYTES`].
    pub(crate) fn read(path: &std::path::Path) -> Result<Trajectory, ReadError> {
        let error = |message: String| ReadError {
            path: path.to_path_buf(),
            message,
        };
        let bytes = crate::task::read::read_regular(path, MAX_FILE_BYTES)
            .map_err(|failure| error(failure.to_string()))?;
        let file: FileIn = serde_json::from_slice(&bytes)
            .map_err(|failure| error(format!("not a saved trajectory: {failure}")))?;
        if file.schema != SCHEMA {
            return Err(error(format!(
                "schema `{}`; this build reads `{SCHEMA}`",
                file.schema
            )));
        }
        Ok(file.trajectory)
    }
}
