//! A whole run as the CLI asks for it: configuration + command-line choices → [`prepare`] (the
//! models and the suite, whose warnings the caller shows) → [`execute`] (build the harness,
//! run every trial) → summary. Everything that can stop a run before its first
//! trial is a [`SessionError`], typed by what the user has to fix.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::watch;

use super::partition::Partition;
use super::{HarnessLaunch, Reporter, Resources, RunOptions, RunSummary, Suite};
use crate::config::Mode;
use crate::config::{Config, ConfigError, Gates, ProviderConfig};
use crate::discover::DiscoverError;
use crate::llm::ModelAccess;
use crate::llm::gateway::{Budget, Endpoint, Prices, RetryPolicy, Upstream, UpstreamError};
use crate::report::snapshots::{self, Review, UpdateMode};
use crate::sandbox::Sandbox;
use crate::services::Catalogue;

/// What the command line adds to (or overrides in) the configuration.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// Explicit task files or folders instead of the configured globs.
    pub paths: Vec<PathBuf>,
    /// Substrings of task ids or paths; empty runs all.
    pub filters: Vec<String>,
    /// `--trials`, overriding `run.trials`.
    pub trials: Option<u32>,
    /// `--jobs`, overriding `run.jobs` (else one per CPU).
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
    /// `live` or `record` mode without a provider to call; holds the mode's name.
    #[error(
        "llm.mode = \"{0}\" needs a provider, and neither [llm.openai] nor [llm.anthropic] is configured"
    )]
    #[diagnostic(help(
        "add `[llm.openai]` with `base_url` and `api_key_env` (the NAME of the variable holding the key), or run with mode = \"replay\""
    ))]
    NoProvider(&'static str),
    /// The provider's `api_key_env` names a variable that is not set.
    #[error("llm.{provider}.api_key_env names `{variable}`, which is not set in the environment")]
    #[diagnostic(help(
        "export {variable}=... before running, or remove api_key_env to send no key"
    ))]
    MissingKey {
        /// `openai` or `anthropic`.
        provider: &'static str,
        /// The variable's name.
        variable: String,
    },
    /// A provider's `base_url` cannot be used.
    #[error("llm.{0}")]
    #[diagnostic(help(
        "set base_url to the http:// or https:// address of the provider, e.g. https://api.openai.com"
    ))]
    Upstream(#[from] UpstreamError),
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

/// Loads the suite the configuration and request describe.
pub fn load_suite(
    config: &Config,
    request: &Request,
    catalogue: &Catalogue,
) -> Result<Suite, SessionError> {
    let suite = super::suite::load(
        config,
        &request.paths,
        &request.filters,
        request.partition,
        catalogue,
    )?;
    // An empty shard is normal (few tasks, many shards); an empty unsharded selection is not.
    if suite.tasks.is_empty() && suite.invalid.is_empty() && request.partition.is_none() {
        return Err(SessionError::NoTasks {
            root: config.root.clone(),
            patterns: config.tasks.clone(),
            filters: request.filters.clone(),
        });
    }
    Ok(suite)
}

/// A run's suite, loaded and validated, with the models it will use: what can be known, and
/// shown, before the sandbox is asked to run anything.
pub struct Prepared {
    suite: Suite,
    models: ModelAccess,
    catalogue: Arc<Catalogue>,
    /// The variants that failed or were skipped (`--variants`), one line each.
    variant_notes: Vec<String>,
}

impl Prepared {
    /// The tasks' warnings, one line each (`file:line:column: field: message`). They never
    /// stop a run, but a run is where people look: the binary shows them before it starts.
    pub fn warnings(&self) -> Vec<String> {
        self.suite
            .tasks
            .iter()
            .flat_map(|task| {
                task.warnings
                    .iter()
                    .map(|warning| warning.plain(&task.path))
            })
            .chain(self.variant_notes.iter().cloned())
            .collect()
    }
}

/// Prepares a run: the gateway's provider, keys and prices (`models`), then the suite
/// ([`load_suite`]).
pub fn prepare(config: &Config, request: &Request) -> Result<Prepared, SessionError> {
    // The oracle calls no model: whatever `[llm]` or `--mode` says, nothing is forwarded or
    // recorded.
    let models = if request.oracle.is_some() {
        let mut replay = config.clone();
        replay.llm.mode = Mode::Replay;
        let request = Request {
            mode: None,
            ..request.clone()
        };
        models(&replay, &request)?
    } else {
        models(config, request)?
    };
    let catalogue = Arc::new(Catalogue::builtin());
    let mut suite = load_suite(config, request, &catalogue)?;
    if models.mode == Mode::Record && !request.force {
        let trials = request.trials.unwrap_or(config.run.trials);
        let folder = cassettes(config, request);
        for task in &suite.tasks {
            // An unreadable cassette is replaced: recording is how it is fixed.
            if let Ok(cassette) = crate::llm::gateway::Cassette::load(&folder, &task.id)
                && cassette.trials.len() > trials as usize
            {
                return Err(SessionError::WouldShrink {
                    path: crate::llm::gateway::Cassette::path_for(&folder, &task.id),
                    recorded: cassette.trials.len(),
                    trials,
                });
            }
        }
    }
    let mut variant_notes = Vec::new();
    if let Some(options) = &request.variants {
        let options = crate::variants::Options {
            threshold: config.run.pass_threshold,
            ..*options
        };
        let tasks = std::mem::take(&mut suite.tasks);
        (suite.tasks, variant_notes) = crate::variants::expand(tasks, &catalogue, &options);
    }
    Ok(Prepared {
        suite,
        models,
        catalogue,
        variant_notes,
    })
}

/// What [`execute`] hands back: the run's summary, and what the user should hear about that
/// did not change it.
#[derive(Debug)]
pub struct Executed {
    /// The summary, also sent as the `RunFinished` event.
    pub summary: RunSummary,
    /// Warnings that arose while the trials ran (the judge cache that could not be written),
    /// one line each without the `warning: ` prefix: the binary shows them after the run.
    pub warnings: Vec<String>,
    /// The grade snapshots' review, when the request asked for one (and the run was not
    /// interrupted); its changes already failed `summary`.
    pub review: Option<Review>,
}

/// Runs `[harness] build`, if there is one. [`execute`] runs it unless the request says
/// `no_build`; a harness built into its image (`harness.dockerfile`) needs it run before the
/// image is built, that is before the backend is chosen.
pub async fn build(
    config: &Config,
    interrupt: &mut watch::Receiver<bool>,
) -> Result<(), SessionError> {
    if let Some(build) = config.harness_build()? {
        let limit = std::time::Duration::from_secs(config.harness.build_timeout_seconds);
        super::build_harness(&build, &config.root, limit, interrupt)
            .await
            .map_err(SessionError::Build)?;
    }
    Ok(())
}

/// Runs a prepared suite: builds the harness, executes every trial.
pub async fn execute(
    config: &Config,
    request: &Request,
    prepared: Prepared,
    sandbox: Arc<dyn Sandbox>,
    reporter: &mut dyn Reporter,
    mut interrupt: watch::Receiver<bool>,
) -> Result<Executed, SessionError> {
    let Prepared {
        suite,
        models,
        catalogue,
        ..
    } = prepared;
    // The oracle's backend starts its own program; the suite's harness is neither built nor run.
    let (sandbox, command): (Arc<dyn Sandbox>, Vec<String>) = match &request.oracle {
        Some(program) => {
            let oracle = crate::oracle::sandbox::OracleSandbox::new(
                program.clone(),
                &suite.tasks,
                &catalogue,
            )
            .map_err(|error| SessionError::Build(format!("cannot plan the oracles: {error}")))?;
            (Arc::new(oracle), vec!["oracle-agent".into()])
        }
        // Inside an image the command names a program of the image, not a host path.
        None if sandbox.name() == "docker" => {
            let command = config.harness_command_in_image()?;
            (sandbox, command)
        }
        None => {
            let command = config.harness_command()?;
            (sandbox, command)
        }
    };
    if !request.no_build && request.oracle.is_none() && !suite.tasks.is_empty() {
        build(config, &mut interrupt).await?;
    }
    let passthrough = config
        .harness
        .env
        .iter()
        .filter_map(|name| crate::config::secrets::var(name).map(|value| (name.clone(), value)))
        .collect();
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
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
    let options = RunOptions {
        trials: request.trials.unwrap_or(config.run.trials),
        jobs,
        pass_threshold: config.run.pass_threshold,
        gates,
        baseline: if request.partition.is_some() {
            None
        } else {
            request.baseline.clone().map(Box::new)
        },
        snapshots: request
            .snapshots
            .map(|mode| (config.root.join(snapshots::FOLDER), mode)),
    };
    let judge = crate::judge::with_costs(
        config,
        Arc::clone(&models.prices),
        Arc::clone(&models.budget),
    );
    let resources = Resources {
        harness: HarnessLaunch {
            command,
            passthrough,
            tier: config.harness.tier,
            success_exit_codes: config.harness.success_exit_codes.clone(),
            limits: config.limits,
            model: config.harness.model.clone(),
            files: config.harness_files()?,
        },
        // The oracle calls no model: it needs no cassette.
        cassettes: request.oracle.is_none().then(|| cassettes(config, request)),
        models,
        catalogue,
        sandbox,
        judge: judge.clone(),
    };
    let (summary, review) = super::execute(suite, &options, resources, reporter, interrupt).await;
    Ok(Executed {
        summary,
        warnings: judge.take_warnings(),
        review,
    })
}

/// The cassette folder: `--cassettes`, else `llm.cassettes` under the suite root.
fn cassettes(config: &Config, request: &Request) -> PathBuf {
    request
        .cassettes
        .clone()
        .unwrap_or_else(|| config.cassettes())
}

/// The gateway side of the run: the provider client in `live`/`record` mode (keys read from
/// the variables the configuration names), the price table and the cost limit.
pub(crate) fn models(config: &Config, request: &Request) -> Result<ModelAccess, SessionError> {
    let llm = &config.llm;
    let mode = request.mode.unwrap_or(llm.mode);
    let upstream = match mode {
        Mode::Replay => None,
        Mode::Live | Mode::Record => {
            if llm.openai.is_none() && llm.anthropic.is_none() {
                return Err(SessionError::NoProvider(mode.name()));
            }
            let endpoint = |provider: &'static str, settings: &Option<ProviderConfig>| {
                settings
                    .as_ref()
                    .map(|settings| {
                        let api_key = match &settings.api_key_env {
                            None => None,
                            Some(variable) => {
                                Some(crate::config::secrets::var(variable).ok_or_else(|| {
                                    SessionError::MissingKey {
                                        provider,
                                        variable: variable.clone(),
                                    }
                                })?)
                            }
                        };
                        Ok::<_, SessionError>(Endpoint {
                            base_url: settings.base_url.clone(),
                            api_key,
                        })
                    })
                    .transpose()
            };
            let retry = RetryPolicy {
                retries: llm.retries,
                backoff: std::time::Duration::from_millis(llm.retry_backoff_ms),
            };
            Some(Arc::new(Upstream::new(
                endpoint("openai", &llm.openai)?,
                endpoint("anthropic", &llm.anthropic)?,
                retry,
            )?))
        }
    };
    Ok(ModelAccess {
        mode,
        upstream,
        prices: Arc::new(Prices(llm.prices.clone())),
        budget: Arc::new(Budget::new(request.max_cost_usd.or(llm.max_cost_usd))),
        // The configuration's checks already tried every pattern.
        rules: Arc::new(
            crate::llm::gateway::Rules::from_config(llm).map_err(|message| ConfigError::Value {
                origin: config.origin.clone(),
                field: "llm.replay".into(),
                message,
            })?,
        ),
    })
}
