//! `cargo clawtest cassettes [status|prune|upgrade]`: the state of the suite's cassettes,
//! found by a replay run of the whole suite (no model is called, the results are not
//! written); removing the unused ones; rewriting recorded ones in the current format. In a
//! harness × model matrix, each cell's folder (`<harness>/<model>/`), as its own suite run
//! with that cell's harness and model; `--cell` picks cells.

use clawtest::config::{Config, Mode};
use clawtest::interrupt::{self, Notice};
use clawtest::report::events::{Event, Reporter};
use clawtest::run::cells;
use clawtest::run::session::{self, Request};
use clawtest::sandbox::select;
use clawtest::services::Catalogue;

use super::{Outcome, build_before_image, load_config, runtime, warn};
use crate::cli::{CassettesAction, CassettesArgs, GlobalArgs};
use crate::errors::{ExpectedError, exit};

pub fn run(global: &GlobalArgs, arguments: &CassettesArgs) -> Outcome {
    let config = load_config(global)?;
    let request = Request {
        mode: Some(Mode::Replay),
        cassettes: arguments.cassettes.clone(),
        backend: arguments.backend,
        jobs: arguments.jobs,
        ..Request::default()
    };
    if !config.is_matrix() {
        if !arguments.cells.is_empty() {
            config
                .select_cells(&arguments.cells)
                .map_err(|error| ExpectedError::Session(error.into()))?;
        }
        return act(&config, &request, arguments);
    }
    // A matrix keeps a cassette folder per cell: each is acted on as a suite of its own,
    // with that cell's harness and model, and the status fails when any cell's does.
    let runs =
        cells::cell_runs(&config, &request, &arguments.cells).map_err(ExpectedError::Session)?;
    let mut failed = None;
    for run in runs {
        sayln!("== cell {}", run.cell.name());
        if let Err(error) = act(&run.config, &run.request, arguments) {
            match error {
                ExpectedError::StaleCassettes => failed = Some(error),
                other => return Err(other),
            }
        }
    }
    failed.map_or(Ok(()), Err)
}

/// The action asked for, on the cassette folder of `request` (a cell's, in a matrix).
fn act(config: &Config, request: &Request, arguments: &CassettesArgs) -> Outcome {
    let folder = session::cassette_folder(config, request);
    match arguments
        .action
        .as_ref()
        .unwrap_or(&CassettesAction::Status)
    {
        CassettesAction::Status => status(config, request),
        CassettesAction::Prune => {
            let suite = session::load_suite(config, request, &Catalogue::builtin())
                .map_err(ExpectedError::Session)?;
            let task_ids: Vec<String> = suite.tasks.iter().map(|task| task.id.clone()).collect();
            // A task file that does not load still names its cassette: never prune then.
            if !suite.invalid.is_empty() {
                return Err(ExpectedError::Usage(
                    "some task files are invalid (see `cargo clawtest validate`): their cassettes cannot be told from unused ones, so none is pruned",
                ));
            }
            let removed = clawtest::cassettes::prune(&task_ids, &folder)
                .map_err(|error| ExpectedError::CassetteFolder(folder.clone(), error))?;
            for path in &removed {
                sayln!("removed {}", path.display());
            }
            sayln!("{} unused cassette(s) removed", removed.len());
            Ok(())
        }
        CassettesAction::Upgrade => upgrade(&folder),
    }
}

/// Rewrites the recorded cassettes of `folder` in the current format, saying what became of
/// each.
fn upgrade(folder: &std::path::Path) -> Outcome {
    let upgraded = clawtest::cassettes::upgrade(folder)
        .map_err(|error| ExpectedError::CassetteFolder(folder.to_path_buf(), error))?;
    let (mut before, mut after) = (0, 0);
    for file in &upgraded {
        before += file.before;
        after += file.after;
        let what = match &file.outcome {
            clawtest::cassettes::Upgrade::Rewritten { marked_whole } => format!(
                "rewritten, {} → {} bytes, {marked_whole} request(s) marked whole",
                file.before, file.after
            ),
            clawtest::cassettes::Upgrade::Unchanged => "already current".into(),
            clawtest::cassettes::Upgrade::HandWritten => {
                "hand-written (it has comments): left as it is".into()
            }
            clawtest::cassettes::Upgrade::Unreadable(reason) => {
                format!("not read, left as it is: {reason}")
            }
        };
        sayln!("{}: {what}", file.path.display());
    }
    sayln!("{} file(s), {before} → {after} bytes", upgraded.len());
    Ok(())
}

/// The replay run, then each cassette's state; fails when one needs recording.
fn status(config: &Config, request: &Request) -> Outcome {
    let folder = session::cassette_folder(config, request);
    // As a run: a harness built into its image is built before the image.
    let shim = select::locate_shim_ahead(config, request.backend);
    let mut request = request.clone();
    if build_before_image(config, !request.no_build)? {
        request.no_build = true;
    }
    let request = &request;
    let (task_ids, executed) = runtime()?.block_on(async {
        let chosen = select::choose(config, request.backend, shim)
            .await
            .map_err(ExpectedError::Backend)?;
        errln!("{}", chosen.note);
        errln!("replaying the suite to check its cassettes (no model is called)");
        let prepared = session::prepare(config, request, chosen.sandbox.command_place())
            .map_err(ExpectedError::Session)?;
        warn(&prepared.warnings());
        let task_ids = prepared.task_ids();
        let aborting = std::sync::Arc::clone(&chosen.sandbox);
        let signals = interrupt::Signals::install().map_err(ExpectedError::Runtime)?;
        let interrupted = interrupt::escalate(
            signals.into_source(),
            move || async move { aborting.abort().await },
            |notice| match notice {
                Notice::Stopping => errln!("\ninterrupted: stopping the replay"),
                Notice::Aborted => std::process::exit(i32::from(exit::interrupted())),
            },
        );
        let executed = session::execute(
            config,
            request,
            prepared,
            chosen.sandbox,
            &mut Quiet,
            interrupted,
        )
        .await
        .map_err(ExpectedError::Session)?;
        Ok::<_, ExpectedError>((task_ids, executed))
    })?;
    let mut entries =
        clawtest::cassettes::status(&task_ids, &folder, &executed.summary, &executed.stale);
    // Paths as the suite's files are named: from its root.
    for entry in &mut entries {
        if let Ok(relative) = entry.path.strip_prefix(&config.root) {
            entry.path = relative.to_path_buf();
        }
    }
    // The library made the agent's and the model's text harmless for a terminal.
    out!("{}", clawtest::cassettes::render(&entries));
    let attention = entries
        .iter()
        .filter(|entry| entry.state.needs_attention())
        .count();
    if attention == 0 {
        sayln!("{} cassette(s): every one current", entries.len());
        return Ok(());
    }
    sayln!(
        "{attention} of {} cassette(s) need recording: `cargo clawtest --mode record-missing` records exactly those (against your provider, or `cargo clawtest model --script …`)",
        entries.len()
    );
    Err(ExpectedError::StaleCassettes)
}

/// The status's replay reports nothing as it goes: the states are shown at its end.
struct Quiet;

impl Reporter for Quiet {
    fn report(&mut self, _event: &Event) {}
}
