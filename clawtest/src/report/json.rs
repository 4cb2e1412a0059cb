//! JSON results: the run summary with a schema name and version. It is the canonical record of
//! a run: `cargo clawtest merge` combines shards from it, and `--baseline` compares against
//! it. The schema is documented in docs/results.md.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::results::RunSummary;

/// The schema this build writes and reads. Bump the number on any incompatible change.
pub const SCHEMA: &str = "clawtest-results/1";

#[derive(Serialize)]
struct Document<'a> {
    schema: &'static str,
    #[serde(flatten)]
    summary: &'a RunSummary,
}

#[derive(Deserialize)]
struct OwnedDocument {
    schema: String,
    #[serde(flatten)]
    summary: RunSummary,
}

/// A results file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    /// The file cannot be read.
    #[error("cannot read {}: {message}", path.display())]
    Unreadable {
        /// The results file.
        path: PathBuf,
        /// Why it cannot be read.
        message: String,
    },
    /// The file is not JSON, or not the results' shape.
    #[error("{} is not a clawtest results file: {message}", path.display())]
    Invalid {
        /// The results file.
        path: PathBuf,
        /// Where and why it does not parse.
        message: String,
    },
    /// The file names another schema version than [`SCHEMA`].
    #[error("{} was written with schema `{found}`; this build reads `{SCHEMA}` (re-run with this version)", path.display())]
    Schema {
        /// The results file.
        path: PathBuf,
        /// The schema it names.
        found: String,
    },
}

/// The results document, pretty-printed.
pub fn render(summary: &RunSummary) -> String {
    serde_json::to_string_pretty(&Document {
        schema: SCHEMA,
        summary,
    })
    .unwrap_or_else(|error| format!("{{\"error\": \"results could not be serialised: {error}\"}}"))
}

/// Reads a results file written by [`render`].
pub fn read(path: &Path) -> Result<RunSummary, ResultsError> {
    let text = std::fs::read_to_string(path).map_err(|error| ResultsError::Unreadable {
        path: path.to_path_buf(),
        message: error.to_string(),
    })?;
    let probe: serde_json::Value =
        serde_json::from_str(&text).map_err(|error| ResultsError::Invalid {
            path: path.to_path_buf(),
            message: error.to_string(),
        })?;
    match probe.get("schema").and_then(serde_json::Value::as_str) {
        Some(SCHEMA) => {}
        Some(other) => {
            return Err(ResultsError::Schema {
                path: path.to_path_buf(),
                found: other.to_string(),
            });
        }
        None => {
            return Err(ResultsError::Invalid {
                path: path.to_path_buf(),
                message: "no `schema` field".into(),
            });
        }
    }
    let document: OwnedDocument =
        serde_json::from_value(probe).map_err(|error| ResultsError::Invalid {
            path: path.to_path_buf(),
            message: error.to_string(),
        })?;
    debug_assert_eq!(document.schema, SCHEMA);
    // Parsed, then checked: a number out of its range is named with its field.
    crate::results::ranges::check(&document.summary).map_err(|message| ResultsError::Invalid {
        path: path.to_path_buf(),
        message,
    })?;
    Ok(document.summary)
}
