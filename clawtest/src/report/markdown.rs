//! The Markdown summary (for `$GITHUB_STEP_SUMMARY` and `--summary PATH`): the result, a table
//! of tasks, invalid files, gates, the top deductions and the comparison with the baseline.
//! Kept under GitHub's size limit: rows that do not fit are counted, not cut mid-table.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{measured, score};
use crate::escape;
use crate::llm::money::dollars;
use crate::results::{RunStatus, RunSummary, TrialStatus, Verdict, VerdictStatus};

/// GitHub refuses step summaries over 1 MiB; stay well below it.
pub(crate) const SIZE_LIMIT: usize = 1_000_000;

/// How many deductions the summary lists.
const TOP_DEDUCTIONS: usize = 10;

/// `text` (a rendered summary) with a line after its heading linking to the HTML report,
/// uploaded as the artifact `artifact` of the workflow run at `run_url`.
pub(crate) fn with_report_link(mut text: String, run_url: &str, artifact: &str) -> String {
    let line = format!(
        "📄 **[HTML report]({run_url}#artifacts)**: the artifact `{artifact}` of this run (open `index.html`)\n\n"
    );
    let at = text.find("\n\n").map_or(text.len(), |end| end + 2);
    text.insert_str(at, &line);
    text
}

/// Renders the summary, at most `limit` bytes long.
pub(crate) fn render(summary: &RunSummary, limit: usize) -> String {
    let k = summary.k;
    let verdict = match summary.status {
        RunStatus::Passed => "✅ passed",
        RunStatus::Failed => "❌ failed",
        RunStatus::Invalid => "❌ invalid tasks",
        RunStatus::InfrastructureError => "⚠️ infrastructure error",
        RunStatus::Interrupted => "⏹️ interrupted (partial results)",
        RunStatus::BudgetExhausted => "⏸️ cost limit reached (some tasks not run)",
    };
    // Why it failed, in the words every output uses (task ids, gate names and numbers: no
    // Markdown in them, task ids being file names).
    let verdict = match summary.failure_cause() {
        Some(cause) => format!("{verdict}: {cause}"),
        None => verdict.to_string(),
    };
    let mut head = format!(
        "## clawtest: {verdict}\n\n**{} of {} task(s) pass pass^{k}** · pass@{k} {} · mean score {} · robustness {} · {} trial(s) per task on the {} backend\n\n",
        summary.tasks_passed,
        summary.verdicts.len(),
        score(summary.pass_at_k),
        score(summary.mean_score),
        measured(summary.mean_robustness),
        k,
        summary.backend
    );
    if summary.cost_usd > 0.0 {
        head.insert_str(
            head.len() - 2,
            &format!(" · model cost {}", dollars(summary.cost_usd)),
        );
    }
    if !summary.gates.is_empty() {
        head.push_str("| gate | threshold | actual | |\n|---|---:|---:|---|\n");
        for gate in &summary.gates {
            let _ = writeln!(
                head,
                "| {} | {} | {} | {} |",
                escape::markdown(&gate.name),
                gate.threshold_column(),
                measured(gate.actual),
                if gate.passed { "held" } else { "**failed**" }
            );
        }
        head.push('\n');
    }

    // The task table is the part that grows with the suite: rows are added while they fit.
    let tail = [
        summary
            .matrix
            .as_ref()
            .map(|matrix| super::matrix::markdown(matrix, k))
            .unwrap_or_default(),
        super::recovery::markdown(summary),
        baseline_section(summary),
        invalid_section(summary),
        deductions_section(summary),
        rounds_section(summary),
        groups_section(summary),
    ]
    .concat();
    let mut table = format!(
        "| task | pass^{k} | passes | mean | min | robustness | safety | tokens | cost |\n|---|---|---:|---:|---:|---:|---|---:|---:|\n"
    );
    let mut rows = order(summary);
    let budget = limit.saturating_sub(head.len() + tail.len() + 200);
    let mut left_out = 0;
    for (index, verdict) in rows.drain(..).enumerate() {
        let tokens: u64 = verdict
            .trials
            .iter()
            .map(|record| match record.status {
                TrialStatus::Graded {
                    input_tokens,
                    output_tokens,
                    ..
                } => input_tokens + output_tokens,
                _ => 0,
            })
            .sum();
        // Unknown when a model had no price (or nothing was called through a priced model).
        let cost: Option<f64> = verdict
            .trials
            .iter()
            .map(|record| match record.status {
                TrialStatus::Graded { cost_usd, .. } => cost_usd,
                _ => Some(0.0),
            })
            .sum();
        let cost = match cost {
            Some(cost) if cost > 0.0 => dollars(cost),
            _ => "–".to_string(),
        };
        let row = format!(
            "| {} | {} | {}/{} | {} | {} | {} | {} | {} | {} |\n",
            // In a matrix, a task's row names its cell: `harness/model/task`.
            escape::markdown_code(&crate::results::matrix::key(verdict)),
            status_cell(verdict.status),
            verdict.passes,
            verdict.k,
            score(verdict.mean_score),
            score(verdict.min_score),
            measured(verdict.mean_robustness),
            if verdict.safety_violations == 0 {
                "ok".to_string()
            } else {
                format!("**{} violation(s)**", verdict.safety_violations)
            },
            tokens,
            cost
        );
        if table.len() + row.len() > budget {
            left_out = summary.verdicts.len() - index;
            break;
        }
        table.push_str(&row);
    }
    if left_out > 0 {
        let _ = writeln!(
            table,
            "\n… and {left_out} more task(s): the summary is cut to fit GitHub's limit; see the JSON results for all."
        );
    }
    let mut text = head;
    text.push_str(&table);
    text.push('\n');
    text.push_str(&tail);
    // The fixed sections are small, but a huge invalid list or message could still overflow.
    if text.len() > limit {
        let mut cut = limit.saturating_sub(100);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("\n\n… (cut to fit GitHub's summary limit)\n");
    }
    text
}

/// The closed-loop tasks' trials: UniClawBench's status, the rounds used, the best round and
/// why the loop stopped; empty when no task ran rounds.
fn rounds_section(summary: &RunSummary) -> String {
    let mut rows = String::new();
    for verdict in &summary.verdicts {
        for record in &verdict.trials {
            if let Some(rounds) = &record.rounds {
                let scores: Vec<String> = rounds
                    .rounds
                    .iter()
                    .map(|round| score(round.score))
                    .collect();
                let _ = writeln!(
                    rows,
                    "| {} | {} | {} | {} | {} | {} | {} |",
                    escape::markdown_code(&verdict.task_id),
                    record.trial,
                    rounds.status.name(),
                    rounds.used,
                    rounds.best_round,
                    scores.join(" → "),
                    rounds.stop.describe()
                );
            }
        }
    }
    if rows.is_empty() {
        return String::new();
    }
    format!(
        "### Closed loop\n\n| task | trial | status | rounds | best | scores | stopped |\n|---|---:|---|---:|---:|---|---|\n{rows}\n"
    )
}

fn status_cell(status: VerdictStatus) -> &'static str {
    match status {
        VerdictStatus::Passed => "✅ pass",
        VerdictStatus::Failed => "❌ fail",
        VerdictStatus::Error => "⚠️ error",
        VerdictStatus::Interrupted => "⏹️ stopped",
        VerdictStatus::NotRun => "⏸️ not run",
    }
}

/// Worst first: errors, failures (lowest mean first), then passes.
fn order(summary: &RunSummary) -> Vec<&Verdict> {
    let mut verdicts: Vec<&Verdict> = summary.verdicts.iter().collect();
    let rank = |status: VerdictStatus| match status {
        VerdictStatus::Error => 0,
        VerdictStatus::Failed => 1,
        VerdictStatus::Interrupted => 2,
        VerdictStatus::NotRun => 3,
        VerdictStatus::Passed => 4,
    };
    verdicts.sort_by(|left, right| {
        rank(left.status)
            .cmp(&rank(right.status))
            .then(left.mean_score.total_cmp(&right.mean_score))
            .then(left.task_id.cmp(&right.task_id))
    });
    verdicts
}

fn invalid_section(summary: &RunSummary) -> String {
    if summary.invalid.is_empty() {
        return String::new();
    }
    let mut text = format!(
        "### Invalid task files ({}, not run)\n\n",
        summary.invalid.len()
    );
    for invalid in &summary.invalid {
        let _ = writeln!(
            text,
            "- {}",
            escape::markdown_code(&invalid.path.display().to_string())
        );
        for line in invalid.message.lines() {
            let _ = writeln!(text, "  - {}", escape::markdown(line));
        }
    }
    text.push('\n');
    text
}

/// The components that lose the most weighted score over the suite: Σ (1 − score) × weight
/// over a task's graded trials, divided by its trial count.
fn deductions_section(summary: &RunSummary) -> String {
    let mut losses: BTreeMap<(String, String), (f64, String)> = BTreeMap::new();
    for verdict in &summary.verdicts {
        let graded = verdict
            .trials
            .iter()
            .filter(|record| matches!(record.status, TrialStatus::Graded { .. }))
            .count()
            .max(1) as f64;
        for record in &verdict.trials {
            if let TrialStatus::Graded { deductions, .. } = &record.status {
                for deduction in deductions {
                    let entry = losses
                        .entry((verdict.task_id.clone(), deduction.component.clone()))
                        .or_insert((0.0, deduction.reason.clone()));
                    entry.0 += (1.0 - deduction.score) * deduction.weight / graded;
                }
            }
        }
    }
    if losses.is_empty() {
        return String::new();
    }
    let mut ranked: Vec<((String, String), (f64, String))> = losses.into_iter().collect();
    ranked.sort_by(|left, right| right.1.0.total_cmp(&left.1.0).then(left.0.cmp(&right.0)));
    let mut text =
        "### Top deductions\n\n| task | component | weighted loss | reason |\n|---|---|---:|---|\n"
            .to_string();
    for ((task, component), (loss, reason)) in ranked.into_iter().take(TOP_DEDUCTIONS) {
        let _ = writeln!(
            text,
            "| {} | {} | {} | {} |",
            escape::markdown_code(&task),
            escape::markdown(&component),
            score(loss),
            escape::markdown(&reason)
        );
    }
    text.push('\n');
    text
}

fn baseline_section(summary: &RunSummary) -> String {
    let Some(comparison) = &summary.baseline else {
        return String::new();
    };
    let mut text = format!(
        "### Against the baseline\n\nmean score {} → {} (tolerance {})\n\n",
        score(comparison.before_mean_score),
        score(comparison.now_mean_score),
        comparison.tolerance
    );
    if comparison.suite_regressed {
        text.push_str("**The suite's mean score dropped by more than the tolerance.**\n\n");
    }
    for (title, changes) in [
        ("Regressions", &comparison.regressions),
        ("Improvements", &comparison.improvements),
    ] {
        if changes.is_empty() {
            continue;
        }
        let _ = writeln!(
            text,
            "**{title}**\n\n| task | mean before | mean now | robustness before | robustness now | why |\n|---|---:|---:|---:|---:|---|"
        );
        for change in changes {
            let _ = writeln!(
                text,
                "| {} | {} | {} | {} | {} | {} |",
                escape::markdown_code(&change.task_id),
                score(change.before_score),
                score(change.now_score),
                measured(change.before_robustness),
                measured(change.now_robustness),
                escape::markdown(&change.reason)
            );
        }
        text.push('\n');
    }
    if !comparison.new_tasks.is_empty() {
        let _ = write!(text, "New tasks: {}\n\n", listed(&comparison.new_tasks));
    }
    if !comparison.missing_tasks.is_empty() {
        let _ = write!(
            text,
            "Not run this time: {}\n\n",
            listed(&comparison.missing_tasks)
        );
    }
    text
}

/// Categories and capabilities (when the suite uses more than one), and the faults left
/// unrecovered most often.
fn groups_section(summary: &RunSummary) -> String {
    let groups = &summary.groups;
    let mut text = String::new();
    for (title, groups) in [
        ("category", &groups.by_category),
        ("capability", &groups.by_capability),
    ] {
        if groups.len() < 2 {
            continue;
        }
        let _ = writeln!(
            text,
            "### By {title}\n\n| {title} | tasks | pass^{k} | mean |\n|---|---:|---:|---:|",
            k = summary.k
        );
        for (name, group) in groups {
            let _ = writeln!(
                text,
                "| {} | {} | {} | {} |",
                escape::markdown(name),
                group.tasks,
                group.passed,
                score(group.mean_score)
            );
        }
        text.push('\n');
    }
    if !groups.unrecovered_faults.is_empty() {
        text.push_str("### Faults left unrecovered\n\n| action | times |\n|---|---:|\n");
        for fault in groups.unrecovered_faults.iter().take(TOP_DEDUCTIONS) {
            let _ = writeln!(
                text,
                "| {} | {} |",
                escape::markdown(&fault.action),
                fault.unrecovered
            );
        }
        text.push('\n');
    }
    text
}

/// Task ids after a label, comma-separated.
fn listed(task_ids: &[String]) -> String {
    task_ids
        .iter()
        .map(|task_id| escape::markdown(task_id))
        .collect::<Vec<_>>()
        .join(", ")
}
