//! The suite's configuration: `clawtest.toml` at the suite root, or
//! `[workspace.metadata.clawtest]` in the Cargo workspace (read through cargo_metadata).
//! Parsed strictly (unknown keys are errors, with their location) into a [`Config`].

use std::path::{Path, PathBuf};

use miette::{Diagnostic, NamedSource, SourceSpan};
use serde::Deserialize;

use crate::gateway::Mode;

/// The file name looked for in the current directory and its ancestors.
pub const FILE_NAME: &str = "clawtest.toml";

/// The resolved configuration of one suite.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where task globs, cassettes and relative harness paths are anchored.
    pub root: PathBuf,
    /// Where the configuration was read from (for messages).
    pub origin: String,
    pub tasks: Vec<String>,
    pub harness: HarnessConfig,
    pub run: RunConfig,
    pub gates: Gates,
    pub llm: LlmConfig,
    pub judge: JudgeConfig,
    pub docker: DockerConfig,
}

/// `[judge]`: the LLM judge of `llm_judge` components.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeConfig {
    /// Folder of cached judge answers, relative to the suite root. Commit it: CI then grades
    /// `llm_judge` components from it, free and deterministic.
    #[serde(default = "default_judge_cache")]
    pub cache: PathBuf,
    /// Who answers questions the cache lacks: `openai` (chat completions) or `anthropic`
    /// (messages). Unset: only the cache answers.
    #[serde(default)]
    pub provider: Option<JudgeProvider>,
    /// The provider's base URL (the `/v1/...` path is appended).
    #[serde(default)]
    pub base_url: Option<String>,
    /// The judge model.
    #[serde(default)]
    pub model: Option<String>,
    /// The NAME of the variable holding the key (never the key itself).
    #[serde(default)]
    pub api_key_env: Option<String>,
}

/// The wire format of the judge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JudgeProvider {
    Openai,
    Anthropic,
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
#[derive(Debug, Clone, Default, Deserialize)]
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

/// Which sandbox runs the harness.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendChoice {
    /// Docker when the engine answers and an image is configured, else process.
    #[default]
    Auto,
    Process,
    Docker,
}

impl std::str::FromStr for BackendChoice {
    type Err = String;

    fn from_str(text: &str) -> Result<BackendChoice, String> {
        match text {
            "auto" => Ok(BackendChoice::Auto),
            "process" => Ok(BackendChoice::Process),
            "docker" => Ok(BackendChoice::Docker),
            other => Err(format!(
                "`{other}` is not a backend: use auto, process or docker"
            )),
        }
    }
}

/// `[docker]`: limits of each docker-sandbox container.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DockerConfig {
    #[serde(default = "default_memory_mb")]
    pub memory_mb: u64,
    #[serde(default = "default_cpus")]
    pub cpus: f64,
    #[serde(default = "default_pids")]
    pub pids: u32,
}

impl Default for DockerConfig {
    fn default() -> DockerConfig {
        DockerConfig {
            memory_mb: default_memory_mb(),
            cpus: default_cpus(),
            pids: default_pids(),
        }
    }
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
    #[default]
    Process,
    Rust,
}

/// A command written as a list of words or as one string.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum CommandLine {
    Words(Vec<String>),
    Line(String),
}

impl CommandLine {
    pub fn words(&self) -> Vec<String> {
        match self {
            CommandLine::Words(words) => words.clone(),
            CommandLine::Line(line) => line.split_whitespace().map(str::to_string).collect(),
        }
    }
}

/// `[run]`: trials, parallelism, pass threshold.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    #[serde(default = "default_trials")]
    pub trials: u32,
    #[serde(default)]
    pub jobs: Option<usize>,
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
    0.75
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
    /// Against a baseline (`--baseline`): how far a task's mean score or robustness, or the
    /// suite's mean score, may drop before the run fails (default 0.05).
    pub baseline_tolerance: Option<f64>,
}

/// The tolerance used when `baseline_tolerance` is not set.
pub const DEFAULT_BASELINE_TOLERANCE: f64 = 0.05;

impl Gates {
    /// These gates, with every unset one taken from `fallback` (command line over config).
    pub fn or(&self, fallback: &Gates) -> Gates {
        Gates {
            min_score: self.min_score.or(fallback.min_score),
            min_robustness: self.min_robustness.or(fallback.min_robustness),
            min_pass_hat_k: self.min_pass_hat_k.or(fallback.min_pass_hat_k),
            baseline_tolerance: self.baseline_tolerance.or(fallback.baseline_tolerance),
        }
    }

    /// The baseline tolerance in force.
    pub fn tolerance(&self) -> f64 {
        self.baseline_tolerance
            .unwrap_or(DEFAULT_BASELINE_TOLERANCE)
    }
}

/// `[llm]`: the model gateway.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    #[serde(default)]
    pub mode: Mode,
    /// Folder of cassettes, relative to the suite root.
    #[serde(default = "default_cassettes")]
    pub cassettes: PathBuf,
    /// `[llm.openai]`: where `live`/`record` send chat-completions and responses calls.
    #[serde(default)]
    pub openai: Option<ProviderConfig>,
    /// `[llm.anthropic]`: where `live`/`record` send messages calls.
    #[serde(default)]
    pub anthropic: Option<ProviderConfig>,
    /// Prices per model (`[llm.prices."gpt-4o-mini"]`), for cost reports and `max_cost_usd`.
    #[serde(default)]
    pub prices: std::collections::BTreeMap<String, crate::gateway::Price>,
    /// Stop starting trials once the run's model calls cost this much (US dollars).
    #[serde(default)]
    pub max_cost_usd: Option<f64>,
    /// Extra attempts on an upstream 429 or 5xx.
    #[serde(default = "default_retries")]
    pub retries: u32,
    /// Delay before the first retry, doubled before each further one.
    #[serde(default = "default_backoff")]
    pub retry_backoff_ms: u64,
}

/// One provider for `live` and `record` mode.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// e.g. `http://127.0.0.1:8080`; the harness's `/v1/...` path is appended.
    pub base_url: String,
    /// The NAME of the host variable holding the API key (never the key itself).
    #[serde(default)]
    pub api_key_env: Option<String>,
}

impl Default for LlmConfig {
    fn default() -> LlmConfig {
        LlmConfig {
            mode: Mode::default(),
            cassettes: default_cassettes(),
            openai: None,
            anthropic: None,
            prices: Default::default(),
            max_cost_usd: None,
            retries: default_retries(),
            retry_backoff_ms: default_backoff(),
        }
    }
}

fn default_retries() -> u32 {
    3
}

fn default_backoff() -> u64 {
    500
}

fn default_cassettes() -> PathBuf {
    PathBuf::from("cassettes")
}

fn default_tasks() -> Vec<String> {
    vec!["tasks/**/*.yaml".into(), "tasks/**/*.yml".into()]
}

/// The file format: every table optional.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default = "default_tasks")]
    tasks: Vec<String>,
    #[serde(default)]
    harness: HarnessConfig,
    #[serde(default)]
    run: RunConfig,
    #[serde(default)]
    gates: Gates,
    #[serde(default)]
    llm: LlmConfig,
    #[serde(default)]
    judge: JudgeConfig,
    #[serde(default)]
    docker: DockerConfig,
}

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error, Diagnostic)]
pub enum ConfigError {
    #[error("no {FILE_NAME} in {} or its parents, and no [workspace.metadata.clawtest] in a Cargo workspace", start.display())]
    #[diagnostic(help(
        "create one with `tasks = [\"tasks/**/*.yaml\"]` and a `[harness] command`, or pass --config PATH"
    ))]
    NotFound { start: PathBuf },
    #[error("cannot read {}: {message}", path.display())]
    Unreadable { path: PathBuf, message: String },
    #[error(transparent)]
    #[diagnostic(transparent)]
    Invalid(Box<InvalidFile>),
    #[error("[workspace.metadata.clawtest] in {}: {message}", manifest.display())]
    InvalidMetadata { manifest: PathBuf, message: String },
    #[error("{field} in {origin}: {message}")]
    Value {
        origin: String,
        field: String,
        message: String,
    },
}

/// A configuration file that is not valid TOML of the expected shape, located.
#[derive(Debug, thiserror::Error, Diagnostic)]
#[error("{}: {message}", path.display())]
pub struct InvalidFile {
    pub path: PathBuf,
    pub message: String,
    #[source_code]
    source_code: NamedSource<String>,
    #[label("here")]
    span: Option<SourceSpan>,
    /// 1-based line of the problem, when known.
    pub line: Option<usize>,
}

impl Config {
    /// Finds the configuration for a run started in `start`: the nearest `clawtest.toml`
    /// upwards, else the Cargo workspace's metadata table.
    pub fn discover(start: &Path) -> Result<Config, ConfigError> {
        for folder in start.ancestors() {
            let candidate = folder.join(FILE_NAME);
            if candidate.is_file() {
                return Config::from_file(&candidate);
            }
        }
        Config::from_cargo_metadata(start)
    }

    /// Reads an explicit `clawtest.toml`.
    pub fn from_file(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Unreadable {
            path: path.to_path_buf(),
            message: error.to_string(),
        })?;
        let root = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let root = if root.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            root
        };
        Config::from_text(&text, path, absolute(&root))
    }

    /// Parses configuration text that was read from `path`, anchored at `root`.
    pub fn from_text(text: &str, path: &Path, root: PathBuf) -> Result<Config, ConfigError> {
        let raw: RawConfig = toml::from_str(text).map_err(|error| {
            let span = error.span();
            let line = span
                .as_ref()
                .map(|range| text[..range.start.min(text.len())].matches('\n').count() + 1);
            ConfigError::Invalid(Box::new(InvalidFile {
                path: path.to_path_buf(),
                message: error.message().to_string(),
                source_code: NamedSource::new(path.display().to_string(), text.to_string()),
                span: span.map(|range| SourceSpan::from((range.start, range.len().max(1)))),
                line,
            }))
        })?;
        Config::from_raw(raw, root, path.display().to_string())
    }

    fn from_cargo_metadata(start: &Path) -> Result<Config, ConfigError> {
        let metadata = cargo_metadata::MetadataCommand::new()
            .no_deps()
            .current_dir(start)
            .exec()
            .map_err(|_| ConfigError::NotFound {
                start: start.to_path_buf(),
            })?;
        let manifest = metadata
            .workspace_root
            .join("Cargo.toml")
            .into_std_path_buf();
        let Some(table) = metadata.workspace_metadata.get("clawtest") else {
            return Err(ConfigError::NotFound {
                start: start.to_path_buf(),
            });
        };
        let raw: RawConfig = serde_json::from_value(table.clone()).map_err(|error| {
            ConfigError::InvalidMetadata {
                manifest: manifest.clone(),
                message: error.to_string(),
            }
        })?;
        Config::from_raw(
            raw,
            metadata.workspace_root.into_std_path_buf(),
            format!("[workspace.metadata.clawtest] in {}", manifest.display()),
        )
    }

    fn from_raw(raw: RawConfig, root: PathBuf, origin: String) -> Result<Config, ConfigError> {
        let value_error = |field: &str, message: String| ConfigError::Value {
            origin: origin.clone(),
            field: field.into(),
            message,
        };
        if raw.run.trials == 0 {
            return Err(value_error("run.trials", "must be at least 1".into()));
        }
        if !(0.0..=1.0).contains(&raw.run.pass_threshold) {
            return Err(value_error(
                "run.pass_threshold",
                format!("must be between 0 and 1, found {}", raw.run.pass_threshold),
            ));
        }
        for (field, gate) in [
            ("gates.min_score", raw.gates.min_score),
            ("gates.min_robustness", raw.gates.min_robustness),
            ("gates.min_pass_hat_k", raw.gates.min_pass_hat_k),
            ("gates.baseline_tolerance", raw.gates.baseline_tolerance),
        ] {
            if let Some(value) = gate
                && !(0.0..=1.0).contains(&value)
            {
                return Err(value_error(
                    field,
                    format!("must be between 0 and 1, found {value}"),
                ));
            }
        }
        if raw.harness.image.is_some() && raw.harness.dockerfile.is_some() {
            return Err(value_error(
                "harness.dockerfile",
                "give either harness.image or harness.dockerfile, not both".into(),
            ));
        }
        if raw.docker.memory_mb < 16 {
            return Err(value_error(
                "docker.memory_mb",
                format!("must be at least 16, found {}", raw.docker.memory_mb),
            ));
        }
        if !(raw.docker.cpus > 0.0 && raw.docker.cpus <= 1024.0) {
            return Err(value_error(
                "docker.cpus",
                format!("must be above 0, found {}", raw.docker.cpus),
            ));
        }
        if raw.docker.pids < 8 {
            return Err(value_error(
                "docker.pids",
                format!("must be at least 8, found {}", raw.docker.pids),
            ));
        }
        if let Some(limit) = raw.llm.max_cost_usd
            && !(limit.is_finite() && limit > 0.0)
        {
            return Err(value_error(
                "llm.max_cost_usd",
                format!("must be a positive number of US dollars, found {limit}"),
            ));
        }
        for (model, price) in &raw.llm.prices {
            if !(price.input_per_million >= 0.0 && price.output_per_million >= 0.0) {
                return Err(value_error(
                    &format!("llm.prices.\"{model}\""),
                    "prices must be zero or more US dollars per million tokens".into(),
                ));
            }
        }
        if raw.judge.provider.is_some() && raw.judge.model.as_deref().is_none_or(str::is_empty) {
            return Err(value_error(
                "judge.model",
                "a judge provider needs the model to ask, e.g. `model = \"gpt-4o-mini\"`".into(),
            ));
        }
        if raw.tasks.is_empty() {
            return Err(value_error(
                "tasks",
                "needs at least one glob, e.g. \"tasks/**/*.yaml\"".into(),
            ));
        }
        for pattern in &raw.tasks {
            if let Err(error) = globset::Glob::new(pattern) {
                return Err(value_error(
                    "tasks",
                    format!("`{pattern}` is not a valid glob: {error}"),
                ));
            }
        }
        Ok(Config {
            root,
            origin,
            tasks: raw.tasks,
            harness: raw.harness,
            run: raw.run,
            gates: raw.gates,
            llm: raw.llm,
            judge: raw.judge,
            docker: raw.docker,
        })
    }

    /// The harness command with `${CARGO_TARGET_DIR}` expanded and a relative program path
    /// (one containing a `/`) anchored at the suite root.
    pub fn harness_command(&self) -> Result<Vec<String>, ConfigError> {
        if self.harness.kind == HarnessKind::Rust {
            return Err(ConfigError::Value {
                origin: self.origin.clone(),
                field: "harness.kind".into(),
                message: "is \"rust\": the harness is a Rust function that runs inside the crate's tests; run them with `cargo test` (see `clawtest::main!`)".into(),
            });
        }
        let Some(command) = &self.harness.command else {
            return Err(ConfigError::Value {
                origin: self.origin.clone(),
                field: "harness.command".into(),
                message: "no harness command: say how to start your agent, e.g. `command = [\"./my-agent\"]`".into(),
            });
        };
        self.expand(command, "harness.command")
    }

    /// The harness command as the docker backend runs it: the words as written, a program
    /// inside the image (no host path anchoring or expansion).
    pub fn harness_command_in_image(&self) -> Result<Vec<String>, ConfigError> {
        let words = self
            .harness
            .command
            .as_ref()
            .map(CommandLine::words)
            .unwrap_or_default();
        if words.is_empty() {
            return Err(ConfigError::Value {
                origin: self.origin.clone(),
                field: "harness.command".into(),
                message: "no harness command: say how to start your agent inside the image, e.g. `command = [\"/usr/local/bin/my-agent\"]`".into(),
            });
        }
        Ok(words)
    }

    /// The optional build command, expanded like [`Config::harness_command`].
    pub fn harness_build(&self) -> Result<Option<Vec<String>>, ConfigError> {
        self.harness
            .build
            .as_ref()
            .map(|build| self.expand(build, "harness.build"))
            .transpose()
    }

    fn expand(&self, command: &CommandLine, field: &str) -> Result<Vec<String>, ConfigError> {
        let mut words = command.words();
        if words.is_empty() {
            return Err(ConfigError::Value {
                origin: self.origin.clone(),
                field: field.into(),
                message: "is empty".into(),
            });
        }
        if words
            .iter()
            .any(|word| word.contains("${CARGO_TARGET_DIR}"))
        {
            let target = self.cargo_target_dir()?;
            for word in &mut words {
                *word = word.replace("${CARGO_TARGET_DIR}", &target.display().to_string());
            }
        }
        let program = Path::new(&words[0]);
        if program.is_relative() && words[0].contains('/') {
            words[0] = self.root.join(program).display().to_string();
        }
        Ok(words)
    }

    fn cargo_target_dir(&self) -> Result<PathBuf, ConfigError> {
        if let Some(from_environment) = std::env::var_os("CARGO_TARGET_DIR") {
            return Ok(absolute(&self.root.join(from_environment)));
        }
        let metadata = cargo_metadata::MetadataCommand::new()
            .no_deps()
            .current_dir(&self.root)
            .exec()
            .map_err(|error| ConfigError::Value {
                origin: self.origin.clone(),
                field: "harness.command".into(),
                message: format!(
                    "uses ${{CARGO_TARGET_DIR}} but `cargo metadata` failed in {}: {error}",
                    self.root.display()
                ),
            })?;
        Ok(metadata.target_directory.into_std_path_buf())
    }

    /// The judge for this suite: its cache folder in front of the configured judge.
    pub fn judge(&self) -> std::sync::Arc<dyn crate::judge::Judge> {
        use crate::gateway::upstream::{Provider, RetryPolicy};
        let inner: std::sync::Arc<dyn crate::judge::Judge> = match self.judge.provider {
            None => std::sync::Arc::new(crate::judge::NoJudge),
            Some(provider) => {
                let (provider, default_url) = match provider {
                    JudgeProvider::Openai => (Provider::OpenAi, "https://api.openai.com"),
                    JudgeProvider::Anthropic => (Provider::Anthropic, "https://api.anthropic.com"),
                };
                let retry = RetryPolicy {
                    retries: self.llm.retries,
                    backoff: std::time::Duration::from_millis(self.llm.retry_backoff_ms),
                };
                std::sync::Arc::new(crate::judge::http::HttpJudge::new(
                    provider,
                    self.judge.base_url.as_deref().unwrap_or(default_url),
                    self.judge.model.as_deref().unwrap_or_default(),
                    self.judge.api_key_env.as_deref(),
                    retry,
                ))
            }
        };
        std::sync::Arc::new(crate::judge::CachedJudge::new(
            self.root.join(&self.judge.cache),
            inner,
        ))
    }

    /// The cassette folder, absolute.
    pub fn cassettes(&self) -> PathBuf {
        self.root.join(&self.llm.cassettes)
    }
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::from_text(text, Path::new("clawtest.toml"), PathBuf::from("/suite"))
    }

    #[test]
    fn defaults_follow_the_design() {
        let config = parse("[harness]\ncommand = \"./agent --fast\"\n").unwrap();
        assert_eq!(config.run.trials, 3);
        assert_eq!(config.run.pass_threshold, 0.75);
        assert_eq!(config.tasks, ["tasks/**/*.yaml", "tasks/**/*.yml"]);
        assert_eq!(
            config.harness_command().unwrap(),
            ["/suite/./agent", "--fast"]
        );
        assert_eq!(config.llm.mode, Mode::Replay);
    }

    #[test]
    fn an_unknown_key_is_located() {
        let error = parse("tasks = [\"t/*.yaml\"]\n[run]\ntrails = 3\n").unwrap_err();
        match error {
            ConfigError::Invalid(invalid) => {
                assert!(invalid.message.contains("trails"), "{}", invalid.message);
                assert_eq!(invalid.line, Some(3));
            }
            other => panic!("expected a located error, got {other:?}"),
        }
    }

    #[test]
    fn docker_keys_parse_and_are_checked() {
        let config = parse(
            "[harness]\ncommand = \"/agent\"\nimage = \"agent:1\"\n[run]\nbackend = \"docker\"\n[docker]\npids = 64\n",
        )
        .unwrap();
        assert_eq!(config.run.backend, BackendChoice::Docker);
        assert_eq!(config.harness.image.as_deref(), Some("agent:1"));
        assert_eq!(config.docker.pids, 64);
        assert_eq!(config.docker.memory_mb, 2048);
        assert_eq!(config.harness_command_in_image().unwrap(), ["/agent"]);
        let error = parse("[run]\nbackend = \"vm\"\n").unwrap_err();
        assert!(error.to_string().contains("vm"), "{error}");
        let error = parse("[harness]\nimage = \"a\"\ndockerfile = \"Dockerfile\"\n").unwrap_err();
        assert!(error.to_string().contains("harness.dockerfile"), "{error}");
    }

    #[test]
    fn the_llm_table_reads_providers_prices_and_budget() {
        let config = parse(
            "[llm]\nmode = \"record\"\nmax_cost_usd = 2.5\n[llm.openai]\nbase_url = \"http://127.0.0.1:9\"\napi_key_env = \"OPENAI_API_KEY\"\n[llm.prices.\"gpt-4o-mini\"]\ninput_per_million = 0.15\noutput_per_million = 0.6\n",
        )
        .unwrap();
        assert_eq!(config.llm.mode, Mode::Record);
        assert_eq!(config.llm.max_cost_usd, Some(2.5));
        assert_eq!(
            config.llm.openai.unwrap().api_key_env.as_deref(),
            Some("OPENAI_API_KEY")
        );
        assert_eq!(config.llm.prices["gpt-4o-mini"].output_per_million, 0.6);
        let error = parse("[llm]\nmax_cost_usd = -1\n").unwrap_err();
        assert!(error.to_string().contains("llm.max_cost_usd"), "{error}");
    }

    #[test]
    fn out_of_range_gates_are_rejected() {
        let error = parse("[gates]\nmin_score = 7\n").unwrap_err();
        assert!(error.to_string().contains("gates.min_score"), "{error}");
    }
}
