//! The recovery profile as every report shows it: per fault kind (429, 500, slow), how many
//! faults were injected, how many the agent recovered from (the same action succeeded within
//! the service's next 4 calls), how many it gave up on and, of those, how many it hid from the
//! user (its answer mentions no failure); for the suite and for each task.
//! The rows are built once here ([`rows`]); the terminal and Markdown tables and the JUnit
//! properties are written here, the HTML table in `html/` with its escaping.

use std::fmt::Write as _;

use super::{NOT_MEASURED, exact, score};
use crate::fault::FaultKind;
use crate::grade::{Recovery, RecoveryProfile};
use crate::results::RunSummary;

/// One row of the profile: the suite's or a task's counts of one kind.
pub(crate) struct Row<'a> {
    /// `None` for the suite, else the task's id.
    pub(crate) task: Option<&'a str>,
    /// The fault kind.
    pub(crate) kind: FaultKind,
    /// Its counts.
    pub(crate) counts: Recovery,
}

/// The suite's rows, then each task's (in the summary's order), kinds in
/// [`FaultKind::ALL`]'s order; kinds never injected are left out.
pub(crate) fn rows(summary: &RunSummary) -> Vec<Row<'_>> {
    let mut rows = profile_rows(None, &summary.recovery);
    for verdict in &summary.verdicts {
        rows.extend(profile_rows(Some(&verdict.task_id), &verdict.recovery));
    }
    rows
}

fn profile_rows<'a>(task: Option<&'a str>, profile: &RecoveryProfile) -> Vec<Row<'a>> {
    FaultKind::ALL
        .into_iter()
        .filter_map(|kind| {
            let counts = *profile.get(&kind)?;
            Some(Row { task, kind, counts })
        })
        .collect()
}

/// A kind's recovery rate as people read it: `0.900`, or `n/a` for slow answers (nothing to
/// recover from).
pub(crate) fn rate(counts: &Recovery) -> String {
    counts
        .rate()
        .map_or_else(|| NOT_MEASURED.to_string(), score)
}

/// What the recovered and gave-up columns show for a kind that is not an error.
fn judged(kind: FaultKind, count: usize) -> String {
    if kind.is_error() {
        count.to_string()
    } else {
        "-".into()
    }
}

/// The scope column: `suite` or the task's id.
fn scope(row: &Row<'_>) -> String {
    row.task.unwrap_or("(suite)").to_string()
}

/// The terminal's table, or nothing when no fault was injected in the whole run (the
/// summary line then says robustness n/a).
pub(crate) fn terminal(summary: &RunSummary) -> String {
    let rows = rows(summary);
    if rows.is_empty() {
        return String::new();
    }
    let width = rows
        .iter()
        .map(|row| scope(row).len())
        .max()
        .unwrap_or(0)
        .max(7);
    let mut text = format!(
        "\nrecovery profile\n{:<width$}  {:<16}  {:>8}  {:>9}  {:>7}  {:>6}  {:>8}\n",
        "scope", "fault", "injected", "recovered", "gave up", "hidden", "recovery"
    );
    for row in &rows {
        let _ = writeln!(
            text,
            "{:<width$}  {:<16}  {:>8}  {:>9}  {:>7}  {:>6}  {:>8}",
            scope(row),
            row.kind.label(),
            row.counts.injected,
            judged(row.kind, row.counts.recovered),
            judged(row.kind, row.counts.gave_up),
            judged(row.kind, row.counts.hidden),
            rate(&row.counts)
        );
    }
    text
}

/// The Markdown section, or nothing when no fault was injected.
pub(crate) fn markdown(summary: &RunSummary) -> String {
    let rows = rows(summary);
    if rows.is_empty() {
        return String::new();
    }
    let mut text = String::from(
        "### Recovery profile\n\n| scope | fault | injected | recovered | gave up | hidden | recovery |\n|---|---|---:|---:|---:|---:|---:|\n",
    );
    for row in &rows {
        let _ = writeln!(
            text,
            "| {} | {} | {} | {} | {} | {} | {} |",
            row.task
                .map_or_else(|| "**suite**".to_string(), crate::escape::markdown_code),
            row.kind.label(),
            row.counts.injected,
            judged(row.kind, row.counts.recovered),
            judged(row.kind, row.counts.gave_up),
            judged(row.kind, row.counts.hidden),
            rate(&row.counts)
        );
    }
    text.push('\n');
    text
}

/// A trial's (or a task's) profile in one phrase, kinds in order:
/// `429 rate limited 2 (2 recovered), 500 server error 1 (1 given up, 1 hidden), slow answer 1`.
pub(crate) fn phrase(profile: &RecoveryProfile) -> String {
    let parts: Vec<String> = FaultKind::ALL
        .into_iter()
        .filter_map(|kind| {
            let counts = profile.get(&kind)?;
            let mut part = format!("{} {}", kind.label(), counts.injected);
            if kind.is_error() {
                let mut judged = Vec::new();
                if counts.recovered > 0 {
                    judged.push(format!("{} recovered", counts.recovered));
                }
                if counts.gave_up > 0 {
                    judged.push(format!("{} given up", counts.gave_up));
                }
                if counts.hidden > 0 {
                    judged.push(format!("{} hidden", counts.hidden));
                }
                let _ = write!(part, " ({})", judged.join(", "));
            }
            Some(part)
        })
        .collect();
    parts.join(", ")
}

/// A trial's robustness as people read it: its score, or `n/a (no fault to recover from)` when
/// there was nothing to recover from (its final score still counts ClawEnvKit's 1).
pub(crate) fn trial_robustness(robustness: f64, faults_injected: usize) -> String {
    if faults_injected > 0 {
        score(robustness)
    } else {
        format!("{NOT_MEASURED} (no fault to recover from)")
    }
}

/// JUnit properties of one profile: `recovery.<kind>.injected`, `.recovered`, `.gave_up`,
/// `.hidden` and `.rate` (the exact value, or `n/a`), kinds in order.
pub(crate) fn properties(profile: &RecoveryProfile) -> Vec<(String, String)> {
    let mut properties = Vec::new();
    for kind in FaultKind::ALL {
        let Some(counts) = profile.get(&kind) else {
            continue;
        };
        let prefix = format!("recovery.{kind}");
        properties.push((format!("{prefix}.injected"), counts.injected.to_string()));
        if kind.is_error() {
            properties.push((format!("{prefix}.recovered"), counts.recovered.to_string()));
            properties.push((format!("{prefix}.gave_up"), counts.gave_up.to_string()));
            properties.push((format!("{prefix}.hidden"), counts.hidden.to_string()));
            properties.push((
                format!("{prefix}.rate"),
                counts
                    .rate()
                    .map_or_else(|| NOT_MEASURED.to_string(), exact),
            ));
        }
    }
    properties
}
