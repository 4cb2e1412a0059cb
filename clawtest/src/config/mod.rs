//! The suite's configuration: `clawtest.toml` at the suite root, or
//! `[workspace.metadata.clawtest]` in the Cargo workspace (read through cargo_metadata).
//! Parsed strictly (unknown keys are errors, with their location) into a [`Config`]: where it
//! is found and read ([`Config::load`], [`Config::optional`]) is here; its sections are in
//! `sections`, the checks across values in `check`, and the harness commands as they are
//! started in `harness_command`, the `[harness] files` templates in `harness_files`. The configuration only describes: what is built from it (the
//! judge, the sandbox, the gateway) is built by those modules.

mod cell_gates;
mod check;
mod choice;
mod harness_command;
mod harness_files;
mod llm;
mod matrix;
mod raw;
pub mod secrets;
mod sections;

use std::path::{Path, PathBuf};

use miette::{Diagnostic, NamedSource, SourceSpan};

pub use cell_gates::{CellPattern, ChangeGate, ChangeMeasure, Thresholds};
pub use choice::UnknownChoice;
pub use harness_files::{
    FileBase, HarnessFile, Placeholder, Template, TemplateError, TemplateValues,
};
pub use llm::{LlmConfig, Mode, Price, Provider, ProviderConfig, Redaction, ReplayConfig};
pub use matrix::{CellSpec, MatrixConfig, UNNAMED_HARNESS, UNNAMED_MODEL};
use raw::RawConfig;
pub use sections::{
    BackendChoice, CommandLine, DEFAULT_PASS_THRESHOLD, DockerConfig, FinalAnswer, FollowUp, Gates,
    GenerateConfig, HarnessConfig, HarnessKind, JudgeConfig, LimitsConfig, MAX_TRIALS,
    ReportConfig, RunConfig, Tier, ValidateConfig,
};

use crate::fault::FaultSettings;

/// The file name looked for in the current directory and its ancestors.
pub(crate) const FILE_NAME: &str = "clawtest.toml";

/// The resolved configuration of one suite.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where task globs, cassettes and relative harness paths are anchored.
    pub root: PathBuf,
    /// Where the configuration was read from (for messages).
    pub origin: String,
    /// `tasks`: globs of the task files, relative to `root` (default `tasks/**/*.yaml` and
    /// `tasks/**/*.yml`).
    pub tasks: Vec<String>,
    /// `[harness]`: how the agent under test is started (the unnamed harness; the defaults
    /// when the harnesses are named).
    pub harness: HarnessConfig,
    /// `[harness.<name>]`: the named harnesses, by name (empty for one unnamed `[harness]`).
    pub harnesses: std::collections::BTreeMap<String, HarnessConfig>,
    /// `[matrix]`: the models every harness is run with.
    pub matrix: MatrixConfig,
    /// `[run]`: trials, parallelism, pass threshold, backend.
    pub run: RunConfig,
    /// `[gates]`: suite-level thresholds that fail the run.
    pub gates: Gates,
    /// `[llm]`: where the harness's model calls are answered from.
    pub llm: LlmConfig,
    /// `[judge]`: who scores `llm_judge` components.
    pub judge: JudgeConfig,
    /// `[docker]`: the docker sandbox's per-container limits.
    pub docker: DockerConfig,
    /// `[validate]`: what `validate` checks beyond each task's structure.
    pub validate: ValidateConfig,
    /// `[limits]`: caps on what a trial sends to the host.
    pub limits: LimitsConfig,
    /// `[report]`: outputs every run writes (the HTML report's folder).
    pub report: ReportConfig,
    /// `[generate]`: what `generate --request` writes.
    pub generate: GenerateConfig,
    /// `[faults]`: the faults every task's service calls get unless the task says otherwise
    /// (default: ClawEnvKit's 25 %, its 429 / 500 / slow mix).
    pub faults: FaultSettings,
}

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error, Diagnostic)]
pub enum ConfigError {
    /// No configuration was given and none was found.
    #[error("no {FILE_NAME} in {} or its parents, and no [workspace.metadata.clawtest] in a Cargo workspace", start.display())]
    #[diagnostic(help(
        "write a starter suite here with `cargo clawtest init` (clawtest.toml, two tasks, a workflow), or pass --config PATH"
    ))]
    NotFound {
        /// The folder the search started from (upwards, then its Cargo workspace).
        start: PathBuf,
    },
    /// The configuration file exists (or was given) but could not be read.
    #[error("cannot read {}: {message}", path.display())]
    Unreadable {
        /// The file, as given or found.
        path: PathBuf,
        /// The I/O error, in words.
        message: String,
    },
    /// `clawtest.toml` is not TOML of the expected shape (a syntax error, an unknown key, a
    /// value of the wrong type), located in the file.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Invalid(Box<InvalidFile>),
    /// `[workspace.metadata.clawtest]` is not of the expected shape.
    #[error("[workspace.metadata.clawtest] in {}: {message}", manifest.display())]
    InvalidMetadata {
        /// The workspace's root `Cargo.toml`.
        manifest: PathBuf,
        /// What serde found wrong with the table.
        message: String,
    },
    /// A value is well-formed but cannot be used (out of range, contradicting another, a
    /// harness command that is missing or cannot be expanded).
    #[error("{field} in {origin}: {message}")]
    Value {
        /// Where the configuration came from ([`Config::origin`]).
        origin: String,
        /// The key, as a dotted path (`run.trials`, `harness.command`).
        field: String,
        /// What is wrong and what is accepted.
        message: String,
    },
}

/// A configuration file that is not valid TOML of the expected shape, located.
#[derive(Debug, thiserror::Error, Diagnostic)]
#[error("{}: {message}", path.display())]
pub struct InvalidFile {
    /// The configuration file.
    pub path: PathBuf,
    /// The TOML parser's message, without its own excerpt (miette shows one).
    pub message: String,
    #[source_code]
    source_code: NamedSource<String>,
    #[label("here")]
    span: Option<SourceSpan>,
    /// 1-based line of the problem, when known.
    pub line: Option<usize>,
}

impl Config {
    /// The configuration a command that needs one uses: the file given (`--config PATH`), else
    /// the nearest `clawtest.toml` from `start` upwards, else the Cargo workspace's
    /// `[workspace.metadata.clawtest]`.
    pub fn load(explicit: Option<&Path>, start: &Path) -> Result<Config, ConfigError> {
        match explicit {
            Some(path) => Config::from_file(path),
            None => Config::discover(start),
        }
    }

    /// The configuration of a command that can do without one (`grade --audit`, `merge`,
    /// `validate PATH…`): `None` when none is given and none is found from `start`. A file that
    /// is given, or one that is found, must still be valid: an error is never taken for "none".
    pub fn optional(explicit: Option<&Path>, start: &Path) -> Result<Option<Config>, ConfigError> {
        match Config::load(explicit, start) {
            Ok(config) => Ok(Some(config)),
            Err(ConfigError::NotFound { .. }) if explicit.is_none() => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// The configuration of an empty `clawtest.toml` anchored at `root`: every default.
    pub fn defaults(root: PathBuf) -> Config {
        Config {
            root,
            origin: "(defaults)".into(),
            tasks: sections::default_tasks(),
            harness: HarnessConfig::default(),
            harnesses: Default::default(),
            matrix: MatrixConfig::default(),
            run: RunConfig::default(),
            gates: Gates::default(),
            llm: LlmConfig::default(),
            judge: JudgeConfig::default(),
            docker: DockerConfig::default(),
            validate: ValidateConfig::default(),
            limits: LimitsConfig::default(),
            report: ReportConfig::default(),
            generate: GenerateConfig::default(),
            faults: FaultSettings::default(),
        }
    }

    /// Finds the configuration for a run started in `start`: the nearest `clawtest.toml`
    /// upwards, else the Cargo workspace's metadata table.
    pub(crate) fn discover(start: &Path) -> Result<Config, ConfigError> {
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
        check::check(&raw, &origin)?;
        let (harness, harnesses) = match raw.harness {
            matrix::Harnesses::One(harness) => (*harness, Default::default()),
            matrix::Harnesses::Named(named) => (HarnessConfig::default(), named),
        };
        let config = Config {
            root,
            origin,
            tasks: raw.tasks,
            harness,
            harnesses,
            matrix: raw.matrix,
            run: raw.run,
            gates: raw.gates,
            llm: raw.llm,
            judge: raw.judge,
            docker: raw.docker,
            validate: raw.validate,
            limits: raw.limits,
            report: raw.report,
            generate: raw.generate,
            faults: raw.faults,
        };
        // The matrix's gates name cells, known once the harnesses are settled.
        cell_gates::check(&config)?;
        Ok(config)
    }

    /// The cassette folder, absolute.
    pub(crate) fn cassettes(&self) -> PathBuf {
        self.root.join(&self.llm.cassettes)
    }
}

/// `path` made absolute against the current directory (as it is, if that cannot be read).
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod matrix_tests;
