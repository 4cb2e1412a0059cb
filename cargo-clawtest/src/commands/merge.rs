//! `cargo clawtest merge RESULTS…`: the JSON results of shards combined into one run, gated and
//! compared with the baseline as a whole, with one JUnit, one summary and one exit code.

use clawtest::config::Config;
use clawtest::report::events::{Event, Reporter};
use clawtest::report::json;
use clawtest::report::terminal::TerminalReporter;
use clawtest::results::merge;

use super::{Outcome, finished, publish, read_baseline, working_directory};
use crate::cli::{GlobalArgs, MergeArgs};
use crate::errors::ExpectedError;

pub fn run(global: &GlobalArgs, arguments: &MergeArgs) -> Outcome {
    let mut parts = Vec::new();
    for path in &arguments.files {
        parts.push((
            path.clone(),
            json::read(path).map_err(ExpectedError::Results)?,
        ));
    }
    // Merging needs only the configuration's gates, if there is one.
    let start = working_directory();
    let config =
        Config::optional(global.config.as_deref(), &start).map_err(ExpectedError::Config)?;
    let configured = config
        .as_ref()
        .map(|config| config.gates.clone())
        .unwrap_or_default();
    let gates = arguments.gates.gates().or(&configured);
    let before = read_baseline(&arguments.outputs)?;
    let summary = merge::merge(parts, &gates, before.as_ref()).map_err(ExpectedError::Merge)?;
    let root = config.map(|config| config.root).unwrap_or(start);
    publish(&summary, None, &arguments.outputs.outputs(), &root)?;
    let mut reporter = TerminalReporter::new(std::io::stdout(), false, false);
    reporter.report(&Event::RunFinished {
        summary: Box::new(summary.clone()),
    });
    finished(summary.status)
}
