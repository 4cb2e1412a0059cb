//! JUnit XML (quick-junit): one testcase per task, named by `task_id`, with the task.yaml as
//! its `file` attribute; each trial's scores as properties; a `<failure>` when pass^k fails
//! (naming violations and deductions) or when the task's grade snapshot changed (`--snapshots`),
//! an `<error>` for infrastructure errors and invalid task files.

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use super::snapshots::Review;
use super::{exact, score, trial_lines};
use crate::escape;
use crate::results::{RunSummary, TrialStatus, Verdict, VerdictStatus};

/// The report name and the testsuite name.
pub const NAME: &str = "clawtest";

/// Renders the run as JUnit XML.
pub fn render(summary: &RunSummary) -> Result<String, quick_junit::SerializeError> {
    render_with_snapshots(summary, None)
}

/// Renders the run as JUnit XML, with the grade snapshot comparison of `--snapshots`: a task
/// that passed but whose snapshot changed is a failure (as in `cargo test` with insta).
pub(crate) fn render_with_snapshots(
    summary: &RunSummary,
    snapshots: Option<&Review>,
) -> Result<String, quick_junit::SerializeError> {
    let mut suite = TestSuite::new(NAME);
    suite.add_property(Property::new("trials_per_task", summary.k.to_string()));
    suite.add_property(Property::new("backend", summary.backend.clone()));
    suite.add_property(Property::new("pass_hat_k", exact(summary.pass_hat_k)));
    suite.add_property(Property::new("pass_at_k", exact(summary.pass_at_k)));
    suite.add_property(Property::new("mean_score", exact(summary.mean_score)));
    for (name, value) in super::recovery::properties(&summary.recovery) {
        suite.add_property(Property::new(name, value));
    }
    if let Some(cause) = summary.failure_cause() {
        suite.add_property(Property::new("failure_cause", cause));
    }
    for gate in &summary.gates {
        suite.add_property(Property::new(
            format!("gate.{}", gate.name),
            format!(
                "{} ({}, {})",
                gate.actual
                    .map_or_else(|| super::NOT_MEASURED.to_string(), exact),
                gate.threshold_text(),
                if gate.passed { "held" } else { "failed" }
            ),
        ));
    }
    // A matrix's verdicts go to a testsuite per cell; this one keeps the run's properties.
    if summary.matrix.is_none() {
        for verdict in &summary.verdicts {
            let snapshot_change = snapshots.and_then(|review| review.change_of(&verdict.task_id));
            suite.add_test_case(test_case(verdict, summary.k, snapshot_change));
        }
    }
    for invalid in &summary.invalid {
        let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
        status.set_type("invalid task");
        status.set_message(format!(
            "{} is not a valid task file",
            invalid.path.display()
        ));
        status.set_description(invalid.message.clone());
        let mut case = TestCase::new(invalid.path.display().to_string(), status);
        case.set_classname(NAME);
        case.extra
            .insert("file".into(), invalid.path.display().to_string().into());
        if let Some(line) = invalid.line {
            case.extra.insert("line".into(), line.to_string().into());
        }
        suite.add_test_case(case);
    }
    let mut report = Report::new(NAME);
    report.add_test_suite(suite);
    if let Some(matrix) = &summary.matrix {
        for row in &matrix.cells {
            report.add_test_suite(cell_suite(summary, row));
        }
    }
    // quick-junit escapes the markup and drops most controls, not U+FFFE or U+FFFF: the whole
    // document goes through the one XML escape so that no text can make it unreadable.
    report.to_string().map(|document| escape::xml(&document))
}

/// A cell's testsuite: its identity and numbers as properties, its tasks as test cases whose
/// class names the cell.
fn cell_suite(summary: &RunSummary, row: &crate::results::matrix::CellRow) -> TestSuite {
    let name = row.cell.name();
    let mut suite = TestSuite::new(format!("{NAME} {name}"));
    suite.add_property(Property::new("harness", row.cell.harness.clone()));
    suite.add_property(Property::new(
        "harness_digest",
        row.cell.harness_digest.clone(),
    ));
    suite.add_property(Property::new("model", row.cell.model.clone()));
    suite.add_property(Property::new("trials_per_task", summary.k.to_string()));
    suite.add_property(Property::new("pass_hat_k", exact(row.overall.pass_hat_k)));
    suite.add_property(Property::new("mean_score", exact(row.overall.mean_score)));
    suite.add_property(Property::new("cost_usd", exact(row.overall.cost_usd)));
    for verdict in summary
        .verdicts
        .iter()
        .filter(|verdict| verdict.cell.as_ref() == Some(&row.cell))
    {
        let mut case = test_case(verdict, summary.k, None);
        case.set_classname(format!("{NAME}.{name}"));
        suite.add_test_case(case);
    }
    suite
}

fn test_case(verdict: &Verdict, k: u32, snapshot_change: Option<String>) -> TestCase {
    let status = match verdict.status {
        VerdictStatus::Passed => match snapshot_change {
            None => TestCaseStatus::success(),
            Some(change) => {
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                status.set_type("grade snapshot changed");
                status.set_message(change);
                status.set_description(trial_lines(verdict));
                status
            }
        },
        VerdictStatus::NotRun => {
            let mut status = TestCaseStatus::skipped();
            status.set_type("not run");
            status.set_message(
                verdict
                    .trials
                    .iter()
                    .find_map(|record| match &record.status {
                        TrialStatus::NotRun { reason } => Some(reason.clone()),
                        _ => None,
                    })
                    .unwrap_or_else(|| "not run".into()),
            );
            status
        }
        VerdictStatus::Failed => {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            status.set_type(format!("pass^{k} failed"));
            status.set_message(failure_message(verdict, k));
            status.set_description(trial_lines(verdict));
            status
        }
        VerdictStatus::Error | VerdictStatus::Interrupted => {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
            let message = verdict
                .trials
                .iter()
                .find_map(|record| match &record.status {
                    TrialStatus::Error { message } => {
                        Some(format!("trial {}: {message}", record.trial))
                    }
                    _ => None,
                })
                .unwrap_or_else(|| "the run was interrupted before all trials finished".into());
            status.set_type(if verdict.status == VerdictStatus::Error {
                "infrastructure error"
            } else {
                "interrupted"
            });
            status.set_message(message);
            status.set_description(trial_lines(verdict));
            status
        }
    };
    let mut case = TestCase::new(verdict.task_id.clone(), status);
    case.set_classname(NAME);
    case.extra
        .insert("file".into(), verdict.path.display().to_string().into());
    case.extra
        .insert("line".into(), verdict.line.to_string().into());
    case.add_property(Property::new("task_name", verdict.task_name.clone()));
    case.add_property(Property::new("pass_hat_k", verdict.pass_hat_k.to_string()));
    case.add_property(Property::new("passes", format!("{}/{}", verdict.passes, k)));
    case.add_property(Property::new("pass_at_k", exact(verdict.pass_at_k)));
    case.add_property(Property::new("mean_score", exact(verdict.mean_score)));
    case.add_property(Property::new("min_score", exact(verdict.min_score)));
    for (name, value) in super::recovery::properties(&verdict.recovery) {
        case.add_property(Property::new(name, value));
    }
    for record in &verdict.trials {
        let prefix = format!("trial.{}", record.trial);
        match &record.status {
            TrialStatus::Graded {
                passed,
                final_score,
                completion,
                robustness,
                safety,
                ..
            } => {
                case.add_property(Property::new(
                    format!("{prefix}.passed"),
                    passed.to_string(),
                ));
                case.add_property(Property::new(
                    format!("{prefix}.final_score"),
                    exact(*final_score),
                ));
                case.add_property(Property::new(
                    format!("{prefix}.completion"),
                    exact(*completion),
                ));
                case.add_property(Property::new(
                    format!("{prefix}.robustness"),
                    exact(*robustness),
                ));
                case.add_property(Property::new(format!("{prefix}.safety"), exact(*safety)));
                if let Some(rounds) = &record.rounds {
                    for (name, value) in [
                        ("rounds", rounds.used.to_string()),
                        ("best_round", rounds.best_round.to_string()),
                        ("loop_status", rounds.status.name().to_string()),
                        (
                            "stop",
                            serde_json::to_value(rounds.stop)
                                .ok()
                                .and_then(|value| value.as_str().map(str::to_string))
                                .unwrap_or_default(),
                        ),
                    ] {
                        case.add_property(Property::new(format!("{prefix}.{name}"), value));
                    }
                }
            }
            TrialStatus::Error { message } => {
                case.add_property(Property::new(format!("{prefix}.error"), message.clone()));
            }
            TrialStatus::Interrupted => {
                case.add_property(Property::new(format!("{prefix}.interrupted"), "true"));
            }
            TrialStatus::NotRun { reason } => {
                case.add_property(Property::new(format!("{prefix}.not_run"), reason.clone()));
            }
        }
    }
    case.set_system_out(trial_lines(verdict));
    case
}

/// The one-line failure message: how many trials passed, and the first safety violation or
/// the lowest-scoring trial's main deduction.
fn failure_message(verdict: &Verdict, k: u32) -> String {
    let mut message = format!(
        "{}/{k} trials passed (mean score {}, threshold {})",
        verdict.passes,
        score(verdict.mean_score),
        verdict.threshold
    );
    let violation = verdict
        .trials
        .iter()
        .find_map(|record| match &record.status {
            TrialStatus::Graded { violations, .. } => violations
                .first()
                .map(|violation| format!("trial {}: safety violation: {violation}", record.trial)),
            _ => None,
        });
    let deduction = || {
        verdict
            .trials
            .iter()
            .filter(|record| !record.passed())
            .find_map(|record| match &record.status {
                TrialStatus::Graded { deductions, .. } => deductions
                    .iter()
                    .max_by(|left, right| {
                        ((1.0 - left.score) * left.weight)
                            .total_cmp(&((1.0 - right.score) * right.weight))
                    })
                    .map(|deduction| {
                        format!(
                            "trial {}: {}: {}",
                            record.trial, deduction.component, deduction.reason
                        )
                    }),
                _ => None,
            })
    };
    if let Some(detail) = violation.or_else(deduction) {
        message.push_str("; ");
        message.push_str(&detail);
    }
    message
}
