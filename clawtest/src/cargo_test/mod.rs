//! Tasks as ordinary Rust tests: the runtime behind `clawtest::main!` (a libtest-compatible
//! `harness = false` target, `libtest`, behind the `libtest` feature) and
//! `#[clawtest::suite]` (one `#[test]` per task file, [`run_task_file`]). Both run one task's k
//! trials through the executor (`run::executor::execute`), with the settings every run resolves and turn its [`Verdict`] into a test result: pass
//! only on pass^k, otherwise a failure whose message is the grade breakdown.

#[cfg(feature = "libtest")]
pub mod libtest;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use tokio_util::sync::CancellationToken;

use crate::config::Mode;
use crate::config::{Config, ConfigError, HarnessKind};
use crate::report::events::{Event, Reporter};
use crate::results::{Verdict, VerdictStatus};
use crate::run::executor::Resources;
use crate::run::settings::{self, HarnessSource, Request, RunSettings, SessionError};
use crate::run::{self, Suite};
use crate::rust_harness::{InProcessSandbox, RustHarness};
use crate::sandbox::Sandbox;
use crate::sandbox::process::ProcessSandbox;
use crate::services::Catalogue;
use crate::task::Task;

/// A failed task test. Its `Debug` is the plain message, so that a `#[test]` returning
/// `Result<(), Failure>` prints the grade breakdown as written.
pub struct Failure(pub String);

impl std::fmt::Debug for Failure {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.0)
    }
}

/// Records a verdict as a snapshot (insta, in the caller's crate); panics on a mismatch.
pub type SnapshotHook = fn(&Verdict);

/// What the tests of one crate share: the configuration, the catalogue, the harness.
pub struct TaskRunner {
    config: Config,
    catalogue: Arc<Catalogue>,
    harness: Option<RustHarness>,
    trials: Option<u32>,
    /// The outcome of `harness.build`, run at most once per process.
    built: OnceLock<Result<(), String>>,
}

impl TaskRunner {
    /// `harness` runs in-process; without one, the configured process harness runs.
    pub fn new(config: Config, harness: Option<RustHarness>, trials: Option<u32>) -> TaskRunner {
        // The suite's library beside the built-in services (a bad library file leaves its
        // service out: the task naming it then fails to load, with that service named).
        let catalogue = crate::task::library::load(&config.root, &Catalogue::builtin()).catalogue;
        TaskRunner {
            config,
            catalogue: Arc::new(catalogue),
            harness,
            trials,
            built: OnceLock::new(),
        }
    }

    /// The configuration the tests run with.
    fn config(&self) -> &Config {
        &self.config
    }

    /// The services the tasks are loaded against (the built-in catalogue and the suite's
    /// library).
    fn catalogue(&self) -> &Catalogue {
        &self.catalogue
    }

    /// Runs `task`'s k trials and returns its verdict; an error when they could not start.
    /// Runs the task's trials: its verdict, and the judge's warnings (a cache it could not
    /// write), which a failing test shows under its message.
    fn run(&self, task: Task) -> Result<(Verdict, Vec<String>), Failure> {
        if self.config.llm.mode != Mode::Replay {
            return Err(Failure(format!(
                "llm.mode = \"{}\" in {} is not available in this version of clawtest: only \"replay\" is",
                self.config.llm.mode.name(),
                self.config.origin
            )));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|error| Failure(format!("cannot start a tokio runtime: {error}")))?;
        let (source, sandbox): (HarnessSource, Arc<dyn Sandbox>) = match &self.harness {
            Some(harness) => (
                HarnessSource::InProcess(harness.name().to_string()),
                Arc::new(InProcessSandbox::new(harness.clone())),
            ),
            None if self.config.harness.kind == HarnessKind::Rust => {
                return Err(Failure(format!(
                    "harness.kind = \"rust\" in {}, but no Rust harness was given: write `clawtest::main!(harness = your_agent)` or `#[clawtest::suite(..., harness = your_agent)]`",
                    self.config.origin
                )));
            }
            None => (
                HarnessSource::Configured,
                Arc::new(ProcessSandbox::default()),
            ),
        };
        let k = self.trials.unwrap_or(self.config.run.trials).max(1);
        // A task test snapshots through insta itself (`SnapshotHook`), not the CLI's folder,
        // and is judged by its verdict, not by the run's gates.
        let request = Request {
            trials: Some(k),
            jobs: Some(k as usize),
            ..Request::default()
        };
        let settings = settings::models(&self.config, &request).and_then(|models| {
            RunSettings::resolve(&self.config, &request, source, models, sandbox.kind())
        });
        let settings = settings.map_err(|error| match error {
            SessionError::Config(error) => config_failure(error),
            error => Failure(error.to_string()),
        })?;
        if settings.source.is_built() {
            self.build(&runtime)?;
        }
        let judge = settings.judge(&self.config);
        let budget = Arc::clone(&settings.models.budget);
        let resources = Resources {
            catalogue: Arc::clone(&self.catalogue),
            sandbox,
            judge: judge.clone(),
        };
        let suite = Suite {
            tasks: vec![task],
            invalid: Vec::new(),
            filtered_out: 0,
            catalogue: Catalogue::clone(&self.catalogue),
        };
        // Nobody interrupts a test: the test runner kills the process instead.
        let interrupt = CancellationToken::new();
        let (summary, _, trial_warnings) = runtime.block_on(run::executor::execute(
            suite, settings, resources, &mut Quiet, interrupt,
        ));
        let verdict = summary
            .verdicts
            .into_iter()
            .next()
            .ok_or_else(|| Failure("the task produced no verdict".into()))?;
        let warnings = run::executor::closing_warnings(&judge, &budget, trial_warnings);
        Ok((verdict, warnings))
    }

    fn build(&self, runtime: &tokio::runtime::Runtime) -> Result<(), Failure> {
        let built = self.built.get_or_init(|| {
            match self
                .config
                .harness_build()
                .map_err(|error| error.to_string())?
            {
                Some(build) => runtime.block_on(async {
                    // Nothing interrupts a `cargo test` build but its time limit.
                    let interrupt = CancellationToken::new();
                    let limit =
                        std::time::Duration::from_secs(self.config.harness.build_timeout_seconds);
                    run::build::build_harness(&build, &self.config.root, limit, &interrupt).await
                }),
                None => Ok(()),
            }
        });
        built.clone().map_err(Failure)
    }
}

/// One task as a test: its name and how to run it. The same list backs the libtest harness
/// and whoever wants to drive the tests directly (e.g. to assert which of them fail).
pub struct TaskTest {
    /// The test's name: `<suite>::<task_id>`, or `<suite>::<path>` for an invalid task file.
    pub name: String,
    run: Box<dyn FnOnce() -> Result<(), Failure> + Send>,
}

impl TaskTest {
    /// Runs the task's trials and judges them.
    pub fn run(self) -> Result<(), Failure> {
        (self.run)()
    }
}

/// One test per task the configuration finds (named `<suite>::<task_id>`), and one failing test
/// per invalid task file (named `<suite>::<path>`). Only parses the task files: nothing runs
/// until a test does.
pub fn task_tests(
    runner: TaskRunner,
    suite_name: &str,
    snapshot: Option<SnapshotHook>,
) -> Result<Vec<TaskTest>, Failure> {
    let runner = Arc::new(runner);
    let loaded = run::suite::load(runner.config(), &[], &[], None, runner.catalogue())
        .map_err(|error| Failure(error.to_string()))?;
    let mut tests = Vec::new();
    for task in loaded.tasks {
        let runner = Arc::clone(&runner);
        tests.push(TaskTest {
            name: format!("{suite_name}::{}", task.id),
            run: Box::new(move || checked(runner.run(task)?, snapshot)),
        });
    }
    for invalid in loaded.invalid {
        let message = invalid.plain().trim_end().to_string();
        tests.push(TaskTest {
            name: format!("{suite_name}::{}", invalid.path.display()),
            run: Box::new(move || Err(Failure(format!("invalid task file:\n{message}")))),
        });
    }
    Ok(tests)
}

/// The test result of a verdict: `Ok` only on pass^k.
fn test_result(verdict: &Verdict) -> Result<(), Failure> {
    let headline = match verdict.status {
        VerdictStatus::Passed => return Ok(()),
        VerdictStatus::Failed => format!(
            "task `{}` failed pass^{}: {}/{} trials passed (mean score {:.3}, threshold {})",
            verdict.task_id,
            verdict.k,
            verdict.passes,
            verdict.k,
            verdict.mean_score,
            verdict.threshold
        ),
        VerdictStatus::Error => format!(
            "task `{}` could not be run or graded (an infrastructure error, not a verdict on the agent)",
            verdict.task_id
        ),
        VerdictStatus::Interrupted => format!("task `{}` was interrupted", verdict.task_id),
        VerdictStatus::NotRun => format!(
            "task `{}` was not run: the cost limit was reached",
            verdict.task_id
        ),
    };
    Err(Failure(format!(
        "{headline}\n  at {}:{}\n{}",
        verdict.path.display(),
        verdict.line,
        crate::report::trial_lines(verdict)
    )))
}

/// Runs the task in `path` (relative to `manifest_dir`, the crate's folder) and judges it,
/// recording its verdict with `snapshot` when given. The configuration is the one
/// `Config::discover` finds from `manifest_dir`, or the defaults when there is none.
pub fn run_task_file(
    manifest_dir: &str,
    path: &str,
    harness: Option<RustHarness>,
    trials: Option<u32>,
    snapshot: Option<SnapshotHook>,
) -> Result<(), Failure> {
    let manifest_dir = Path::new(manifest_dir);
    let config = load_config(manifest_dir, None)?;
    let runner = TaskRunner::new(config, harness, trials);
    let file = manifest_dir.join(path);
    let mut task = crate::task::load_in(&file, Some(&runner.config.root), runner.catalogue())
        .map_err(|error| Failure(error.plain().trim_end().to_string()))?;
    task.path = PathBuf::from(path);
    checked(runner.run(task)?, snapshot)
}

/// [`check`] of a run's verdict, with the judge's warnings under a failure's message (a passing
/// test has no message to carry them).
fn checked(
    (verdict, warnings): (Verdict, Vec<String>),
    snapshot: Option<SnapshotHook>,
) -> Result<(), Failure> {
    check(&verdict, snapshot).map_err(|Failure(message)| {
        let warnings: String = warnings
            .iter()
            .map(|warning| format!("\nwarning: {warning}"))
            .collect();
        Failure(format!("{message}{warnings}"))
    })
}

/// Judges a verdict after recording its snapshot; a snapshot mismatch and a failed pass^k
/// are reported together.
fn check(verdict: &Verdict, snapshot: Option<SnapshotHook>) -> Result<(), Failure> {
    let judged = test_result(verdict);
    let Some(snapshot) = snapshot else {
        return judged;
    };
    let recorded = std::panic::catch_unwind(|| snapshot(verdict));
    match (judged, recorded) {
        (judged, Ok(())) => judged,
        (Ok(()), Err(panic)) => std::panic::resume_unwind(panic),
        (Err(failure), Err(_)) => Err(Failure(format!(
            "{}\n(the grade snapshot changed too: see the diff above, then `cargo insta review`)",
            failure.0
        ))),
    }
}

/// The configuration for the tests of the crate in `manifest_dir`: `explicit` (relative to
/// it) when given, else the nearest `clawtest.toml` or `[workspace.metadata.clawtest]`, else the
/// defaults anchored at `manifest_dir`.
pub fn load_config(manifest_dir: &Path, explicit: Option<&str>) -> Result<Config, Failure> {
    let explicit = explicit.map(|path| manifest_dir.join(path));
    match Config::optional(explicit.as_deref(), manifest_dir) {
        Ok(Some(config)) => Ok(config),
        // Messages about the defaults name the file that would hold them.
        Ok(None) => Ok(Config {
            origin: manifest_dir
                .join(crate::config::FILE_NAME)
                .display()
                .to_string(),
            ..Config::defaults(manifest_dir.to_path_buf())
        }),
        Err(error) => Err(config_failure(error)),
    }
}

fn config_failure(error: ConfigError) -> Failure {
    Failure(format!("{:?}", miette::Report::new(error)))
}

/// Reports nothing: a test's result is its verdict.
struct Quiet;

impl Reporter for Quiet {
    fn report(&mut self, _event: &Event) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        Config::from_text(text, Path::new("clawtest.toml"), PathBuf::from("/suite")).unwrap()
    }

    #[test]
    fn a_rust_harness_kind_sends_cargo_clawtest_users_to_cargo_test() {
        let error = config("[harness]\nkind = \"rust\"\n")
            .harness_command()
            .unwrap_err();
        assert!(error.to_string().contains("harness.kind"), "{error}");
        assert!(error.to_string().contains("cargo test"), "{error}");
    }

    #[test]
    fn a_rust_harness_kind_without_a_rust_harness_is_a_clear_failure() {
        let runner = TaskRunner::new(config("[harness]\nkind = \"rust\"\n"), None, None);
        let demo =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/demo/tasks/todo-triage.yaml");
        let task = crate::task::load(&demo, runner.catalogue()).unwrap();
        let failure = runner.run(task).unwrap_err();
        assert!(
            failure.0.contains("clawtest::main!(harness = your_agent)"),
            "{failure}"
        );
    }

    #[test]
    fn without_a_configuration_the_defaults_are_anchored_at_the_crate() {
        let folder = tempfile::tempdir().unwrap();
        let config = load_config(folder.path(), None).unwrap();
        assert_eq!(config.root, folder.path());
        assert_eq!(config.cassettes(), folder.path().join("cassettes"));
        assert_eq!(config.run.trials, 3);
    }

    #[test]
    fn an_explicit_configuration_that_is_missing_is_an_error() {
        let folder = tempfile::tempdir().unwrap();
        let failure = load_config(folder.path(), Some("clawtest.toml")).unwrap_err();
        assert!(failure.0.contains("cannot read"), "{failure}");
    }
}
