//! `cargo clawtest report RESULTS --html DIR [--trajectories DIR…]`: the HTML report of a run
//! that has finished (or of shards merged), from its JSON results and saved trajectories.

use clawtest::report::html;
use clawtest::report::json;
use clawtest::report::publish::PublishError;

use super::Outcome;
use crate::cli::ReportArgs;
use crate::errors::ExpectedError;

pub fn run(arguments: &ReportArgs) -> Outcome {
    let summary = json::read(&arguments.results).map_err(ExpectedError::Results)?;
    let path =
        html::write(&summary, &arguments.trajectories, &arguments.html).map_err(|source| {
            ExpectedError::Publish(PublishError::Write {
                path: arguments.html.join(html::INDEX),
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
