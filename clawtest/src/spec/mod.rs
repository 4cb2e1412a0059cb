//! The task.yaml model: raw serde types ([`raw`]) are validated into a [`Task`], the only
//! form later stages see. ClawEnvKit's schema is read unchanged; clawtest's extensions
//! (`capability`, `limits`, `error_injection`, `pass_threshold`, task-local `services`,
//! closed-loop `checkpoints` and `feedback`) are validated with it. Loading never panics and
//! reports every problem of a file at once, each located (see [`error`]), with warnings kept
//! apart; [`coverage`] lints a task against the intent it was generated from.

pub mod check;
pub mod coverage;
pub mod error;
pub mod raw;
mod read;
pub mod schema;
mod shape;
mod tree;
mod validate;
pub mod write;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use check::{Check, OutputSource, SafetyCheck, SequenceStep};
pub use error::{InvalidTask, Position, Problem};
pub use read::{MAX_DEPTH, MAX_NODES, MAX_TASK_BYTES};
pub use validate::{Rejected, validate};

use crate::services::{Catalogue, DescriptionError, ServiceDescription};

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
    pub limits: TaskLimits,
    /// Overrides the suite's pass threshold for this task.
    pub pass_threshold: Option<f64>,
    /// Fault injection for this task's services (`error_injection`), when the task asks for it.
    pub error_injection: Option<ErrorInjection>,
    /// Services defined in the task file itself (`services:`), served next to the catalogue's.
    pub local_services: Vec<ServiceDescription>,
    /// Closed-loop goals checked while the agent works (executed by a later stage).
    pub checkpoints: Vec<Checkpoint>,
    /// Closed-loop: how the simulated user answers between rounds.
    pub feedback: Option<Feedback>,
    /// What is questionable but not wrong (unknown keys, weights slightly off): shown, never fatal.
    #[serde(skip)]
    pub warnings: Vec<Problem>,
    /// The line of `task_id`, where annotations about the whole task point.
    pub line: u64,
}

impl Task {
    /// The catalogue this task's trials use: `base` plus the task's own services.
    pub fn catalogue(&self, base: &Catalogue) -> Result<Catalogue, DescriptionError> {
        base.with(self.local_services.clone())
    }
}

/// `error_injection`: faults the services inject into this task's trials.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ErrorInjection {
    /// The probability that one request is answered with a fault (0..=1; default 0.25).
    pub rate: f64,
    /// Fixes the fault sequence; absent means the run's own seed.
    pub seed: Option<u64>,
    pub mode: InjectionMode,
}

/// How injected faults are spread over requests: the task's `error_injection.mode`, and the
/// mode of the world's fault plan (one idea, one type, defined where task.yaml names it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InjectionMode {
    /// Each request independently (ClawEnvKit's behaviour).
    #[default]
    Uniform,
    /// Runs of consecutive faults, as real rate limits come: a two-state chain whose fault
    /// state lasts the world's `BURST_LENGTH` requests on average and repeats one fault kind,
    /// with the long-run fraction of faulted requests still the rate.
    Burst,
}

/// A closed-loop checkpoint: a check evaluated while the agent works.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Checkpoint {
    pub name: String,
    pub check: Check,
    /// Evaluate after this turn; absent means after every turn until it passes.
    pub after_turn: Option<u32>,
    /// What the simulated user says when the checkpoint is not met.
    pub feedback: Option<String>,
    pub line: Option<u64>,
}

/// Closed-loop: the simulated user between rounds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Feedback {
    /// The most follow-up rounds (default 3).
    pub max_rounds: u32,
    /// Fixed follow-up messages, sent in order.
    pub messages: Vec<String>,
    /// A persona for a model-simulated user, instead of (or after) the fixed messages.
    pub persona: Option<String>,
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
pub struct TaskLimits {
    pub timeout: Duration,
    pub max_turns: u32,
}

impl Default for TaskLimits {
    fn default() -> TaskLimits {
        TaskLimits {
            timeout: Duration::from_secs(300),
            max_turns: 20,
        }
    }
}

impl Task {
    /// The task's tools as the services see them: which tool name each route is audited under.
    pub fn tool_bindings(&self) -> Vec<crate::services::ToolBinding> {
        self.tools
            .iter()
            .map(|tool| crate::services::ToolBinding {
                name: tool.name.clone(),
                service: tool.service.clone(),
                endpoint: tool.endpoint.clone(),
                method: tool.method.clone(),
            })
            .collect()
    }
}

/// For the fuzz target `typed_from_tree`: `text`'s typed form read directly and read through
/// its located tree ([`tree`]), each as its `Debug` text or the error's message; `None` when
/// the text is not YAML within the reader's limits. The two must agree.
#[doc(hidden)]
pub fn typed_both_ways(text: &str) -> Option<(Result<String, String>, Result<String, String>)> {
    let document: serde_saphyr::Spanned<raw::Node> = read::yaml(text).ok()?;
    let shown = |typed: Result<raw::RawTask, Box<Problem>>| {
        typed
            .map(|task| format!("{task:?}"))
            .map_err(|problem| problem.message)
    };
    Some((
        shown(read::yaml(text)),
        shown(tree::from_tree(&document, text)),
    ))
}

/// Reads, parses and validates one task file.
pub fn load(path: &Path, catalogue: &Catalogue) -> Result<Task, InvalidTask> {
    match read::read_bytes(path) {
        Ok(bytes) => load_bytes(path, bytes, catalogue),
        Err(problem) => Err(InvalidTask::new(path, String::new(), vec![*problem])),
    }
}

/// Parses and validates the bytes of a task file read from `path`: everything [`load`] does
/// after reading, for input that arrives from elsewhere (the fuzz target, an editor).
pub fn load_bytes(path: &Path, bytes: Vec<u8>, catalogue: &Catalogue) -> Result<Task, InvalidTask> {
    match read::text(bytes) {
        Ok(source) => parse(path, source, catalogue),
        Err((problem, text)) => Err(InvalidTask::new(path, text, vec![*problem])),
    }
}

/// The task schema as JSON, built once: only a document of the wrong shape needs it.
fn schema() -> &'static serde_json::Value {
    static SCHEMA: std::sync::LazyLock<serde_json::Value> =
        std::sync::LazyLock::new(schema::task_schema);
    &SCHEMA
}

/// The stack of a thread that reads task files. The YAML reader recurses once per nesting
/// level, with large frames in debug builds: [`MAX_DEPTH`] levels need about 1.5 MiB, close to
/// the 2 MiB of a tokio or test thread, so parsing runs on threads with room to spare.
const PARSE_STACK: usize = 16 * 1024 * 1024;

thread_local! {
    /// Set on threads started with [`PARSE_STACK`]: they parse in place.
    static ON_PARSE_STACK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Parses and validates task text that was read from `path`.
pub fn parse(path: &Path, source: String, catalogue: &Catalogue) -> Result<Task, InvalidTask> {
    if ON_PARSE_STACK.get() {
        return parse_here(path, source, catalogue);
    }
    std::thread::scope(|scope| {
        let spawned = parse_thread().spawn_scoped(scope, || parse_here(path, source, catalogue));
        match spawned {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(error) => {
                let problem = Problem::new(
                    "(file)",
                    format!("cannot start a thread to read the file: {error}"),
                    None,
                );
                Err(InvalidTask::new(path, String::new(), vec![problem]))
            }
        }
    })
}

fn parse_thread() -> std::thread::Builder {
    std::thread::Builder::new()
        .name("clawtest-parse".into())
        .stack_size(PARSE_STACK)
}

/// Reads, parses and validates `files` on one worker a core, each with [`PARSE_STACK`];
/// the outcomes come back in the order of `files`. A suite is hundreds of small files, each
/// independent, so this is what makes `cargo clawtest validate` scale with the machine.
pub fn load_all(files: &[PathBuf], catalogue: &Catalogue) -> Vec<Result<Task, InvalidTask>> {
    use std::sync::atomic::{AtomicUsize, Ordering};

    let workers = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(files.len());
    let next = AtomicUsize::new(0);
    let work = || {
        ON_PARSE_STACK.set(true);
        let mut done = Vec::new();
        loop {
            let index = next.fetch_add(1, Ordering::Relaxed);
            let Some(file) = files.get(index) else {
                break;
            };
            done.push((index, load(file, catalogue)));
        }
        done
    };
    let mut outcomes: Vec<(usize, Result<Task, InvalidTask>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .filter_map(|_| parse_thread().spawn_scoped(scope, work).ok())
            .collect();
        handles
            .into_iter()
            .flat_map(|handle| {
                handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    // No worker could start (or none was needed): the files not yet taken are read here, each
    // on a thread of its own as [`parse`] does.
    let taken = next.load(Ordering::Relaxed).min(files.len());
    for (index, file) in files.iter().enumerate().skip(taken) {
        outcomes.push((index, load(file, catalogue)));
    }
    outcomes.sort_by_key(|(index, _)| *index);
    outcomes.into_iter().map(|(_, outcome)| outcome).collect()
}

fn parse_here(path: &Path, source: String, catalogue: &Catalogue) -> Result<Task, InvalidTask> {
    if let Err(problem) = read::check_size(&source) {
        return Err(InvalidTask::new(path, String::new(), vec![*problem]));
    }
    // The text as a located tree, parsed once: YAML syntax, limits and duplicate keys are found
    // here; the typed form is read from the tree, which also serves validation (unknown keys)
    // and the shape check below.
    let document: serde_saphyr::Spanned<raw::Node> = match read::yaml(&source) {
        Ok(document) => document,
        Err(problem) => return Err(InvalidTask::new(path, source, vec![*problem])),
    };
    let raw: raw::RawTask = match tree::from_tree(&document, &source) {
        Ok(raw) => raw,
        Err(first) => {
            // serde stops at the first value of a wrong type; the shape check finds them all.
            let mut problems = shape::check_shapes(&document, schema());
            if problems.is_empty() {
                problems.push(*first);
            }
            return Err(InvalidTask::new(path, source, problems));
        }
    };
    match validate(path, &raw, Some(&document.value), catalogue) {
        Ok(task) => Ok(task),
        Err(rejected) => {
            Err(InvalidTask::new(path, source, rejected.errors).with_warnings(rejected.warnings))
        }
    }
}
