//! JSON results: the run summary with a schema name and version, for machines (and, later,
//! for merging shards and comparing against a baseline).

use serde::Serialize;

use crate::run::RunSummary;

/// The schema this build writes. Bump the number on any incompatible change.
pub const SCHEMA: &str = "clawtest-results/1";

#[derive(Serialize)]
struct Document<'a> {
    schema: &'static str,
    #[serde(flatten)]
    summary: &'a RunSummary,
}

/// The results document, pretty-printed.
pub fn render(summary: &RunSummary) -> String {
    serde_json::to_string_pretty(&Document {
        schema: SCHEMA,
        summary,
    })
    .unwrap_or_else(|error| format!("{{\"error\": \"results could not be serialised: {error}\"}}"))
}
