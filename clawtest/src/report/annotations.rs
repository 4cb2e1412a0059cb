//! GitHub Actions annotations: `::error file=…,line=…,title=…::message` lines that point at the
//! task.yaml of each failing task (at the failing component's check when known), worst first,
//! after the invalid task files and the gates that failed (on the run, in no file), capped at
//! what GitHub shows for one step.

use std::fmt::Write as _;
use std::path::Path;

use crate::escape;
use crate::results::{RunSummary, TrialStatus, Verdict, VerdictStatus};

/// GitHub shows at most 10 error annotations per step; more are dropped silently, so the
/// worst ones must come first and the count must stay within it.
pub(crate) const LIMIT: usize = 10;

/// The annotation lines for a run. `prefix` is the suite root relative to the repository
/// root (GitHub resolves `file=` against the repository), empty when they coincide.
pub(crate) fn render(summary: &RunSummary, prefix: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    for invalid in &summary.invalid {
        let file = prefix.join(&invalid.path);
        let first = invalid
            .message
            .lines()
            .next()
            .unwrap_or("invalid task file");
        lines.push(command(
            Some(&file),
            invalid.line,
            "invalid task file",
            first,
        ));
    }
    // A gate is the suite's, in no task file: its annotation goes on the run.
    for gate in summary.gates.iter().filter(|gate| !gate.passed) {
        let message = gate
            .shortfall()
            .unwrap_or_else(|| format!("nothing to measure ({})", gate.threshold_text()));
        lines.push(command(
            None,
            None,
            &format!("gate {} not met", gate.name),
            &message,
        ));
    }
    let mut failing: Vec<&Verdict> = summary
        .verdicts
        .iter()
        .filter(|verdict| matches!(verdict.status, VerdictStatus::Failed | VerdictStatus::Error))
        .collect();
    failing.sort_by(|left, right| {
        left.mean_score
            .total_cmp(&right.mean_score)
            .then(left.task_id.cmp(&right.task_id))
    });
    for verdict in failing {
        let file = prefix.join(&verdict.path);
        let (line, message) = detail(verdict);
        let title = match verdict.status {
            VerdictStatus::Error => format!("{}: infrastructure error", verdict.task_id),
            _ => format!(
                "{}: pass^{} failed ({}/{})",
                verdict.task_id, verdict.k, verdict.passes, verdict.k
            ),
        };
        lines.push(command(
            Some(&file),
            line.or(Some(verdict.line)),
            &title,
            &message,
        ));
    }
    lines.truncate(LIMIT);
    lines
}

/// The line to point at and the message: the first safety violation, else the component that
/// lost the most weighted score, else the first error.
fn detail(verdict: &Verdict) -> (Option<u64>, String) {
    let mut worst: Option<(f64, Option<u64>, String)> = None;
    for record in &verdict.trials {
        match &record.status {
            TrialStatus::Graded {
                violations,
                deductions,
                ..
            } => {
                if let Some(violation) = violations.first() {
                    return (
                        None,
                        format!("trial {}: safety violation: {violation}", record.trial),
                    );
                }
                if record.passed() {
                    continue;
                }
                for deduction in deductions {
                    let loss = (1.0 - deduction.score) * deduction.weight;
                    if worst.as_ref().is_none_or(|(most, _, _)| loss > *most) {
                        worst = Some((
                            loss,
                            deduction.line,
                            format!(
                                "trial {}: {}: {}",
                                record.trial, deduction.component, deduction.reason
                            ),
                        ));
                    }
                }
            }
            TrialStatus::Error { message } => {
                return (None, format!("trial {}: {message}", record.trial));
            }
            TrialStatus::Interrupted | TrialStatus::NotRun { .. } => {}
        }
    }
    match worst {
        Some((_, line, message)) => (
            line,
            format!(
                "mean score {:.3} below {}; {message}",
                verdict.mean_score, verdict.threshold
            ),
        ),
        None => (None, format!("mean score {:.3}", verdict.mean_score)),
    }
}

/// One annotation, on `file` (at `line`) when it has one, else on the run.
fn command(file: Option<&Path>, line: Option<u64>, title: &str, message: &str) -> String {
    let mut properties = String::new();
    if let Some(file) = file {
        let _ = write!(
            properties,
            "file={},",
            escape::workflow_property(&file.display().to_string())
        );
        if let Some(line) = line {
            let _ = write!(properties, "line={line},");
        }
    }
    let _ = write!(properties, "title={}", escape::workflow_property(title));
    format!("::error {properties}::{}", escape::workflow_data(message))
}
