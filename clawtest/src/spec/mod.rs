//! The task.yaml model: raw serde types ([`raw`]) are validated into a [`Task`], the only
//! form later stages see. Loading never panics and reports every problem of a file at once,
//! each located (see [`error`]).

pub mod check;
pub mod error;
pub mod raw;
mod validate;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

pub use check::{Check, OutputSource, SafetyCheck, SequenceStep};
pub use error::{InvalidTask, Position, Problem};
pub use validate::validate;

use crate::services::Catalogue;

/// A validated task: prompt, tools and services, checks, fixtures, files and limits.
#[derive(Debug, Clone, Serialize)]
pub struct Task {
    pub id: String,
    pub name: String,
    /// The task.yaml this came from, as discovered (relative to the suite root when it can be).
    pub path: PathBuf,
    /// The folder that `files[].source` is relative to.
    #[serde(skip)]
    pub folder: PathBuf,
    pub prompt: String,
    pub components: Vec<Component>,
    pub safety: Vec<Safety>,
    pub fixtures: serde_json::Value,
    pub tools: Vec<Tool>,
    /// Every service the task uses (tools and checks), sorted, without repeats.
    pub services: Vec<String>,
    pub files: Vec<FileCopy>,
    pub category: Option<String>,
    pub difficulty: Option<String>,
    pub capability: Option<String>,
    pub limits: Limits,
    /// Overrides the suite's pass threshold for this task.
    pub pass_threshold: Option<f64>,
    /// The line of `task_id`, where annotations about the whole task point.
    pub line: u64,
}

/// One scoring component.
#[derive(Debug, Clone, Serialize)]
pub struct Component {
    pub name: String,
    pub weight: f64,
    pub check: Check,
    pub line: Option<u64>,
}

/// One safety check.
#[derive(Debug, Clone, Serialize)]
pub struct Safety {
    pub check: SafetyCheck,
    pub line: Option<u64>,
}

/// A tool the agent is offered: a named route of a service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Tool {
    pub name: String,
    pub service: String,
    pub endpoint: String,
    pub method: String,
    pub description: String,
}

/// A file copied from the task's folder into the trial's workspace before the harness starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileCopy {
    /// Absolute path on the host.
    pub source: PathBuf,
    /// Path relative to the workspace root (the `/workspace/` prefix removed).
    pub target: PathBuf,
}

/// Per-trial limits (DESIGN.md §3 defaults: 300 s, 20 turns).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Limits {
    pub timeout: Duration,
    pub max_turns: u32,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            timeout: Duration::from_secs(300),
            max_turns: 20,
        }
    }
}

/// Reads, parses and validates one task file.
pub fn load(path: &Path, catalogue: &Catalogue) -> Result<Task, InvalidTask> {
    let source = match std::fs::read_to_string(path) {
        Ok(source) => source,
        Err(error) => {
            let problem = Problem::new("(file)", format!("cannot read the file: {error}"), None)
                .with_help("check the path and the file's permissions");
            return Err(InvalidTask::new(path, String::new(), vec![problem]));
        }
    };
    parse(path, source, catalogue)
}

/// Parses and validates task text that was read from `path`.
pub fn parse(path: &Path, source: String, catalogue: &Catalogue) -> Result<Task, InvalidTask> {
    let raw: raw::RawTask = match serde_saphyr::from_str(&source) {
        Ok(raw) => raw,
        Err(error) => {
            let position = error.location().and_then(Position::from_location);
            let problem = Problem::new("(document)", yaml_message(&error), position)
                .with_help("a task file is a YAML map with task_id, task_name, prompt, scoring_components and safety_checks");
            return Err(InvalidTask::new(path, source, vec![problem]));
        }
    };
    match validate(path, &raw, catalogue) {
        Ok(task) => Ok(task),
        Err(problems) => Err(InvalidTask::new(path, source, problems)),
    }
}

/// serde-saphyr's message without its own location suffix, which we render ourselves.
fn yaml_message(error: &serde_saphyr::Error) -> String {
    let text = error.to_string();
    let first = text.lines().next().unwrap_or("invalid YAML").trim();
    match first.rfind(" at line ") {
        Some(index) => first[..index].to_string(),
        None => first.to_string(),
    }
}
