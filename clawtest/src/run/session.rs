//! A whole run as the CLI asks for it: configuration + command-line choices → [`prepare`] (the
//! models and the suite, whose warnings the caller shows) → [`execute`] (the settings for the
//! chosen backend, build the harness, run every trial) → summary. Everything that can stop a
//! run before its first trial is a [`SessionError`], typed by what the user has to fix.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::executor::Resources;
pub use super::settings::{HarnessSource, Request, SessionError};
use super::settings::{RunSettings, cassettes, models};
use super::suite::Suite;
use crate::config::Config;
use crate::llm::ModelAccess;
use crate::llm::gateway::StaleLog;
use crate::report::events::Reporter;
use crate::report::snapshots::Review;
use crate::results::RunSummary;
use crate::sandbox::Sandbox;
use crate::sandbox::commands::{CommandPlace, CommandRule, Origin};
use crate::services::Catalogue;
use crate::variants::Expanded;

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
    source: HarnessSource,
    models: ModelAccess,
    catalogue: Arc<Catalogue>,
    /// The variants that failed or were skipped (`--variants`) before the first was drawn,
    /// one line each.
    variant_notes: Vec<String>,
    /// The variants still to be drawn (`--variants`): drawn while the run goes.
    pending: Option<Pending>,
}

/// Variants to be drawn while the run goes, on a thread of their own, one ahead of the trials.
struct Pending {
    variants: crate::variants::Expansion,
    /// How many the run expects in all: the tasks varied × the count (fewer when some fail).
    expected: usize,
}

impl Prepared {
    /// The ids of the suite's (valid) tasks, in suite order (with `--variants`, the first
    /// variant's: the rest are drawn as the run goes).
    pub fn task_ids(&self) -> Vec<String> {
        self.suite
            .tasks
            .iter()
            .map(|task| task.id.clone())
            .collect()
    }

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
/// ([`load_suite`]) and, for `--variants`, its variants, their commands proven where the
/// chosen backend runs commands (`place`: its [`Sandbox::command_place`]) by the rule for
/// variants (`sandbox::commands`).
pub fn prepare(
    config: &Config,
    request: &Request,
    place: CommandPlace,
) -> Result<Prepared, SessionError> {
    let source = HarnessSource::of(request);
    let models = models(config, request)?;
    let mut suite = load_suite(config, request, &Catalogue::builtin())?;
    // The built-in services and the suite's library, as the tasks were loaded with.
    let catalogue = Arc::new(suite.catalogue.clone());
    if models.mode.records() && !request.force {
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
    let mut pending = None;
    if let Some(options) = &request.variants {
        let options = crate::variants::Options {
            threshold: config.run.pass_threshold,
            ..*options
        };
        let tasks = std::mem::take(&mut suite.tasks);
        let asked = tasks.len();
        let commands =
            CommandRule::new(place, request.allow_host_commands).for_origin(Origin::Variant);
        let mut variants =
            crate::variants::expand(tasks, Arc::clone(&catalogue), options, commands);
        // Drawn up to the first that runs, so that a run with none stops here, with the reasons.
        for expanded in variants.by_ref() {
            match expanded {
                Expanded::Task(task) => {
                    suite.tasks.push(*task);
                    break;
                }
                Expanded::Note(note) => variant_notes.push(note),
            }
        }
        if suite.tasks.is_empty() {
            return Err(SessionError::NoVariants {
                tasks: asked,
                reasons: variant_notes,
            });
        }
        let expected = asked.saturating_mul(options.count as usize);
        match source {
            // The oracle plans every task before the run: its variants are all drawn now.
            HarnessSource::Oracle(_) => {
                for expanded in variants {
                    match expanded {
                        Expanded::Task(task) => suite.tasks.push(*task),
                        Expanded::Note(note) => variant_notes.push(note),
                    }
                }
            }
            HarnessSource::Configured | HarnessSource::InProcess(_) => {
                pending = Some(Pending {
                    variants,
                    expected: expected.saturating_sub(1),
                });
            }
        }
    }
    Ok(Prepared {
        suite,
        source,
        models,
        catalogue,
        variant_notes,
        pending,
    })
}

/// Draws `pending`'s variants on a thread of its own, each sent to the run as the run takes it
/// (one ahead), until they end, the run stops taking them, or `interrupt` fires; the notes
/// about those that failed are kept in `notes`, whole once the last variant has been taken.
fn draw_while_running(
    pending: Pending,
    notes: Arc<std::sync::Mutex<Vec<String>>>,
    interrupt: CancellationToken,
) -> Option<super::executor::Streamed> {
    let (sender, receiver) = tokio::sync::mpsc::channel(1);
    let Pending { variants, expected } = pending;
    let drawn = std::thread::Builder::new()
        .name("clawtest-variants".into())
        .spawn(move || {
            for expanded in variants {
                if interrupt.is_cancelled() {
                    break;
                }
                match expanded {
                    Expanded::Task(task) => {
                        if sender.blocking_send(*task).is_err() {
                            break;
                        }
                    }
                    Expanded::Note(note) => {
                        if let Ok(mut notes) = notes.lock() {
                            notes.push(note);
                        }
                    }
                }
            }
        });
    drawn
        .ok()
        .map(|_| super::executor::Streamed { expected, receiver })
}

/// What [`execute`] hands back: the run's summary, and what the user should hear about that
/// did not change it.
#[derive(Debug)]
pub struct Executed {
    /// The summary, also sent as the `RunFinished` event.
    pub summary: RunSummary,
    /// Warnings that arose while the trials ran (the judge cache that could not be written,
    /// answers that reported no token usage, a graded stdout that looks like a log), one line each without the `warning: ` prefix: the binary shows them after the run.
    pub warnings: Vec<String>,
    /// The grade snapshots' review, when the request asked for one (and the run was not
    /// interrupted); its changes already failed `summary`.
    pub review: Option<Review>,
    /// The trials whose cassette no longer answered them (`cargo clawtest cassettes`).
    pub stale: Arc<StaleLog>,
}

/// The folder of cassettes a run with `request` reads and writes (`--cassettes`, else
/// `[llm] cassettes` under the suite's root).
pub fn cassette_folder(config: &Config, request: &Request) -> std::path::PathBuf {
    cassettes(config, request)
}

/// Runs `[harness] build`, if there is one. [`execute`] runs it unless the request says
/// `no_build`; a harness built into its image (`harness.dockerfile`) needs it run before the
/// image is built, that is before the backend is chosen.
pub async fn build(config: &Config, interrupt: &CancellationToken) -> Result<(), SessionError> {
    if let Some(build) = config.harness_build()? {
        let limit = std::time::Duration::from_secs(config.harness.build_timeout_seconds);
        super::build::build_harness(&build, &config.root, limit, interrupt)
            .await
            .map_err(SessionError::Build)?;
    }
    Ok(())
}

/// Runs a prepared suite on `sandbox`: resolves the run's settings for it, builds the
/// harness, executes every trial.
pub async fn execute(
    config: &Config,
    request: &Request,
    prepared: Prepared,
    sandbox: Arc<dyn Sandbox>,
    reporter: &mut dyn Reporter,
    interrupt: CancellationToken,
) -> Result<Executed, SessionError> {
    let Prepared {
        suite,
        source,
        models,
        catalogue,
        pending,
        ..
    } = prepared;
    let notes = Arc::new(std::sync::Mutex::new(Vec::new()));
    let streamed = pending
        .and_then(|pending| draw_while_running(pending, Arc::clone(&notes), interrupt.clone()));
    // The oracle's backend starts its own program; the suite's harness is neither built nor run.
    let sandbox: Arc<dyn Sandbox> = match &source {
        // Its checks run where the chosen backend runs commands: in a container on docker.
        HarnessSource::Oracle(program) => Arc::new(
            crate::oracle::sandbox::OracleSandbox::new(
                program.clone(),
                &suite.tasks,
                &catalogue,
                sandbox.command_place(),
            )
            .map_err(|error| SessionError::Build(format!("cannot plan the oracles: {error}")))?,
        ),
        HarnessSource::Configured | HarnessSource::InProcess(_) => sandbox,
    };
    let settings = RunSettings::resolve(config, request, source, models, sandbox.kind())?;
    if !request.no_build && settings.source.is_built() && !suite.tasks.is_empty() {
        build(config, &interrupt).await?;
    }
    let judge = settings.judge(config);
    let budget = Arc::clone(&settings.models.budget);
    let stale = Arc::clone(&settings.models.stale);
    let resources = Resources {
        catalogue,
        sandbox,
        judge: judge.clone(),
    };
    let (mut summary, review, trial_warnings) = super::executor::execute_streamed(
        suite, streamed, settings, resources, reporter, interrupt,
    )
    .await;
    summary.shard = request.partition.map(|partition| partition.shard());
    let mut warnings = super::executor::closing_warnings(&judge, &budget, trial_warnings);
    // The variants that failed while the run went, after it.
    warnings.extend(notes.lock().map(|notes| notes.clone()).unwrap_or_default());
    Ok(Executed {
        summary,
        warnings,
        review,
        stale,
    })
}
