//! `cargo clawtest report RESULTS --html DIR [--trajectories DIR…]`: the HTML report of a run
//! that has finished (or of shards merged), from its JSON results and saved trajectories;
//! `--clawenvkit DIR`: the same results in ClawEnvKit's layout of grading files.

use std::path::Path;

use clawtest::report::publish::PublishError;
use clawtest::report::{clawenvkit, html, json};
use clawtest::results::RunSummary;

use super::Outcome;
use crate::cli::ReportArgs;
use crate::errors::ExpectedError;

pub fn run(arguments: &ReportArgs) -> Outcome {
    let summary = json::read(&arguments.results).map_err(ExpectedError::Results)?;
    if let Some(folder) = &arguments.html {
        write_html(&summary, arguments, folder)?;
    }
    if let Some(folder) = &arguments.clawenvkit {
        write_clawenvkit(&summary, folder)?;
    }
    Ok(())
}

fn write_html(summary: &RunSummary, arguments: &ReportArgs, folder: &Path) -> Outcome {
    let path = html::write(summary, &arguments.trajectories, folder).map_err(|source| {
        ExpectedError::Publish(PublishError::Write {
            path: folder.join(html::INDEX),
            source,
        })
    })?;
    // Say what was written and what it shows, not only where.
    sayln!(
        "wrote {}: {} task(s), {}; open it in a browser",
        path.display(),
        summary.verdicts.len(),
        summary
            .failure_cause()
            .unwrap_or_else(|| "every task passed".into())
    );
    Ok(())
}

fn write_clawenvkit(summary: &RunSummary, folder: &Path) -> Outcome {
    let written = clawenvkit::write(summary, folder).map_err(|source| {
        ExpectedError::Publish(PublishError::Write {
            path: folder.to_path_buf(),
            source,
        })
    })?;
    let gradings = written
        .files
        .iter()
        .filter(|file| file.ends_with("grading.json"))
        .count();
    sayln!(
        "wrote {} grading.json (and reward.txt) in ClawEnvKit's layout under {}",
        gradings,
        folder.display()
    );
    if !written.ungraded.is_empty() {
        sayln!(
            "no grading for {} task(s) with no graded trial: {}",
            written.ungraded.len(),
            clawtest::escape::terminal(&written.ungraded.join(", "))
        );
    }
    Ok(())
}
