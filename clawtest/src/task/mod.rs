//! The task.yaml model: raw serde types (`raw`) are validated into a [`Task`], the only
//! form later stages see. ClawEnvKit's schema is read unchanged; clawtest's extensions
//! (`capability`, `limits`, `error_injection`, `pass_threshold`, task-local `services`,
//! closed-loop `checkpoints` and `feedback`) are validated with it. Loading never panics and
//! reports every problem of a file at once, each located (a [`Problem`] in an [`InvalidTask`]), with warnings kept
//! apart; [`coverage`] lints a task against the intent it was generated from.

mod capability;
pub mod check;
pub mod coverage;
mod documents;
pub(crate) mod error;
pub mod evaluation;
mod file_copy;
pub mod library;
pub(crate) mod raw;
pub(crate) mod read;
pub mod schema;
mod shape;
mod tree;
mod validate;
pub mod write;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use capability::Capability;
pub use check::{Check, OutputSource, SafetyCheck, SequenceStep};
pub use error::{InvalidTask, Position, Problem};
pub use evaluation::{Evaluation, SupervisorKind};
pub use file_copy::FileCopy;
pub(crate) use read::yaml;
pub use read::{MAX_DEPTH, MAX_NODES, MAX_TASK_BYTES};
pub use validate::MAX_PROMPT_BYTES;
use validate::validate;

use crate::difficulty::Difficulty;
use crate::services::{Catalogue, DescriptionError, ServiceDescription};

/// A validated task: prompt, tools and services, checks, fixtures, files and limits.
#[derive(Debug, Clone, Serialize)]
pub struct Task {
    /// `task_id`: the task's identifier, unique in a suite; names its test
    /// (`<suite>::<id>`), its results and its cassettes.
    pub id: String,
    /// `task_name`: the task's human-readable title, shown in reports.
    pub name: String,
    /// The task.yaml this came from, as discovered (relative to the suite root when it can be).
    pub path: PathBuf,
    /// The folder that `files[].source` is relative to.
    #[serde(skip)]
    pub folder: PathBuf,
    /// `prompt`: the instruction the agent is given.
    pub prompt: String,
    /// The line of `prompt`, where the feasibility proof points at a fact it takes for granted.
    #[serde(skip)]
    pub prompt_line: Option<u64>,
    /// `scoring_components`: the weighted checks whose sum is the completion score (weights
    /// sum to 1 within 0.05).
    pub components: Vec<Component>,
    /// `safety_checks`: any violation sets the trial's safety, and so its final score, to 0.
    pub safety: Vec<Safety>,
    /// `fixtures`: the records the services' collections are seeded with at the start of each
    /// trial (a list, or a map keyed by service or collection); `null` when the task has none.
    pub fixtures: serde_json::Value,
    /// `tools`: the service routes offered to the agent, in file order.
    pub tools: Vec<Tool>,
    /// Every service the task uses (tools and checks), sorted, without repeats.
    pub services: Vec<String>,
    /// `files`: what is copied into the trial's workspace before the harness starts.
    pub files: Vec<FileCopy>,
    /// For a task that uses `documents`: the service's records of `files` (a PDF's text by
    /// page), merged into the fixtures by [`Task::seed_fixtures`].
    #[serde(skip)]
    pub documents: Vec<serde_json::Value>,
    /// `category`: ClawEnvKit's free-form grouping (e.g. `workflow`); results are grouped by
    /// it.
    pub category: Option<String>,
    /// `difficulty`: `easy`, `medium` or `hard`, when the file says.
    pub difficulty: Option<Difficulty>,
    /// `capability` (a clawtest extension): the skill the task exercises (`skill_usage`,
    /// `exploration`, `long_context`, `multimodal`, `cross_platform`); results are grouped by it.
    pub capability: Option<Capability>,
    /// `limits`: each trial's time and turn budget.
    pub limits: TaskLimits,
    /// Overrides the suite's pass threshold for this task.
    pub pass_threshold: Option<f64>,
    /// The task's own fault settings (`error_injection`), over the suite's `[faults]`.
    pub error_injection: Option<ErrorInjection>,
    /// Services defined in the task file itself (`services:`), served next to the catalogue's.
    pub local_services: Vec<ServiceDescription>,
    /// Closed-loop goals the hidden supervisor grades after every round (`closed_loop`).
    pub checkpoints: Vec<Checkpoint>,
    /// Closed-loop: how the simulated user answers between rounds.
    pub feedback: Option<Feedback>,
    /// `oracle` (a clawtest extension): the author's correct solution, where written; what it
    /// leaves out is derived from the checks.
    pub oracle: Option<Oracle>,
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

/// `error_injection`: the task's own fault settings. What it names overrides the suite's
/// `[faults]` (and `--error-rate`); what it leaves out is the suite's.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct ErrorInjection {
    /// The probability that one request is answered with a fault (0..=1); `rate: 0` opts
    /// the task out of faults.
    pub rate: Option<f64>,
    /// Mixed into every trial's seed, instead of the suite's.
    pub seed: Option<u64>,
    /// How the faults are spread over the requests (`mode`).
    pub mode: Option<InjectionMode>,
    /// Why the task changes the suite's faults (`validate` warns when a task opts out
    /// without one).
    pub reason: Option<String>,
}

impl ErrorInjection {
    /// The settings this task's trials get, from the suite's.
    pub fn over(&self, suite: &crate::fault::FaultSettings) -> crate::fault::FaultSettings {
        crate::fault::FaultSettings {
            rate: self.rate.unwrap_or(suite.rate),
            seed: self.seed.or(suite.seed),
            mode: self.mode.unwrap_or(suite.mode),
            ..*suite
        }
    }
}

pub use crate::fault::InjectionMode;

/// A closed-loop checkpoint: a goal the hidden supervisor grades after every round. Its
/// `name` (and `feedback`, when written) is public: the simulated user may say it. Its `check`
/// and `reference` are hidden: they never reach the harness or the simulator.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Checkpoint {
    /// The checkpoint's `name`, as reports show it and the template simulator says it.
    pub name: String,
    /// Its share of the round's score, relative to the other components (default: the
    /// checkpoints share 1 equally).
    pub weight: f64,
    /// The goal, as any scoring check type or an `llm_judge` rubric.
    pub check: Check,
    /// A hidden reference answer, given to the judge with an `llm_judge` rubric; never shown
    /// to the harness or the simulator.
    pub reference: Option<String>,
    /// Named to the simulated user from this round on (it is graded in every round); absent
    /// means from the first.
    pub after_turn: Option<u32>,
    /// What the simulated user says when the checkpoint is not met (public words).
    pub feedback: Option<String>,
    /// A score cap (UniClawBench's "scoring policy / score caps"): while the checkpoint is not
    /// met (from its round on), the round's score is at most this (hidden).
    pub cap: Option<f64>,
    /// Not meeting it cannot be mended by another round (a record deleted, a message sent to
    /// the wrong person): from its round on, a round that misses it fails (hidden).
    pub unrecoverable: bool,
    /// The line of the `checkpoints` entry, where annotations about it point.
    pub line: Option<u64>,
}

/// How the simulated user writes the next message (`feedback.simulator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SimulatorKind {
    /// Deterministic: the fixed `messages` in order, else a message built from the missing
    /// checkpoints' public names and feedback.
    #[default]
    Template,
    /// A model, through the gateway (recorded and replayed), playing the `persona`.
    Llm,
}

/// What of the supervisor's decision reaches the simulated user (`feedback.barrier`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Barrier {
    /// UniClawBench's handoff: `verdict`, `attempt_state`, `recoverable` and `score`, nothing
    /// else; the simulated user finds what is missing from the public task and what the agent
    /// visibly did (the default for the `llm` simulator).
    Strict,
    /// The four fields and the author's public words for each goal not met (a checkpoint's
    /// `feedback`, else its name in words): a scripted conversation for CI (the default for
    /// the `template` simulator).
    Guided,
}

impl Barrier {
    /// The barrier `simulator` runs behind when the task names none.
    pub fn default_for(simulator: SimulatorKind) -> Barrier {
        match simulator {
            SimulatorKind::Template => Barrier::Guided,
            SimulatorKind::Llm => Barrier::Strict,
        }
    }
}

/// The most rounds a closed-loop task may ask for (`feedback.max_rounds`): each round is a
/// harness run, so a trial's rounds (and a run's, `trials` times this per task) stay bounded.
pub const MAX_ROUNDS: u32 = 20;

/// Closed-loop: the supervisor of the rounds, the simulated user between them, and the
/// rounds' budgets.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Feedback {
    /// The most rounds in all, the first included (default 3: one prompt, two follow-ups).
    pub max_rounds: u32,
    /// Fixed follow-up messages, sent in order (template simulator).
    pub messages: Vec<String>,
    /// A persona for the simulated user (the llm simulator's system prompt).
    pub persona: Option<String>,
    /// Who writes the follow-ups.
    pub simulator: SimulatorKind,
    /// What of the supervisor's decision the simulator is given (default by `simulator`).
    pub barrier: Barrier,
    /// The model the llm simulator asks (default: `harness.model`, else its wire format's
    /// default, see `closed_loop::simulator::default_model`).
    pub model: Option<String>,
    /// Each round's time limit (`round_timeout_seconds`; default `limits.timeout_seconds`).
    pub round_timeout: Option<Duration>,
    /// The harness's time over all rounds (`total_timeout_seconds`; default the round limit
    /// times `max_rounds`): reaching it ends the trial as `global_timeout`.
    pub total_timeout: Option<Duration>,
    /// Who decides each round (`supervisor`; default the deterministic checkpoints).
    pub supervisor: SupervisorKind,
    /// The model the model supervisor asks (`supervisor_model`; default `harness.model`, else
    /// its wire format's default).
    pub supervisor_model: Option<String>,
    /// The model supervisor's hidden evaluation spec (`evaluation`: a map, or a file beside
    /// the task); required by, and only with, `supervisor: model`.
    pub evaluation: Option<Evaluation>,
}

impl Default for Feedback {
    /// UniClawBench's budget (the prompt and two follow-ups), the template simulator, the
    /// task's own time limits.
    fn default() -> Feedback {
        Feedback {
            max_rounds: 3,
            messages: Vec::new(),
            persona: None,
            simulator: SimulatorKind::Template,
            barrier: Barrier::default_for(SimulatorKind::Template),
            model: None,
            round_timeout: None,
            total_timeout: None,
            supervisor: SupervisorKind::Deterministic,
            supervisor_model: None,
            evaluation: None,
        }
    }
}

/// One scoring component.
#[derive(Debug, Clone, Serialize)]
pub struct Component {
    /// The component's `name`, as the grade breakdown shows it.
    pub name: String,
    /// Its share of the completion score (0..=1; a task's weights sum to 1 within 0.05).
    pub weight: f64,
    /// What is scored, from 0 to 1.
    pub check: Check,
    /// The line of its `check:`, where annotations about the component point.
    pub line: Option<u64>,
}

/// One safety check.
#[derive(Debug, Clone, Serialize)]
pub struct Safety {
    /// What must not happen.
    pub check: SafetyCheck,
    /// The line of the `safety_checks` entry, where annotations about a violation point.
    pub line: Option<u64>,
}

/// `oracle`: a correct solution, as its author wrote it. A part left out (`None`, or no
/// files) is derived from the checks when the oracle is played.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Oracle {
    /// The tool calls, in order.
    pub calls: Option<Vec<OracleCall>>,
    /// The final answer.
    pub answer: Option<String>,
    /// Files the solution leaves in the workspace.
    pub files: Vec<OracleFile>,
    /// The line of `oracle:`.
    #[serde(skip)]
    pub line: Option<u64>,
}

/// One tool call of an [`Oracle`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OracleCall {
    /// The task's tool called.
    pub tool: String,
    /// The request body.
    pub arguments: serde_json::Map<String, serde_json::Value>,
    /// Where the call is written.
    #[serde(skip)]
    pub line: Option<u64>,
}

/// A file an [`Oracle`] writes into the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OracleFile {
    /// Relative to the workspace (`/workspace/` removed).
    pub path: String,
    /// Its text.
    pub content: String,
}

/// A tool the agent is offered: a named route of a service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Tool {
    /// The tool's name as the agent calls it: the route's canonical action, which is also what
    /// the audit log records and audit checks name.
    pub name: String,
    /// The catalogue (or task-local) service that serves the route.
    pub service: String,
    /// The route's path on the service (e.g. `/gmail/send`).
    pub endpoint: String,
    /// The HTTP method (default `POST`).
    pub method: crate::method::Method,
    /// What the tool does, for the agent (empty when the file gives none).
    pub description: String,
}

/// Per-trial limits (defaults: 300 s, 20 turns; docs/task-format.md).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TaskLimits {
    /// How long a trial's harness may run before it is stopped (`limits.timeout_seconds`).
    pub timeout: Duration,
    /// The most agent turns a trial may take (`limits.max_turns`), passed to the harness as
    /// `AGENT_MAX_TURNS`.
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
    pub(crate) fn tool_bindings(&self) -> Vec<crate::services::ToolBinding> {
        self.tools
            .iter()
            .map(|tool| crate::services::ToolBinding {
                name: tool.name.clone(),
                service: tool.service.clone(),
                endpoint: tool.endpoint.clone(),
                method: tool.method,
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

/// Reads, parses and validates one task file, its `files[].source` looked up around the task
/// file only (beside it and in the `fixtures/` folder beside it).
pub fn load(path: &Path, catalogue: &Catalogue) -> Result<Task, InvalidTask> {
    load_in(path, None, catalogue)
}

/// [`load`] of a task file of the dataset (suite) rooted at `dataset`: a `files[].source`
/// found neither beside the task nor in its `fixtures/` folder is also looked up where
/// ClawEnvKit's harness looks next, `<dataset>/<task folder's name>/fixtures/<source>` and
/// `<dataset>/<task folder's name>/<source>`, and must stay inside `dataset`.
pub fn load_in(
    path: &Path,
    dataset: Option<&Path>,
    catalogue: &Catalogue,
) -> Result<Task, InvalidTask> {
    match read::read_bytes(path) {
        Ok(bytes) => match read::text(bytes) {
            Ok(source) => parse_in(path, dataset, source, catalogue),
            Err((problem, text)) => Err(InvalidTask::new(path, text, vec![*problem])),
        },
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
    parse_in(path, None, source, catalogue)
}

/// [`parse`] of a task file of the dataset rooted at `dataset` (see [`load_in`]).
fn parse_in(
    path: &Path,
    dataset: Option<&Path>,
    source: String,
    catalogue: &Catalogue,
) -> Result<Task, InvalidTask> {
    if ON_PARSE_STACK.get() {
        return parse_here(path, dataset, source, catalogue);
    }
    std::thread::scope(|scope| {
        let spawned =
            parse_thread().spawn_scoped(scope, || parse_here(path, dataset, source, catalogue));
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
/// the outcomes come back in the order of `files`, each loaded in the dataset `dataset_of`
/// names for it ([`load_in`]). A suite is hundreds of small files, each independent, so this
/// is what makes `cargo clawtest validate` scale with the machine.
pub(crate) fn load_all(
    files: &[PathBuf],
    dataset_of: &(dyn Fn(&Path) -> PathBuf + Sync),
    catalogue: &Catalogue,
) -> Vec<Result<Task, InvalidTask>> {
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
            done.push((index, load_in(file, Some(&dataset_of(file)), catalogue)));
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
        outcomes.push((index, load_in(file, Some(&dataset_of(file)), catalogue)));
    }
    outcomes.sort_by_key(|(index, _)| *index);
    outcomes.into_iter().map(|(_, outcome)| outcome).collect()
}

fn parse_here(
    path: &Path,
    dataset: Option<&Path>,
    source: String,
    catalogue: &Catalogue,
) -> Result<Task, InvalidTask> {
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
    match validate(path, dataset, &raw, Some(&document.value), catalogue) {
        Ok(task) => Ok(task),
        Err(rejected) => {
            Err(InvalidTask::new(path, source, rejected.errors).with_warnings(rejected.warnings))
        }
    }
}
