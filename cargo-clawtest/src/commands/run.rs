//! `cargo clawtest [run] [FILTER…]`: runs the suite with the terminal reporter (and the
//! trajectory writer, for `--trajectories` and the HTML report), lets Ctrl-C (or SIGTERM,
//! SIGHUP) escalate, decides the run's status once (the grade snapshots of `--snapshots`
//! included), then writes every output with it.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use clawtest::config::Config;
use clawtest::interrupt::{self, Notice};
use clawtest::report::events::{Fanout, Reporter};
use clawtest::report::snapshots::{Review, UpdateMode};
use clawtest::report::{terminal::TerminalReporter, trajectories::TrajectoryWriter};
use clawtest::run::cells;
use clawtest::run::session::{self, Request};
use clawtest::sandbox::select;

use super::{
    Outcome, build_before_image, finished, load_config, publish, read_baseline, runtime, warn,
};
use crate::cli::{GlobalArgs, RunArgs};
use crate::errors::{ExpectedError, exit};

pub fn run(global: &GlobalArgs, arguments: &RunArgs) -> Outcome {
    let config = load_config(global)?;
    let mode = arguments.mode.unwrap_or(config.llm.mode);
    // SAFETY: no thread has been started yet (the runtime comes below).
    unsafe { clawtest::config::secrets::take(&config, mode) };
    warn(&clawtest::config::secrets::harness_key_warnings(&config));
    let request = Request {
        paths: arguments.paths.clone(),
        filters: arguments.filters.clone(),
        trials: arguments.trials,
        jobs: arguments.jobs,
        gates: arguments.gates.gates(),
        no_build: arguments.no_build,
        partition: arguments.partition,
        baseline: read_baseline(&arguments.outputs)?,
        backend: arguments.backend,
        max_cost_usd: arguments.max_cost,
        mode: arguments.mode,
        cassettes: arguments.cassettes.clone(),
        force: arguments.force,
        snapshots: arguments.snapshots.then(UpdateMode::from_environment),
        // The oracle's harness is this binary's hidden `oracle-agent` command.
        oracle: if arguments.oracle {
            Some(std::env::current_exe().map_err(|_| {
                ExpectedError::Usage("cannot find clawtest's own binary for --oracle")
            })?)
        } else {
            None
        },
        variants: arguments.variants.map(|count| clawtest::variants::Options {
            count,
            seed: arguments
                .variant_seed
                .unwrap_or(clawtest::variants::DEFAULT_SEED),
            kinds: clawtest::variants::Kinds::all(),
            threshold: config.run.pass_threshold,
        }),
        error_rate: arguments.error_rate,
        allow_host_commands: arguments.allow_host_commands,
        cell: None,
    };
    // The HTML report shows each trial's trajectory: saved where asked, else beside it.
    let mut outputs = arguments.outputs.outputs();
    outputs.html = outputs.html.or_else(|| {
        config
            .report
            .html
            .as_ref()
            .map(|html| config.root.join(html))
    });
    let trajectories = arguments
        .trajectories
        .clone()
        .or_else(|| outputs.html.as_ref().map(|html| html.join("trajectories")));
    outputs.trajectories.extend(trajectories.clone());
    let executed = if config.is_matrix() {
        let runs = cells::cell_runs(&config, &request, &arguments.cells)
            .map_err(ExpectedError::Session)?;
        let mut done = Vec::new();
        for run in runs {
            outln!(
                "== cell {} (harness digest {})",
                run.cell.name(),
                run.cell.harness_digest
            );
            // Each cell's trajectories in a folder of its own.
            let folder = trajectories
                .as_ref()
                .map(|folder| folder.join(&run.cell.harness).join(&run.cell.model));
            let executed = one_run(&run.config, run.request, arguments, folder)?;
            let interrupted = executed.summary.interrupted;
            done.push((run.cell, executed));
            if interrupted {
                break;
            }
        }
        cells::combine(&config, &request, done).map_err(ExpectedError::Merge)?
    } else {
        if !arguments.cells.is_empty() {
            config
                .select_cells(&arguments.cells)
                .map_err(|error| ExpectedError::Session(error.into()))?;
        }
        one_run(&config, request, arguments, trajectories)?
    };
    // The terminal showed each changed snapshot before the summary, whose status (like every
    // output's) already counts them; a comparison that could not be made is an error apart.
    if let Some(Review {
        folder,
        outcome: Err(error),
    }) = &executed.review
    {
        errln!(
            "error: could not write snapshots in {}: {error}",
            folder.display()
        );
    }
    let summary = &executed.summary;
    out!("{}", clawtest::report::matrix::closing(summary));
    publish(summary, executed.review.as_ref(), &outputs, &config.root)?;
    finished(summary.status)
}

/// One run of `config` (a suite, or one cell of a matrix): the harness built into its image
/// first, then the backend chosen, the suite prepared and executed with the terminal
/// reporter and the trajectory writer (into `trajectories`).
fn one_run(
    config: &Config,
    mut request: Request,
    arguments: &RunArgs,
    trajectories: Option<PathBuf>,
) -> Result<session::Executed, ExpectedError> {
    // A harness built into its image is built before the image, which is built when the
    // backend is chosen.
    let source = session::HarnessSource::of(&request);
    // The static shim a docker run mounts is located while the harness builds.
    let shim = select::locate_shim_ahead(config, request.backend);
    if build_before_image(config, !request.no_build && source.is_built())? {
        request.no_build = true;
    }
    runtime()?.block_on(async {
        // The oracle plays its calls on the host, but the tasks' commands run where the
        // chosen backend runs commands: the choice stands for `--oracle` too.
        let chosen = select::choose(config, request.backend, shim)
            .await
            .map_err(ExpectedError::Backend)?;
        errln!("{}", chosen.note);
        let sandbox = chosen.sandbox;
        let aborting = Arc::clone(&sandbox);
        let signals = interrupt::Signals::install().map_err(ExpectedError::Runtime)?;
        let interrupted = interrupt::escalate(
            signals.into_source(),
            move || async move { aborting.abort().await },
            |notice| match notice {
                Notice::Stopping => errln!(
                    "\ninterrupted: stopping trials and writing partial results (Ctrl-C again to quit at once)"
                ),
                Notice::Aborted => std::process::exit(i32::from(exit::interrupted())),
            },
        );
        let mut terminal = TerminalReporter::new(
            std::io::stdout(),
            std::io::stderr().is_terminal(),
            arguments.verbose,
        );
        let mut saver = trajectories.clone().map(TrajectoryWriter::new);
        let mut reporters: Vec<&mut dyn Reporter> = vec![&mut terminal];
        if let Some(saver) = saver.as_mut() {
            reporters.push(saver);
        }
        let outcome = match session::prepare(config, &request, sandbox.command_place()) {
            Ok(prepared) => {
                warn(&prepared.warnings());
                let reporter = &mut Fanout(reporters);
                session::execute(config, &request, prepared, sandbox, reporter, interrupted)
                    .await
            }
            Err(error) => Err(error),
        }
        .map_err(ExpectedError::Session)
        .inspect(|executed| warn(&executed.warnings));
        for failure in saver.map(|saver| saver.failures).unwrap_or_default() {
            errln!("warning: could not save a trajectory: {failure}");
        }
        outcome
    })
}
