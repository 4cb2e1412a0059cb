//! The sections of `clawtest.toml`, as read: `[harness]`, `[run]`, `[gates]`, `[judge]`,
//! `[docker]`, `[limits]`, `[validate]`, `[report]` and `[generate]`, each with its defaults (`[llm]` is
//! in `config/llm.rs`; `[faults]` is `fault::FaultSettings`, read as it is; `RawConfig`, the file with every table optional, is in `config/raw.rs`).
//! Unknown keys are errors (`deny_unknown_fields`); the checks across values are in
//! `config/check.rs`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use super::choice::UnknownChoice;
use super::llm::Provider;
use crate::difficulty::Difficulty;

/// `[judge]`: the LLM judge of `llm_judge` components and checkpoints, whose questions are
/// the trials' own model calls (recorded in their cassettes, replayed from them).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeConfig {
    /// Folder of cached judge answers, relative to the suite root: the answers of `run
    /// --oracle` (which has no cassette), and those of cassettes recorded before the judge's
    /// calls were (read only; `record-missing` moves them into the cassettes).
    #[serde(default = "default_judge_cache")]
    pub cache: PathBuf,
    /// The judge's wire format and provider: `openai` (chat completions) or `anthropic`
    /// (messages). Unset: the run's.
    #[serde(default)]
    pub provider: Option<Provider>,
    /// The provider's base URL (the `/v1/...` path is appended).
    #[serde(default)]
    pub base_url: Option<String>,
    /// The judge model (unset: `[harness] model`, else the provider's default).
    #[serde(default)]
    pub model: Option<String>,
    /// The NAME of the variable holding the key (never the key itself).
    #[serde(default)]
    pub api_key_env: Option<String>,
}

impl Default for JudgeConfig {
    fn default() -> JudgeConfig {
        JudgeConfig {
            cache: default_judge_cache(),
            provider: None,
            base_url: None,
            model: None,
            api_key_env: None,
        }
    }
}

fn default_judge_cache() -> PathBuf {
    PathBuf::from("judge-cache")
}

/// How the project's agent is started.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HarnessConfig {
    /// `"process"` (the default: `command` is started for each trial) or `"rust"` (a Rust
    /// function named in the crate's `clawtest::main!`, run in-process by `cargo test`).
    #[serde(default)]
    pub kind: HarnessKind,
    /// The harness command: a list of words, or one string split on whitespace.
    /// `${CARGO_TARGET_DIR}` expands to the Cargo target directory of the suite's workspace.
    #[serde(default)]
    pub command: Option<CommandLine>,
    /// Run once before the first trial (e.g. building the agent); a failure stops the run.
    #[serde(default)]
    pub build: Option<CommandLine>,
    /// Names of host environment variables passed through to the harness. Nothing else from
    /// the host environment reaches it, so secrets stay out of the sandbox.
    #[serde(default)]
    pub env: Vec<String>,
    /// The docker backend's harness image (present in the local engine; never pulled).
    #[serde(default)]
    pub image: Option<String>,
    /// A Dockerfile the docker backend builds the harness image from (relative to the suite
    /// root), instead of `image`.
    #[serde(default)]
    pub dockerfile: Option<PathBuf>,
    /// The build context of `dockerfile` (default: the Dockerfile's folder).
    #[serde(default)]
    pub context: Option<PathBuf>,
    /// Which tool surfaces the harness gets and the prompt advertises.
    #[serde(default)]
    pub tier: Tier,
    /// Where the final answer the output checks grade is read from (default `stdout`).
    #[serde(default)]
    pub answer: FinalAnswer,
    /// How a closed loop's follow-up reaches the harness (default `restart`): started again
    /// with the conversation, or given to the harness that kept running (`session`).
    #[serde(default)]
    pub follow_up: FollowUp,
    /// The exit codes that mean the harness ran normally (default `[0]`). Any other exit, a
    /// signal, or a failure to start makes the trial an error, with the end of its stderr.
    #[serde(default = "default_success_exit_codes")]
    pub success_exit_codes: Vec<i32>,
    /// How long `build` may run before it is killed and the run stops (default 600 s).
    #[serde(default = "default_build_timeout")]
    pub build_timeout_seconds: u64,
    /// The model the harness should ask the gateway for: `CLAWTEST_MODEL` in its
    /// environment and `{model}` in `files` (unset: neither is given).
    #[serde(default)]
    pub model: Option<String>,
    /// Harness configuration files written before each trial starts: the target (relative to
    /// the workspace, or `~/…` in the harness's home) → a template file (relative to the suite
    /// root) whose `{services_url}`, `{gateway_url}`, `{openai_base_url}`, `{mcp_url}`,
    /// `{model}`, `{workspace}` and `{home}` are filled in (see `harness_files`).
    #[serde(default)]
    pub files: BTreeMap<String, PathBuf>,
    /// The models of `[matrix] models` this harness is not run with (one it cannot drive).
    #[serde(default)]
    pub exclude_models: Vec<String>,
}

impl Default for HarnessConfig {
    fn default() -> HarnessConfig {
        HarnessConfig {
            kind: HarnessKind::default(),
            command: None,
            build: None,
            env: Vec::new(),
            image: None,
            dockerfile: None,
            context: None,
            tier: Tier::default(),
            answer: FinalAnswer::default(),
            follow_up: FollowUp::default(),
            success_exit_codes: default_success_exit_codes(),
            build_timeout_seconds: default_build_timeout(),
            model: None,
            files: BTreeMap::new(),
            exclude_models: Vec::new(),
        }
    }
}

fn default_success_exit_codes() -> Vec<i32> {
    vec![0]
}

fn default_build_timeout() -> u64 {
    600
}

/// `[limits]`: caps on every byte stream that reaches the host from a trial. When one bites,
/// the trial's trajectory (`limits_reached`) and its report line say so.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    /// Bytes kept of the harness's stdout and of its stderr, each (default 4 MiB). Beyond it
    /// the *end* is kept: a final answer printed last survives.
    #[serde(default = "default_output_bytes")]
    pub output_bytes: usize,
    /// Bytes read of `agent_output.txt` (default 1 MiB; the start is kept).
    #[serde(default = "default_output_file_bytes")]
    pub output_file_bytes: usize,
    /// A workspace file larger than this is listed with its size but not hashed (default
    /// 64 MiB).
    #[serde(default = "default_workspace_file_bytes")]
    pub workspace_file_bytes: u64,
    /// Bytes hashed over the whole workspace snapshot (default 256 MiB); files past it are
    /// listed with their size only.
    #[serde(default = "default_workspace_total_bytes")]
    pub workspace_total_bytes: u64,
    /// Workspace files listed in a snapshot (default 10000).
    #[serde(default = "default_workspace_files")]
    pub workspace_files: usize,
    /// Audit entries a trial's services record (default 10000); later calls are answered but
    /// not recorded.
    #[serde(default = "default_audit_entries")]
    pub audit_entries: usize,
    /// Bytes of request and answer bodies the audit records in all (default 32 MiB); later
    /// calls are answered but not recorded.
    #[serde(default = "default_audit_bytes")]
    pub audit_bytes: usize,
    /// Bytes of entries one `GET /audit` answer carries (default 1 MiB): the earliest that
    /// fit, with `"truncated": true` when some were left out (`total` counts them all).
    #[serde(default = "default_audit_answer_bytes")]
    pub audit_answer_bytes: usize,
    /// Bytes the trial's folder (its workspace, control folder and home) may take on disk
    /// (default 1 GiB): one file past it, or all of them together, stops the harness and the
    /// trial is an error that says so.
    #[serde(default = "default_workspace_disk_bytes")]
    pub workspace_disk_bytes: u64,
}

impl Default for LimitsConfig {
    fn default() -> LimitsConfig {
        LimitsConfig {
            output_bytes: default_output_bytes(),
            output_file_bytes: default_output_file_bytes(),
            workspace_file_bytes: default_workspace_file_bytes(),
            workspace_total_bytes: default_workspace_total_bytes(),
            workspace_files: default_workspace_files(),
            audit_entries: default_audit_entries(),
            audit_bytes: default_audit_bytes(),
            audit_answer_bytes: default_audit_answer_bytes(),
            workspace_disk_bytes: default_workspace_disk_bytes(),
        }
    }
}

fn default_output_bytes() -> usize {
    4 << 20
}

fn default_output_file_bytes() -> usize {
    1 << 20
}

fn default_workspace_file_bytes() -> u64 {
    64 << 20
}

fn default_workspace_total_bytes() -> u64 {
    256 << 20
}

fn default_workspace_files() -> usize {
    10_000
}

fn default_audit_entries() -> usize {
    10_000
}

fn default_audit_bytes() -> usize {
    32 << 20
}

fn default_audit_answer_bytes() -> usize {
    1 << 20
}

fn default_workspace_disk_bytes() -> u64 {
    1 << 30
}

/// ClawEnvKit's harness tiers: how the agent finds its tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// tools.json, mcp.json and SKILL.md, with the prompt as written.
    #[default]
    All,
    /// Tier 1: only tools.json (native function calling).
    Tools,
    /// Tier 2: only the MCP server; the prompt says where it is.
    Mcp,
    /// Tier 3: only SKILL.md, also appended to the prompt (curl examples for a shell tool).
    Skill,
}

/// Where a trial's final answer, which the output checks grade, is read from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FinalAnswer {
    /// `agent_output.txt` in the workspace when the harness writes it, else its standard output.
    #[default]
    Stdout,
    /// `agent_output.txt` only: for a harness that logs its steps on standard output (whose
    /// tool results would otherwise be graded as its answer); a trial without it is an error.
    File,
}

/// How a closed loop's follow-up message reaches the harness (docs/closed-loop.md, "The
/// follow-up protocol").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FollowUp {
    /// Each round starts the harness again, with the earlier rounds in the conversation file.
    #[default]
    Restart,
    /// The harness keeps running: it writes each round's answer to the session folder and
    /// waits there for the next message (or the end).
    Session,
}

/// Which sandbox runs the harness.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendChoice {
    /// Docker when the engine answers and an image is configured, else process.
    #[default]
    Auto,
    /// A child process on the host, in a scratch workspace folder.
    Process,
    /// A container of the configured image (`harness.image` or `harness.dockerfile`); an
    /// error when the engine does not answer.
    Docker,
}

impl std::str::FromStr for BackendChoice {
    type Err = UnknownChoice;

    fn from_str(text: &str) -> Result<BackendChoice, UnknownChoice> {
        match text {
            "auto" => Ok(BackendChoice::Auto),
            "process" => Ok(BackendChoice::Process),
            "docker" => Ok(BackendChoice::Docker),
            other => Err(UnknownChoice {
                value: other.to_owned(),
                kind: "backend",
                choices: "auto, process or docker",
            }),
        }
    }
}

/// `[validate]`: what `cargo clawtest validate` checks beyond the structure of each task.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ValidateConfig {
    /// Prove every task feasible with its oracle, as `--feasibility` does (default false).
    #[serde(default)]
    pub feasibility: bool,
}

/// `[generate]`: what `cargo clawtest generate` writes from a request (the command line's
/// `--request`, `--count`, `--services`, `--difficulty`, `--out`, `--seed` win).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct GenerateConfig {
    /// The request, one sentence: what the tasks should test.
    #[serde(default)]
    pub request: Option<String>,
    /// How many tasks to write (default 5).
    #[serde(default = "default_generate_count")]
    pub count: u32,
    /// The services to use instead of the ones the parser picks.
    #[serde(default)]
    pub services: Vec<String>,
    /// `easy`, `medium` or `hard`, instead of the parser's choice.
    #[serde(default)]
    pub difficulty: Option<Difficulty>,
    /// The folder the tasks are written to, relative to the suite root (default
    /// `tasks/generated`).
    #[serde(default = "default_generate_out")]
    pub out: PathBuf,
    /// The seed of the service-order shuffles (default 1).
    #[serde(default = "default_generate_seed")]
    pub seed: u64,
    /// The model asked (default `gpt-4o-mini`); its calls go through the gateway (`[llm]`).
    #[serde(default = "default_generate_model")]
    pub model: String,
    /// The wire format of the calls: `openai` (default) or `anthropic`.
    #[serde(default = "default_generate_provider")]
    pub provider: Provider,
    /// The prefix of the task ids and the cassette's name (`cassettes/generate-<name>.yaml`);
    /// default: the services, joined by `_`.
    #[serde(default)]
    pub name: Option<String>,
}

impl Default for GenerateConfig {
    fn default() -> GenerateConfig {
        GenerateConfig {
            request: None,
            count: default_generate_count(),
            services: Vec::new(),
            difficulty: None,
            out: default_generate_out(),
            seed: default_generate_seed(),
            model: default_generate_model(),
            provider: default_generate_provider(),
            name: None,
        }
    }
}

impl GenerateConfig {
    /// Whether `name` can prefix task ids and name a cassette: letters, digits, `_` and `-`,
    /// at most 60.
    pub fn is_name(name: &str) -> bool {
        !name.is_empty()
            && name.len() <= 60
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }
}

fn default_generate_count() -> u32 {
    5
}

fn default_generate_out() -> PathBuf {
    PathBuf::from("tasks/generated")
}

fn default_generate_seed() -> u64 {
    1
}

fn default_generate_model() -> String {
    "gpt-4o-mini".into()
}

fn default_generate_provider() -> Provider {
    Provider::OpenAi
}

/// `[report]`: outputs every run writes, as if given on the command line.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ReportConfig {
    /// The HTML report's folder, relative to the configuration (`--html DIR` wins).
    #[serde(default)]
    pub html: Option<PathBuf>,
}

/// `[docker]`: limits of each docker-sandbox container, and whether containers are reused.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DockerConfig {
    /// The container's memory limit in MiB (default 2048; at least 16).
    #[serde(default = "default_memory_mb")]
    pub memory_mb: u64,
    /// How many CPUs the container may use, fractions allowed (default 2).
    #[serde(default = "default_cpus")]
    pub cpus: f64,
    /// The most processes and threads the container may run (default 512; at least 8).
    #[serde(default = "default_pids")]
    pub pids: u32,
    /// Whether trials run one after another in worker containers kept for the run, with a
    /// read-only root file system (default true), or each in a container of its own, which
    /// may write its root file system (false). docs/sandbox.md says what each promises.
    #[serde(default = "default_reuse")]
    pub reuse: bool,
}

impl Default for DockerConfig {
    fn default() -> DockerConfig {
        DockerConfig {
            memory_mb: default_memory_mb(),
            cpus: default_cpus(),
            pids: default_pids(),
            reuse: default_reuse(),
        }
    }
}

fn default_reuse() -> bool {
    true
}

fn default_memory_mb() -> u64 {
    2048
}

fn default_cpus() -> f64 {
    2.0
}

fn default_pids() -> u32 {
    512
}

/// How the harness runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HarnessKind {
    /// `process`: `harness.command` is started for each trial, by `cargo clawtest run`.
    #[default]
    Process,
    /// `rust`: a Rust function registered with `clawtest::main!` or `#[clawtest::suite]`,
    /// run in-process by `cargo test`; `cargo clawtest run` refuses it.
    Rust,
}

/// A command written as a list of words or as one string.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum CommandLine {
    /// `["./agent", "--fast"]`: the words as given, no splitting.
    Words(Vec<String>),
    /// `"./agent --fast"`: split on whitespace (no shell quoting).
    Line(String),
}

impl CommandLine {
    /// The program and its arguments.
    pub(crate) fn words(&self) -> Vec<String> {
        match self {
            CommandLine::Words(words) => words.clone(),
            CommandLine::Line(line) => line.split_whitespace().map(str::to_string).collect(),
        }
    }
}

/// The score a trial must reach to pass when neither the task (`pass_threshold`) nor `[run]`
/// says otherwise (ClawEnvKit's threshold).
pub const DEFAULT_PASS_THRESHOLD: f64 = 0.75;

/// The most trials a task may run (`run.trials`, `--trials`): pass^k past a thousand says
/// nothing more, and a run plans every trial of every task before the first starts.
pub const MAX_TRIALS: u32 = 1000;

/// `[run]`: trials, parallelism, pass threshold.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// k: how many trials each task runs (default 3); a task passes only if all k pass.
    #[serde(default = "default_trials")]
    pub trials: u32,
    /// How many trials run at once; `None` means one per available core (`--jobs` overrides).
    #[serde(default)]
    pub jobs: Option<usize>,
    /// The final score a trial needs to pass, 0..=1, unless the task sets its own (default
    /// [`DEFAULT_PASS_THRESHOLD`]).
    #[serde(default = "default_threshold")]
    pub pass_threshold: f64,
    /// `auto` (the default), `process` or `docker`.
    #[serde(default)]
    pub backend: BackendChoice,
}

impl Default for RunConfig {
    fn default() -> RunConfig {
        RunConfig {
            trials: default_trials(),
            jobs: None,
            pass_threshold: default_threshold(),
            backend: BackendChoice::default(),
        }
    }
}

fn default_trials() -> u32 {
    3
}

fn default_threshold() -> f64 {
    DEFAULT_PASS_THRESHOLD
}

/// `[gates]`: suite-level thresholds that fail the run when not met.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Gates {
    /// Minimum mean final score over all trials.
    pub min_score: Option<f64>,
    /// Minimum mean robustness over all trials.
    pub min_robustness: Option<f64>,
    /// Minimum fraction of tasks that pass pass^k.
    pub min_pass_hat_k: Option<f64>,
    /// `[gates.min_recovery]`: per fault kind (`rate_limited`, `server_error`), the least
    /// share of the suite's injected faults of that kind the agent must recover from.
    #[serde(default)]
    pub min_recovery: BTreeMap<crate::fault::FaultKind, f64>,
    /// Against a baseline (`--baseline`): how far a task's mean score or robustness, or the
    /// suite's mean score, may drop before the run fails (default 0.05).
    pub baseline_tolerance: Option<f64>,
    /// `[gates.cells."<glob>"]`: thresholds each cell of a matrix the glob matches must hold.
    #[serde(default)]
    pub cells: BTreeMap<super::cell_gates::CellPattern, super::cell_gates::Thresholds>,
    /// `[[gates.change]]`: how far a measure may move from one cell to another.
    #[serde(default)]
    pub change: Vec<super::cell_gates::ChangeGate>,
}

/// The tolerance used when `baseline_tolerance` is not set.
const DEFAULT_BASELINE_TOLERANCE: f64 = 0.05;

impl Gates {
    /// These gates, with every unset one taken from `fallback` (command line over config).
    pub fn or(&self, fallback: &Gates) -> Gates {
        Gates {
            min_score: self.min_score.or(fallback.min_score),
            min_robustness: self.min_robustness.or(fallback.min_robustness),
            min_pass_hat_k: self.min_pass_hat_k.or(fallback.min_pass_hat_k),
            min_recovery: fallback
                .min_recovery
                .iter()
                .chain(&self.min_recovery)
                .map(|(kind, threshold)| (*kind, *threshold))
                .collect(),
            baseline_tolerance: self.baseline_tolerance.or(fallback.baseline_tolerance),
            // The matrix's gates are the configuration's only (no flag sets them).
            cells: if self.cells.is_empty() {
                fallback.cells.clone()
            } else {
                self.cells.clone()
            },
            change: if self.change.is_empty() {
                fallback.change.clone()
            } else {
                self.change.clone()
            },
        }
    }

    /// The thresholds these gates hold over the whole run.
    pub fn thresholds(&self) -> super::cell_gates::Thresholds {
        super::cell_gates::Thresholds {
            min_score: self.min_score,
            min_robustness: self.min_robustness,
            min_pass_hat_k: self.min_pass_hat_k,
            min_recovery: self.min_recovery.clone(),
        }
    }

    /// The baseline tolerance in force.
    pub(crate) fn tolerance(&self) -> f64 {
        self.baseline_tolerance
            .unwrap_or(DEFAULT_BASELINE_TOLERANCE)
    }
}

pub(super) fn default_tasks() -> Vec<String> {
    vec!["tasks/**/*.yaml".into(), "tasks/**/*.yml".into()]
}
