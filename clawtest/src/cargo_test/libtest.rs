//! `clawtest::main!`: a `harness = false` test target built on libtest-mimic. Tasks are found
//! when the binary starts (a new task file needs no rebuild), one test per task named
//! `<suite>::<task_id>` (an invalid task file is a failing test named by its path), and the
//! usual libtest flags work: `--list --format terse`, `--ignored`, `--exact`, filters,
//! `--skip`, `--nocapture`, `--test-threads`. Listing only parses the task files, and a test's
//! trials start only when it runs, so nextest's one-process-per-test costs one task's trials.

use std::process::ExitCode;

pub use libtest_mimic::{Arguments, Conclusion};
use libtest_mimic::{Failed, Trial};

use super::{Failure, SnapshotHook, TaskRunner, load_config, task_tests};
use crate::rust_harness::RustHarness;

/// What `clawtest::main!` passes in.
pub struct MainOptions {
    /// The crate's folder (`CARGO_MANIFEST_DIR` of the test target).
    pub manifest_dir: &'static str,
    /// The first part of every test name.
    pub suite: String,
    /// A configuration file relative to `manifest_dir`, instead of discovering one.
    pub config: Option<&'static str>,
    /// The in-process harness (`harness = …`); `None` runs the configured process harness.
    pub harness: Option<RustHarness>,
    /// Overrides `run.trials`.
    pub trials: Option<u32>,
    /// Records each verdict as an insta snapshot (`snapshots = true`); `None` records nothing.
    pub snapshot: Option<SnapshotHook>,
}

/// Runs the test binary with this process's arguments; returns its exit code (101 when a
/// test failed or the tests could not be found, as libtest).
#[allow(
    clippy::print_stderr,
    reason = "the body of the test binary's `fn main` (what `clawtest::main!` expands to), which prints its report as libtest does"
)]
pub fn main(options: MainOptions) -> ExitCode {
    match run(&Arguments::from_args(), options) {
        Ok(conclusion) => conclusion.exit_code(),
        Err(failure) => {
            eprintln!("clawtest: {failure}");
            ExitCode::from(101)
        }
    }
}

/// Runs the tests `arguments` select, printing as libtest does; public so that a test can
/// drive a harness in-process with its own arguments.
pub fn run(arguments: &Arguments, options: MainOptions) -> Result<Conclusion, Failure> {
    Ok(libtest_mimic::run(arguments, trials(options)?))
}

/// The libtest trials: one per task test.
fn trials(options: MainOptions) -> Result<Vec<Trial>, Failure> {
    let config = load_config(std::path::Path::new(options.manifest_dir), options.config)?;
    let runner = TaskRunner::new(config, options.harness, options.trials);
    Ok(task_tests(runner, &options.suite, options.snapshot)?
        .into_iter()
        .map(|test| {
            let name = test.name.clone();
            Trial::test(name, move || {
                test.run().map_err(|failure| Failed::from(failure.0))
            })
        })
        .collect())
}
