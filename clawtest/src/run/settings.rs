//! A run's settings, resolved once from the configuration and the command line (a
//! [`Request`]) for every way a run starts (`cargo clawtest run`, `cargo clawtest run
//! --oracle`, a `cargo test` task test): the `RunOptions`, the [`HarnessSource`] (the
//! configured command, the oracle, or a Rust harness in-process: where the harness comes from
//! is decided here and nowhere else), `HarnessLaunch` (how it starts), the `ModelAccess` (where
//! model answers come from, at what price, within what budget) and the cassette folder.
//! Everything that can stop a run before its first trial is a [`SessionError`].

use std::path::PathBuf;
use std::sync::Arc;

use super::partition::Partition;
use crate::config::Mode;
use crate::config::{Config, ConfigError, Gates};
use crate::discover::DiscoverError;
use crate::llm::ModelAccess;
use crate::llm::access::AccessError;
use crate::report::snapshots::{self, UpdateMode};
use crate::results::RunSummary;
use crate::sandbox::BackendKind;

/// What the command line adds to (or overrides in) the configuration.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// Explicit task files or folders instead of the configured globs.
    pub paths: Vec<PathBuf>,
    /// Substrings of task ids or paths; empty runs all.
    pub filters: Vec<String>,
    /// `--trials`, overriding `run.trials`.
    pub trials: Option<u32>,
    /// `--jobs`, overriding `run.jobs` (else two per CPU).
    pub jobs: Option<usize>,
    /// The gate thresholds given on the command line, over `[gates]`.
    pub gates: Gates,
    /// Skip `harness.build`.
    pub no_build: bool,
    /// Run only this shard of the selected tasks.
    pub partition: Option<Partition>,
    /// Results to compare against; ignored for a shard (merge compares the whole).
    pub baseline: Option<RunSummary>,
    /// `--backend`, overriding `run.backend`.
    pub backend: Option<crate::config::BackendChoice>,
    /// Overrides `llm.max_cost_usd`.
    pub max_cost_usd: Option<f64>,
    /// `--mode`, overriding `llm.mode`.
    pub mode: Option<Mode>,
    /// `--cassettes`, overriding `llm.cassettes` (relative to the current folder).
    pub cassettes: Option<PathBuf>,
    /// `--force`: let record mode replace a cassette with one of fewer trials.
    pub force: bool,
    /// `--snapshots`: compare each task's grade breakdown with `snapshots/<task>.snap` under the
    /// suite root, as this `INSTA_UPDATE` mode asks, before the run's status is decided.
    pub snapshots: Option<UpdateMode>,
    /// `--oracle`: every trial's harness is the task's oracle, played by this program's
    /// `oracle-agent` command (clawtest's own binary); no model, no cassettes, no build.
    pub oracle: Option<PathBuf>,
    /// `--variants N`: each selected task is replaced by its variants, generated in memory
    /// (the threshold of the options is the suite's).
    pub variants: Option<crate::variants::Options>,
    /// `--error-rate X`, overriding `[faults] rate` (a task's own `error_injection.rate`
    /// still wins).
    pub error_rate: Option<f64>,
    /// The cell of a matrix this run is (`session::cell_runs`): its cassettes and snapshots
    /// are in `<harness>/<model>/` of their folders. `None` for a suite of one harness.
    pub cell: Option<crate::config::CellSpec>,
    /// `--allow-host-commands`: on the process backend, the commands of variants run on the
    /// host (`sandbox::commands`); without it they do not run at all.
    pub allow_host_commands: bool,
}

/// Why a run could not start.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum SessionError {
    /// The configuration cannot be used.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Config(#[from] ConfigError),
    /// The task globs or paths cannot be searched.
    #[error(transparent)]
    Discover(#[from] DiscoverError),
    /// Nothing was selected: no task file matched, or the filters left none.
    #[error("no task matched{}: looked for {} under {}", filters_text(.filters), .patterns.join(", "), .root.display())]
    #[diagnostic(help("check the `tasks` globs in the configuration, or the filters given"))]
    NoTasks {
        /// The suite root the globs are relative to.
        root: PathBuf,
        /// The `tasks` globs of the configuration.
        patterns: Vec<String>,
        /// The command line's filters, if any.
        filters: Vec<String>,
    },
    /// The configuration gives no model access (no provider, a key not set, a bad address).
    #[error(transparent)]
    #[diagnostic(transparent)]
    Access(#[from] AccessError),
    /// Record mode would replace a cassette with one recording fewer trials.
    #[error(
        "recording {trials} trial(s) would replace {}, which records {recorded}", path.display()
    )]
    #[diagnostic(help(
        "run with --trials {recorded} (or more) to keep every recorded trial, or pass --force to replace it"
    ))]
    WouldShrink {
        /// The cassette file.
        path: PathBuf,
        /// Trials it records now.
        recorded: usize,
        /// Trials the run would record.
        trials: u32,
    },
    /// `--variants` gave no variant of any selected task: each was refused or had nothing to
    /// vary, so a run would check nothing.
    #[error("no variant to run: none of the {tasks} selected task(s) gave one\n{}", .reasons.join("\n"))]
    #[diagnostic(help(
        "each line says why a task gave none; a variant whose commands must be proven runs with --backend docker, or on this host with --allow-host-commands"
    ))]
    NoVariants {
        /// How many tasks were asked for variants.
        tasks: usize,
        /// Why each task gave none, one line each (`PATH: variant `ID` not run: …`).
        reasons: Vec<String>,
    },
    /// `harness.build` could not start or failed (its own output went to stderr as it ran).
    #[error("{0}")]
    #[diagnostic(help("fix the build, or run with --no-build to use what is already built"))]
    Build(String),
}

fn filters_text(filters: &[String]) -> String {
    if filters.is_empty() {
        String::new()
    } else {
        format!(" the filter(s) {}", filters.join(", "))
    }
}

/// The choices of one run (config merged with the command line).
#[derive(Debug, Clone)]
pub(crate) struct RunOptions {
    /// Trials per task (k); 0 runs one.
    pub(crate) trials: u32,
    /// How many trials run at once; 0 runs one.
    pub(crate) jobs: usize,
    /// The final score a trial needs to pass, for tasks without their own `pass_threshold`.
    pub(crate) pass_threshold: f64,
    /// The suite-level thresholds the summary checks.
    pub(crate) gates: Gates,
    /// The suite's faults (`[faults]`, its rate replaced by `--error-rate`), for tasks
    /// without their own `error_injection`.
    pub(crate) faults: crate::fault::FaultSettings,
    /// Results to compare against (`--baseline`); regressions fail the run.
    pub(crate) baseline: Option<Box<RunSummary>>,
    /// Compare each task's grade breakdown with the snapshots in this folder (`--snapshots`),
    /// as `INSTA_UPDATE` asks; a change fails the run before anything reports its status.
    pub(crate) snapshots: Option<(PathBuf, UpdateMode)>,
}

/// How to start the harness.
#[derive(Debug, Clone)]
pub(crate) struct HarnessLaunch {
    /// The program and its arguments (`harness.command`, as the sandbox names it).
    pub(crate) command: Vec<String>,
    /// `harness.env` names with their host values.
    pub(crate) passthrough: Vec<(String, String)>,
    /// The tool surfaces the harness gets.
    pub(crate) tier: crate::config::Tier,
    /// The exit codes of a harness that ran normally (`harness.success_exit_codes`).
    pub(crate) success_exit_codes: Vec<i32>,
    /// Where the final answer is read from (`harness.answer`).
    pub(crate) answer: crate::config::FinalAnswer,
    /// How a closed loop's follow-up reaches the harness (`harness.follow_up`; the oracle's
    /// and an in-process harness's are restarted).
    pub(crate) follow_up: crate::config::FollowUp,
    /// The caps on what a trial sends to the host (`[limits]`).
    pub(crate) limits: crate::config::LimitsConfig,
    /// `harness.model`, given as `CLAWTEST_MODEL` and `{model}`.
    pub(crate) model: Option<String>,
    /// `[harness] files`, read and checked.
    pub(crate) files: Vec<crate::config::HarnessFile>,
}

/// Where every trial's harness comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HarnessSource {
    /// `harness.command` (inside an image, as the image names it), built by `harness.build`.
    Configured,
    /// `run --oracle`: the task's oracle, played by this program (clawtest's own binary, at
    /// this path); no model, no cassette, no build.
    Oracle(PathBuf),
    /// A Rust harness run in-process (`clawtest::main!(harness = …)`), by its name.
    InProcess(String),
}

impl HarnessSource {
    /// The source a command-line request asks for: the oracle with `--oracle`, else the
    /// configured harness.
    pub fn of(request: &Request) -> HarnessSource {
        match &request.oracle {
            Some(program) => HarnessSource::Oracle(program.clone()),
            None => HarnessSource::Configured,
        }
    }

    /// Whether the harness calls a model: the oracle does not, so nothing is forwarded or
    /// recorded and no cassette is read, whatever `[llm]` or `--mode` says.
    pub fn calls_models(&self) -> bool {
        !matches!(self, HarnessSource::Oracle(_))
    }

    /// Whether `harness.build` builds this harness.
    pub fn is_built(&self) -> bool {
        matches!(self, HarnessSource::Configured)
    }

    /// The command the backend starts: inside a container the configured command names a
    /// program of the image, not a host path.
    fn command(&self, config: &Config, backend: BackendKind) -> Result<Vec<String>, ConfigError> {
        match (self, backend) {
            (HarnessSource::Configured, BackendKind::Container) => {
                config.harness_command_in_image()
            }
            (HarnessSource::Configured, BackendKind::Host) => config.harness_command(),
            // The oracle's backend starts its own program under this name.
            (HarnessSource::Oracle(_), _) => Ok(vec!["oracle-agent".into()]),
            (HarnessSource::InProcess(name), _) => Ok(vec![name.clone()]),
        }
    }
}

/// A run's settings, resolved once ([`RunSettings::resolve`]).
pub(crate) struct RunSettings {
    /// Where the harness comes from.
    pub(crate) source: HarnessSource,
    /// The choices of the run.
    pub(crate) options: RunOptions,
    /// How every trial starts the harness.
    pub(crate) harness: HarnessLaunch,
    /// Where model answers come from, and the run's cost limit.
    pub(crate) models: ModelAccess,
    /// The folder of cassettes (read in replay, written in record mode); `None` when the
    /// harness calls no model, so no cassette is needed.
    pub(crate) cassettes: Option<PathBuf>,
}

impl RunSettings {
    /// The settings of a run of `source` on a backend of kind `backend`, from the
    /// configuration and the request; `models` are the request's ([`models`], resolved first:
    /// a missing key stops a run before its suite is loaded).
    pub(crate) fn resolve(
        config: &Config,
        request: &Request,
        source: HarnessSource,
        models: ModelAccess,
        backend: BackendKind,
    ) -> Result<RunSettings, SessionError> {
        let harness = HarnessLaunch {
            command: source.command(config, backend)?,
            passthrough: passthrough(config),
            tier: config.harness.tier,
            success_exit_codes: config.harness.success_exit_codes.clone(),
            answer: config.harness.answer,
            follow_up: match source {
                HarnessSource::Configured => config.harness.follow_up,
                HarnessSource::Oracle(_) | HarnessSource::InProcess(_) => {
                    crate::config::FollowUp::Restart
                }
            },
            limits: config.limits,
            model: config.harness.model.clone(),
            files: config.harness_files()?,
        };
        Ok(RunSettings {
            options: options(config, request),
            harness,
            models,
            cassettes: source.calls_models().then(|| cassettes(config, request)),
            source,
        })
    }

    /// The suite's judge in this run: its questions asked through each trial's gateway
    /// (priced and charged to the run's budget, like every other model call, so none is asked
    /// past the limit; recorded in the trial's cassette), or through the judge cache when the
    /// run has no cassettes (`run --oracle`).
    pub(crate) fn judge(&self, config: &Config) -> Arc<crate::judge::Judging> {
        Arc::new(crate::judge::Judging::new(
            config,
            &self.models,
            self.harness.model.as_deref(),
            self.cassettes.is_some(),
        ))
    }
}

/// `harness.env` names with their host values (a key taken at start-up, else the
/// environment's); a name not set is left out.
fn passthrough(config: &Config) -> Vec<(String, String)> {
    config
        .harness
        .env
        .iter()
        .filter_map(|name| crate::config::secrets::var(name).map(|value| (name.clone(), value)))
        .collect()
}

/// Trials run at once unless told: two a CPU. A trial is never one busy thread: it hands
/// over between clawtest and its harness at every model and tool call, and waits on models,
/// slow faults and containers, so one trial a CPU leaves the CPUs idle at each handover
/// (10,400 replayed tasks × 3 on 2 CPUs: 66 s with 2 jobs, 59.5 s with 4; docs/development.md).
/// Public for the benches, which measure at it.
pub fn default_jobs() -> usize {
    2 * std::thread::available_parallelism().map_or(1, usize::from)
}

/// The run's choices: the request's over the configuration's.
fn options(config: &Config, request: &Request) -> RunOptions {
    // A shard sees part of the suite: its gates would judge a part as the whole. Shards are
    // gated together by `cargo clawtest merge`.
    let gates = if request.partition.is_some() {
        Gates::default()
    } else {
        request.gates.or(&config.gates)
    };
    let jobs = request
        .jobs
        .or(config.run.jobs)
        .unwrap_or_else(default_jobs);
    RunOptions {
        trials: request.trials.unwrap_or(config.run.trials),
        jobs,
        pass_threshold: config.run.pass_threshold,
        gates,
        faults: crate::fault::FaultSettings {
            rate: request.error_rate.unwrap_or(config.faults.rate),
            ..config.faults
        },
        baseline: if request.partition.is_some() {
            None
        } else {
            request.baseline.clone().map(Box::new)
        },
        snapshots: request
            .snapshots
            .map(|mode| (in_cell(config.root.join(snapshots::FOLDER), request), mode)),
    }
}

/// The cassette folder: `--cassettes`, else `llm.cassettes` under the suite root; a cell's
/// is `<harness>/<model>/` inside it.
pub(crate) fn cassettes(config: &Config, request: &Request) -> PathBuf {
    let folder = request
        .cassettes
        .clone()
        .unwrap_or_else(|| config.cassettes());
    in_cell(folder, request)
}

/// `folder`, or a cell's `<harness>/<model>/` inside it.
fn in_cell(folder: PathBuf, request: &Request) -> PathBuf {
    match &request.cell {
        Some(cell) => folder.join(&cell.harness).join(&cell.model),
        None => folder,
    }
}

/// The gateway side of the run: the provider client in `live`/`record` mode, the price table
/// and the cost limit ([`ModelAccess::from_config`]). A harness that calls no model (the
/// oracle) replays, whatever `[llm]` or `--mode` says.
pub(crate) fn models(config: &Config, request: &Request) -> Result<ModelAccess, SessionError> {
    let mode = match HarnessSource::of(request).calls_models() {
        true => request.mode.unwrap_or(config.llm.mode),
        false => Mode::Replay,
    };
    let max_cost_usd = request.max_cost_usd.or(config.llm.max_cost_usd);
    Ok(ModelAccess::from_config(config, mode, max_cost_usd)?)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn config(text: &str) -> Config {
        Config::from_text(text, Path::new("clawtest.toml"), PathBuf::from("/suite")).unwrap()
    }

    const RECORDING: &str = "[harness]\ncommand = [\"./agent\"]\n[llm]\nmode = \"record\"\n[llm.openai]\nbase_url = \"http://127.0.0.1:9\"\n";

    fn resolve(config: &Config, request: &Request, backend: BackendKind) -> RunSettings {
        let source = HarnessSource::of(request);
        let models = models(config, request).unwrap();
        RunSettings::resolve(config, request, source, models, backend).unwrap()
    }

    #[test]
    fn the_oracle_replays_without_cassettes_whatever_the_mode_says() {
        let config = config(RECORDING);
        let request = Request {
            oracle: Some(PathBuf::from("/bin/clawtest")),
            mode: Some(Mode::Live),
            ..Request::default()
        };
        let settings = resolve(&config, &request, BackendKind::Host);
        assert_eq!(settings.models.mode, Mode::Replay);
        assert!(settings.models.upstream.is_none());
        assert_eq!(settings.cassettes, None);
        assert_eq!(settings.harness.command, ["oracle-agent"]);
        assert!(!settings.source.is_built());
    }

    #[test]
    fn the_configured_harness_records_into_the_suites_cassettes() {
        let config = config(RECORDING);
        let settings = resolve(&config, &Request::default(), BackendKind::Host);
        assert_eq!(settings.models.mode, Mode::Record);
        assert!(settings.models.upstream.is_some());
        assert_eq!(settings.cassettes, Some(config.cassettes()));
        assert_eq!(
            settings.harness.command,
            config.harness_command().unwrap(),
            "anchored at the suite root on the host"
        );
        assert_ne!(settings.harness.command, ["./agent"]);
        assert!(settings.source.is_built());
    }

    #[test]
    fn in_a_container_the_command_is_the_images() {
        let config = config(RECORDING);
        let settings = resolve(&config, &Request::default(), BackendKind::Container);
        assert_eq!(settings.harness.command, ["./agent"]);
    }

    #[test]
    fn an_in_process_harness_is_started_by_its_name_and_calls_models() {
        let config = config("[llm]\nmode = \"replay\"\n");
        let request = Request::default();
        let models = models(&config, &request).unwrap();
        let source = HarnessSource::InProcess("agent".into());
        let settings =
            RunSettings::resolve(&config, &request, source, models, BackendKind::Host).unwrap();
        assert_eq!(settings.harness.command, ["agent"]);
        assert_eq!(settings.cassettes, Some(config.cassettes()));
        assert!(!settings.source.is_built());
    }
}
