//! Writing a finished run's files: JUnit XML, the JSON results (and the saved baseline, the same
//! document), the HTML report (`--html DIR`, with the saved trajectories), the Markdown summary
//! (to `--summary` and appended to `$GITHUB_STEP_SUMMARY`, linking to the HTML report's
//! artifact on GitHub Actions), and the GitHub annotation lines. Every output is written from one summary whose status is final
//! (snapshot comparison included: [`crate::results::RunSummary`] decides it), so they all agree.
//!
//! Nothing is printed here: the annotation lines and the warnings come back in [`Published`]
//! for the binary to print. What GitHub Actions asks for is read once into [`Github`].

use std::path::{Path, PathBuf};

use super::snapshots::Review;
use super::{annotations, html, json, junit, markdown};
use crate::persist::Durability;
use crate::results::RunSummary;

/// Where a run's (or a merge's) results go, as the command line asks.
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    /// `--junit`: JUnit XML.
    pub junit: Option<PathBuf>,
    /// `--json`: the JSON results.
    pub json: Option<PathBuf>,
    /// `--summary`: the Markdown summary.
    pub summary: Option<PathBuf>,
    /// `--save-baseline`: the JSON results again, as a later run's baseline.
    pub save_baseline: Option<PathBuf>,
    /// `--annotations`: print annotations even outside GitHub Actions.
    pub annotations: bool,
    /// `--html DIR` (or `[report] html`): the HTML report's folder.
    pub html: Option<PathBuf>,
    /// Where the trials' trajectories were saved (`--trajectories`), for the HTML report.
    pub trajectories: Vec<PathBuf>,
}

/// What the GitHub Actions environment asks of a run's outputs.
#[derive(Debug, Clone, Default)]
pub struct Github {
    /// `$GITHUB_STEP_SUMMARY`: the file the Markdown summary is appended to.
    pub step_summary: Option<PathBuf>,
    /// `GITHUB_ACTIONS=true`: annotations are printed.
    pub actions: bool,
    /// `$GITHUB_WORKSPACE`: the repository annotation paths are relative to (else the current
    /// directory).
    pub workspace: Option<PathBuf>,
    /// This workflow run's page (`$GITHUB_SERVER_URL/$GITHUB_REPOSITORY/actions/runs/
    /// $GITHUB_RUN_ID`), where the HTML report's artifact is listed.
    pub run_url: Option<String>,
}

impl Github {
    /// Read from the process environment.
    pub fn from_environment() -> Github {
        Github {
            step_summary: std::env::var_os("GITHUB_STEP_SUMMARY")
                .filter(|path| !path.is_empty())
                .map(PathBuf::from),
            actions: std::env::var("GITHUB_ACTIONS").is_ok_and(|value| value == "true"),
            workspace: std::env::var_os("GITHUB_WORKSPACE").map(PathBuf::from),
            run_url: run_url(|name| std::env::var(name).ok()),
        }
    }
}

/// The run's page from the variables GitHub Actions sets, when all three are set.
fn run_url(variable: impl Fn(&str) -> Option<String>) -> Option<String> {
    let [server, repository, run] = ["GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"]
        .map(|name| variable(name).filter(|value| !value.is_empty()));
    Some(format!("{}/{}/actions/runs/{}", server?, repository?, run?))
}

/// The name of the HTML report's artifact in the workflow template
/// (templates/github-workflow.yml), which the Markdown summary links to.
pub const REPORT_ARTIFACT: &str = "clawtest-report";

/// What publishing leaves for the binary to print.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Published {
    /// GitHub `::error` lines, for standard output (empty unless asked for).
    pub annotations: Vec<String>,
    /// What could not be done but does not fail the run (appending to $GITHUB_STEP_SUMMARY).
    pub warnings: Vec<String>,
}

/// An output that could not be written: the run's results are incomplete.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The JUnit report could not be rendered.
    #[error("could not render JUnit XML: {0}")]
    Junit(#[from] quick_junit::SerializeError),
    /// An output file could not be written.
    #[error("could not write {}: {source}", path.display())]
    Write {
        /// The output file.
        path: PathBuf,
        /// Why it could not be written.
        source: std::io::Error,
    },
}

/// Writes every requested output of `summary` (with the snapshot comparison of `--snapshots`,
/// when one was made), in this order: JUnit, JSON results and baseline, HTML report, Markdown
/// summary, then the annotation lines. The first file that cannot be written stops it.
pub fn publish(
    summary: &RunSummary,
    snapshots: Option<&Review>,
    outputs: &Outputs,
    github: &Github,
    suite_root: &Path,
) -> Result<Published, PublishError> {
    let mut published = Published::default();
    if let Some(path) = &outputs.junit {
        write(
            path,
            &junit::render_with_snapshots(summary, snapshots)?,
            Durability::Report,
        )?;
    }
    // Rendered only when written: for a suite of 10,000 tasks it is tens of megabytes, the
    // largest thing a run would hold at its end.
    if outputs.json.is_some() || outputs.save_baseline.is_some() {
        let results = json::render(summary);
        if let Some(path) = &outputs.json {
            write(path, &results, Durability::Report)?;
        }
        // A baseline is kept and compared against later: a crash must not lose it.
        if let Some(path) = &outputs.save_baseline {
            write(path, &results, Durability::Recording)?;
        }
    }
    if let Some(folder) = &outputs.html {
        html::write(summary, &outputs.trajectories, folder).map_err(|source| {
            PublishError::Write {
                path: folder.join(html::INDEX),
                source,
            }
        })?;
    }
    if outputs.summary.is_some() || github.step_summary.is_some() {
        let mut text = markdown::render(summary, markdown::SIZE_LIMIT);
        // On Actions, the HTML report is the run's artifact (the template uploads it); the
        // line is small against the margin between SIZE_LIMIT and GitHub's 1 MiB.
        if let (Some(_), Some(run_url), true) = (&outputs.html, &github.run_url, github.actions) {
            text = markdown::with_report_link(text, run_url, REPORT_ARTIFACT);
        }
        if let Some(path) = &outputs.summary {
            write(path, &text, Durability::Report)?;
        }
        if let Some(path) = &github.step_summary {
            let appended = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|mut file| std::io::Write::write_all(&mut file, text.as_bytes()));
            // The job page misses a summary; the run's own results are complete.
            if let Err(error) = appended {
                published.warnings.push(format!(
                    "could not append to $GITHUB_STEP_SUMMARY ({}): {error}",
                    path.display()
                ));
            }
        }
    }
    if outputs.annotations || github.actions {
        published.annotations =
            annotations::render(summary, &repository_prefix(suite_root, github));
    }
    Ok(published)
}

/// Writes `text` to `path`, creating its folder (never through a link).
fn write(path: &Path, text: &str, durability: Durability) -> Result<(), PublishError> {
    crate::persist::write(path, text.as_bytes(), durability).map_err(|source| PublishError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// The suite root relative to the repository (GitHub resolves annotation paths against
/// $GITHUB_WORKSPACE), or relative to the current directory outside Actions.
fn repository_prefix(suite_root: &Path, github: &Github) -> PathBuf {
    let base = github
        .workspace
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_default();
    let base = std::path::absolute(&base).unwrap_or(base);
    let root = std::path::absolute(suite_root).unwrap_or_else(|_| suite_root.to_path_buf());
    root.strip_prefix(&base)
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
