//! Grade snapshots (`run --snapshots`, and `clawtest::main!` with `snapshots = true`): each
//! task's grade breakdown — per trial the scores, the violations, every component's score and
//! reason, and the faults not recovered — kept as an insta snapshot (`snapshots/<task_id>.snap`
//! in the suite). Both paths write the same [`content`]. A run compares with it the way insta
//! does: a change is written beside it as `.snap.new` for `cargo insta review`, and fails the
//! run. Nothing volatile is in a breakdown (no times, tokens, costs or paths), so no redaction
//! is needed beyond leaving those out.
//!
//! The run compares them before its summary is built (`RunOptions::snapshots`), and the
//! summary's status counts a change, so that a change fails results.json, JUnit, the Markdown
//! summary and the terminal's result line as it fails the exit code.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::{listed, score};
use crate::results::cause::SnapshotFailures;
use crate::results::{TrialStatus, Verdict};

/// Where `--snapshots` keeps each task's grade snapshot, relative to the suite root.
pub const FOLDER: &str = "snapshots";

/// What `INSTA_UPDATE` (insta's own variable) asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateMode {
    /// Write a pending `.snap.new` for a change (insta's default outside CI).
    New,
    /// Overwrite the snapshot (`INSTA_UPDATE=always`).
    Always,
    /// Write nothing (`INSTA_UPDATE=no`, and insta's default in CI).
    No,
}

impl UpdateMode {
    /// From `INSTA_UPDATE` and `CI`, as insta reads them.
    pub fn from_environment() -> UpdateMode {
        match std::env::var("INSTA_UPDATE").as_deref() {
            Ok("always") | Ok("unseen") => UpdateMode::Always,
            Ok("no") => UpdateMode::No,
            Ok("new") => UpdateMode::New,
            _ if std::env::var("CI").is_ok_and(|value| !value.is_empty() && value != "false") => {
                UpdateMode::No
            }
            _ => UpdateMode::New,
        }
    }
}

/// How one task's breakdown compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapshotComparison {
    /// The committed snapshot holds the same breakdown.
    Matched,
    /// Written or updated (`INSTA_UPDATE=always`).
    Written,
    /// Differs from (or has no) committed snapshot; `pending` is the `.snap.new` written, if any.
    Changed {
        /// The committed snapshot file (`<task_id>.snap` in the snapshot folder).
        snapshot: PathBuf,
        /// The `.snap.new` written for review; `None` with `INSTA_UPDATE=no`.
        pending: Option<PathBuf>,
        /// There was no committed snapshot yet.
        new: bool,
    },
}

impl SnapshotComparison {
    /// What to tell the user about it (the binary prints `SNAPSHOT <task>: <this>`, JUnit
    /// takes it as the failure message); nothing for a match.
    pub fn description(&self) -> Option<String> {
        match self {
            SnapshotComparison::Matched => None,
            SnapshotComparison::Written => Some("written".into()),
            SnapshotComparison::Changed {
                snapshot,
                pending,
                new,
            } => {
                let what = if *new { "new" } else { "changed" };
                Some(match pending {
                    Some(pending) => format!(
                        "{what}; review {} with `cargo insta review` (or INSTA_UPDATE=always)",
                        pending.display()
                    ),
                    None => format!(
                        "{what} against {} (INSTA_UPDATE=no: nothing written)",
                        snapshot.display()
                    ),
                })
            }
        }
    }
}

/// A run's snapshot comparison (`run --snapshots`), made before its outputs are written.
#[derive(Debug)]
pub struct Review {
    /// The snapshot folder compared with.
    pub folder: PathBuf,
    /// Each task's comparison, in the order of the verdicts, or why the snapshots could not be
    /// written (which fails the run like a change: nothing was verified).
    pub outcome: std::io::Result<Vec<(String, SnapshotComparison)>>,
}

impl Review {
    /// True when a snapshot changed (or is new), or the comparison could not be made.
    pub fn changed(&self) -> bool {
        match &self.outcome {
            Ok(results) => results
                .iter()
                .any(|(_, comparison)| matches!(comparison, SnapshotComparison::Changed { .. })),
            Err(_) => true,
        }
    }

    /// The snapshots that fail the run, by kind, for its summary.
    pub fn failures(&self) -> SnapshotFailures {
        let Ok(results) = &self.outcome else {
            return SnapshotFailures {
                not_compared: true,
                ..SnapshotFailures::default()
            };
        };
        let mut failures = SnapshotFailures::default();
        for (task_id, comparison) in results {
            if let SnapshotComparison::Changed { new, .. } = comparison {
                let list = if *new {
                    &mut failures.new
                } else {
                    &mut failures.changed
                };
                list.push(task_id.clone());
            }
        }
        failures
    }

    /// Each task whose snapshot did not simply match, with what became of it (nothing when the
    /// comparison could not be made: that is an error, told apart).
    pub fn changes(&self) -> Vec<(String, String)> {
        let Ok(results) = &self.outcome else {
            return Vec::new();
        };
        results
            .iter()
            .filter_map(|(task_id, comparison)| Some((task_id.clone(), comparison.description()?)))
            .collect()
    }

    /// The description of `task_id`'s snapshot when it changed.
    pub(crate) fn change_of(&self, task_id: &str) -> Option<String> {
        let results = self.outcome.as_ref().ok()?;
        results
            .iter()
            .find(|(id, comparison)| {
                id == task_id && matches!(comparison, SnapshotComparison::Changed { .. })
            })
            .and_then(|(_, comparison)| comparison.description())
    }
}

/// Compares the verdicts' grade snapshots with `folder`, as `mode` asks. `None` for an
/// interrupted run, whose partial breakdowns are not compared. What a change does to the run
/// is decided with everything else, by [`crate::results::RunSummary::new`]
/// (`snapshots_changed`).
pub(crate) fn review(
    verdicts: &[Verdict],
    interrupted: bool,
    folder: &Path,
    mode: UpdateMode,
) -> Option<Review> {
    if interrupted {
        return None;
    }
    Some(Review {
        folder: folder.to_path_buf(),
        outcome: compare(verdicts, folder, mode),
    })
}

/// The text of a verdict's breakdown, as snapshotted (by `--snapshots` and by
/// `clawtest::main!`'s insta hook alike).
pub fn content(verdict: &Verdict) -> String {
    let mut text = format!(
        "task: {}\nstatus: {:?} ({}/{} trials passed)\n",
        verdict.task_id, verdict.status, verdict.passes, verdict.k
    );
    for record in &verdict.trials {
        match &record.status {
            TrialStatus::Graded {
                passed,
                final_score,
                completion,
                robustness,
                safety,
                violations,
                components,
                faults_injected,
                unrecovered_faults,
                recovery,
                ..
            } => {
                let _ = writeln!(
                    text,
                    "trial {}: {} final {} completion {} robustness {} safety {}",
                    record.trial,
                    if *passed { "pass" } else { "fail" },
                    score(*final_score),
                    score(*completion),
                    super::recovery::trial_robustness(*robustness, *faults_injected),
                    safety
                );
                for violation in violations {
                    let _ = writeln!(text, "  violation: {violation}");
                }
                for component in components {
                    let _ = writeln!(
                        text,
                        "  {} {} × {}: {}",
                        component.component,
                        score(component.score),
                        component.weight,
                        component.reason
                    );
                }
                if !recovery.is_empty() {
                    let _ = writeln!(
                        text,
                        "  faults: {}; not recovered: {}",
                        super::recovery::phrase(recovery),
                        listed(unrecovered_faults)
                    );
                }
                // A closed loop's rounds: each one's message, verdict, attempt state and score (no
                // times).
                if let Some(rounds) = &record.rounds {
                    let _ = writeln!(text, "  {}", super::rounds_phrase(rounds));
                    for round in &rounds.rounds {
                        let _ = writeln!(
                            text,
                            "  round {}: {} ({}) {} missing {}{}; message: {}",
                            round.number,
                            super::verdict_name(round.verdict),
                            round.attempt_state.name(),
                            score(round.score),
                            listed(&round.missing),
                            super::model_note(round),
                            round.message
                        );
                    }
                }
            }
            TrialStatus::Error { message } => {
                let _ = writeln!(text, "trial {}: error: {message}", record.trial);
            }
            TrialStatus::Interrupted => {
                let _ = writeln!(text, "trial {}: interrupted", record.trial);
            }
            TrialStatus::NotRun { .. } => {
                let _ = writeln!(text, "trial {}: not run", record.trial);
            }
        }
    }
    text
}

/// insta's file format: a small YAML header, then the content.
fn file_text(verdict: &Verdict, content: &str) -> String {
    format!(
        "---\nsource: {}\nexpression: grade breakdown of {}\n---\n{content}",
        verdict.path.display(),
        verdict.task_id
    )
}

/// The content of a snapshot file (after its header), if it is one.
fn content_of(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("---\n")?;
    let end = rest.find("\n---\n")?;
    Some(&rest[end + 5..])
}

/// Compares every verdict's breakdown with `folder/<task_id>.snap`.
pub(crate) fn compare(
    verdicts: &[Verdict],
    folder: &Path,
    mode: UpdateMode,
) -> std::io::Result<Vec<(String, SnapshotComparison)>> {
    let mut results = Vec::new();
    for verdict in verdicts {
        let content = content(verdict);
        let snapshot = folder.join(format!("{}.snap", verdict.task_id));
        let pending_path = folder.join(format!("{}.snap.new", verdict.task_id));
        let existing = std::fs::read_to_string(&snapshot).ok();
        let matched = existing
            .as_deref()
            .and_then(content_of)
            .is_some_and(|old| old.trim_end() == content.trim_end());
        let comparison = if matched {
            // A pending file from an earlier run is stale once the snapshot matches.
            let _ = std::fs::remove_file(&pending_path);
            SnapshotComparison::Matched
        } else {
            match mode {
                UpdateMode::Always => {
                    write(&snapshot, &file_text(verdict, &content))?;
                    let _ = std::fs::remove_file(&pending_path);
                    SnapshotComparison::Written
                }
                UpdateMode::New => {
                    write(&pending_path, &file_text(verdict, &content))?;
                    SnapshotComparison::Changed {
                        snapshot,
                        pending: Some(pending_path),
                        new: existing.is_none(),
                    }
                }
                UpdateMode::No => SnapshotComparison::Changed {
                    snapshot,
                    pending: None,
                    new: existing.is_none(),
                },
            }
        };
        results.push((verdict.task_id.clone(), comparison));
    }
    Ok(results)
}

/// Writes a snapshot file (a recording the user reviews: synced, never through a link), its
/// path in the error.
fn write(path: &Path, text: &str) -> std::io::Result<()> {
    crate::persist::write(path, text.as_bytes(), crate::persist::Durability::Recording)
        .map_err(|error| std::io::Error::new(error.kind(), format!("{}: {error}", path.display())))
}
