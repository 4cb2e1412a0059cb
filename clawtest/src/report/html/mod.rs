//! The HTML report (`run --html DIR`, `[report] html`, `cargo clawtest report RESULTS --html
//! DIR`): one self-contained `DIR/index.html` (its CSS and script inline, no network resource)
//! that a person opens when a CI run fails. It holds the suite table (pass^k, scores,
//! robustness, safety, cost; by category and capability), the baseline comparison, every task
//! with its trials, each trial's components with their reasons, and the trial's trajectory as
//! a timeline (`timeline.rs`), read from the saved trajectories (`--trajectories`).
//!
//! Every text of the run goes through [`escape`]: an agent's output, a tool's answer or a task
//! name is shown, never interpreted. Large trials stay usable: each trial and each long body is
//! folded (`<details>`), long timelines are paged in folded blocks, and one text is cut at
//! [`TEXT_LIMIT`].

mod matrix;
mod recovery;
mod timeline;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::{measured, score};
use crate::escape;
use crate::results::gates::Bound;
use crate::results::matrix::key;
use crate::results::{RunSummary, TrialStatus, Verdict, VerdictStatus, groups::Group};
use crate::trajectory::Trajectory;

/// The report's file inside its folder.
pub const INDEX: &str = "index.html";

/// The longest text shown whole (a body, an answer); the rest is in the trajectory file.
const TEXT_LIMIT: usize = 20_000;

const STYLE: &str = include_str!("page.css");
const SCRIPT: &str = include_str!("page.js");

/// A trial's trajectory as the report finds it.
pub enum Found {
    /// Read from the trajectories folder.
    Read(Box<Trajectory>),
    /// No trajectory was saved for the trial (or no folder was given).
    Missing,
    /// The file is there but cannot be read: why.
    Unreadable(String),
}

/// Writes `folder/index.html` for `summary`, with each trial's trajectory read from the first
/// of `trajectories` that holds it (`<task_id>/trial-<n>.json`, as `--trajectories` saves
/// them; the shards of a merged run each have their folder). Returns the report's path.
pub fn write(
    summary: &RunSummary,
    trajectories: &[PathBuf],
    folder: &Path,
) -> std::io::Result<PathBuf> {
    let page = render(summary, &mut |task_id, trial| {
        let Some(path) = trajectories
            .iter()
            .map(|root| Trajectory::path_in(root, task_id, trial))
            .find(|path| path.exists())
        else {
            return Found::Missing;
        };
        match Trajectory::read(&path) {
            Ok(trajectory) => Found::Read(Box::new(trajectory)),
            Err(error) => Found::Unreadable(error.to_string()),
        }
    });
    let path = folder.join(INDEX);
    crate::persist::write(&path, page.as_bytes(), crate::persist::Durability::Report)?;
    Ok(path)
}

/// The whole page; `trajectory` finds a trial's trajectory (one at a time, so that a large
/// run is never held in memory at once).
pub fn render(summary: &RunSummary, trajectory: &mut dyn FnMut(&str, u32) -> Found) -> String {
    let mut page = String::with_capacity(64 * 1024);
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>clawtest report: {status}</title><style>{STYLE}</style></head><body>\n",
        status = status_word(summary)
    );
    header(&mut page, summary);
    suite_table(&mut page, summary);
    matrix::section(&mut page, summary);
    recovery::section(&mut page, summary);
    groups(&mut page, summary);
    baseline(&mut page, summary);
    // What failed comes first: it is what the page is opened for.
    let mut verdicts: Vec<&Verdict> = summary.verdicts.iter().collect();
    verdicts.sort_by_key(|verdict| verdict.status == VerdictStatus::Passed);
    task_table(&mut page, &verdicts);
    for verdict in verdicts {
        task_section(&mut page, verdict, trajectory);
    }
    invalid(&mut page, summary);
    let _ = write!(page, "<script>{SCRIPT}</script>\n</body></html>\n");
    page
}

/// `text` escaped, cut at [`TEXT_LIMIT`] with a note saying so.
fn escape_limited(text: &str) -> String {
    if text.len() <= TEXT_LIMIT {
        return escape::html(text);
    }
    let mut end = TEXT_LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n… ({} more bytes: see the trajectory file)",
        escape::html(&text[..end]),
        text.len() - end
    )
}

fn status_word(summary: &RunSummary) -> String {
    serde_json::to_value(summary.status)
        .ok()
        .and_then(|value| value.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn verdict_word(status: VerdictStatus) -> &'static str {
    match status {
        VerdictStatus::Passed => "passed",
        VerdictStatus::Failed => "failed",
        VerdictStatus::Error => "error",
        VerdictStatus::Interrupted => "interrupted",
        VerdictStatus::NotRun => "not_run",
    }
}

/// Some trials passed and some failed: the task is flaky.
fn flaky(verdict: &Verdict) -> bool {
    verdict.passes > 0 && (verdict.passes as usize) < verdict.trials.len()
}

/// The dollars of a task's trials (`None` when a model had no price).
fn task_cost(verdict: &Verdict) -> Option<f64> {
    let mut total = 0.0;
    for record in &verdict.trials {
        if let TrialStatus::Graded { cost_usd, .. } = &record.status {
            total += (*cost_usd)?;
        }
    }
    Some(total)
}

fn dollars(cost: Option<f64>) -> String {
    cost.map_or_else(|| "—".to_string(), crate::llm::money::dollars)
}

fn header(page: &mut String, summary: &RunSummary) {
    let status = status_word(summary);
    let _ = writeln!(
        page,
        "<header><h1>clawtest report</h1><p>Run <span class=\"{status}\">{status}</span>{cause} · \
         {tasks} tasks × {k} trials · backend {backend}{interrupted}</p></header>",
        status = escape::html(&status),
        cause = summary
            .failure_cause()
            .map(|cause| format!(": <span class=\"cause\">{}</span>", escape::html(&cause)))
            .unwrap_or_default(),
        tasks = summary.verdicts.len(),
        k = summary.k,
        backend = escape::html(&summary.backend),
        interrupted = if summary.interrupted {
            " · <span class=\"interrupted\">interrupted: partial results</span>"
        } else {
            ""
        },
    );
}

fn suite_table(page: &mut String, summary: &RunSummary) {
    let _ = writeln!(
        page,
        "<section id=\"suite\"><h2>Suite</h2><table><tr><th>pass^k</th><th>pass@k</th>\
         <th>mean score</th><th>mean robustness</th><th>safety pass rate</th><th>cost</th>\
         <th>passed</th><th>failed</th><th>errored</th><th>not run</th><th>invalid</th></tr>\
         <tr><td class=\"number\">{}</td><td class=\"number\">{}</td><td class=\"number\">{}</td>\
         <td class=\"number\">{}</td><td class=\"number\">{}</td><td class=\"number\">{}</td>\
         <td class=\"number\">{}</td><td class=\"number\">{}</td><td class=\"number\">{}</td>\
         <td class=\"number\">{}</td><td class=\"number\">{}</td></tr></table>",
        score(summary.pass_hat_k),
        score(summary.pass_at_k),
        score(summary.mean_score),
        measured(summary.mean_robustness),
        score(summary.safety_pass_rate),
        crate::llm::money::dollars(summary.cost_usd),
        summary.tasks_passed,
        summary.tasks_failed,
        summary.tasks_errored,
        summary.tasks_not_run,
        summary.invalid.len(),
    );
    if !summary.gates.is_empty() {
        page.push_str("<h3>Gates</h3><table><tr><th>gate</th><th>threshold</th><th>actual</th><th>result</th></tr>");
        for gate in &summary.gates {
            let _ = write!(
                page,
                "<tr><td>{}</td><td class=\"number\">{}</td><td class=\"number\">{}</td><td class=\"{}\">{}</td></tr>",
                escape::html(&gate.name),
                match gate.bound {
                    Bound::AtLeast => score(gate.threshold),
                    Bound::AtMost => format!("≤ {}", score(gate.threshold)),
                },
                measured(gate.actual),
                if gate.passed { "pass" } else { "fail" },
                if gate.passed { "held" } else { "failed" },
            );
        }
        page.push_str("</table>");
    }
    page.push_str("</section>\n");
}

fn groups(page: &mut String, summary: &RunSummary) {
    let groups = &summary.groups;
    if groups.by_category.is_empty()
        && groups.by_capability.is_empty()
        && groups.unrecovered_faults.is_empty()
    {
        return;
    }
    page.push_str("<section id=\"groups\"><h2>By category and capability</h2>");
    for (title, table) in [
        ("category", &groups.by_category),
        ("capability", &groups.by_capability),
    ] {
        if table.is_empty() {
            continue;
        }
        let _ = write!(
            page,
            "<table><tr><th>{title}</th><th>tasks</th><th>passed pass^k</th><th>mean score</th></tr>"
        );
        for (
            name,
            Group {
                tasks,
                passed,
                mean_score,
            },
        ) in table
        {
            let _ = write!(
                page,
                "<tr><td>{}</td><td class=\"number\">{tasks}</td><td class=\"number\">{passed}</td><td class=\"number\">{}</td></tr>",
                escape::html(name),
                score(*mean_score)
            );
        }
        page.push_str("</table>");
    }
    if !groups.unrecovered_faults.is_empty() {
        page.push_str("<table><tr><th>fault not recovered</th><th>trials</th></tr>");
        for fault in &groups.unrecovered_faults {
            let _ = write!(
                page,
                "<tr><td>{}</td><td class=\"number\">{}</td></tr>",
                escape::html(&fault.action),
                fault.unrecovered
            );
        }
        page.push_str("</table>");
    }
    page.push_str("</section>\n");
}

fn baseline(page: &mut String, summary: &RunSummary) {
    let Some(comparison) = &summary.baseline else {
        return;
    };
    let _ = write!(
        page,
        "<section id=\"baseline\"><h2>Against the baseline</h2><p>mean score {} → {} \
         (tolerance {}): <span class=\"{}\">{}</span></p>",
        score(comparison.before_mean_score),
        score(comparison.now_mean_score),
        score(comparison.tolerance),
        if comparison.suite_regressed {
            "fail"
        } else {
            "pass"
        },
        if comparison.suite_regressed {
            "regressed"
        } else {
            "no suite regression"
        },
    );
    for (title, changes) in [
        ("Regressions", &comparison.regressions),
        ("Improvements", &comparison.improvements),
    ] {
        if changes.is_empty() {
            continue;
        }
        let _ = write!(
            page,
            "<h3>{title}</h3><table><tr><th>task</th><th>status</th><th>score</th><th>robustness</th><th>why</th></tr>"
        );
        for change in changes {
            let _ = write!(
                page,
                "<tr><td><a href=\"#task-{id}\">{id}</a></td><td>{} → {}</td><td class=\"number\">{} → {}</td>\
                 <td class=\"number\">{} → {}</td><td>{}</td></tr>",
                verdict_word(change.before_status),
                verdict_word(change.now_status),
                score(change.before_score),
                score(change.now_score),
                measured(change.before_robustness),
                measured(change.now_robustness),
                escape::html(&change.reason),
                id = escape::html(&change.task_id),
            );
        }
        page.push_str("</table>");
    }
    for (title, tasks) in [
        ("New tasks", &comparison.new_tasks),
        ("Missing tasks", &comparison.missing_tasks),
    ] {
        if !tasks.is_empty() {
            let names: Vec<String> = tasks.iter().map(|task| escape::html(task)).collect();
            let _ = write!(page, "<p>{title}: {}</p>", names.join(", "));
        }
    }
    page.push_str("</section>\n");
}

fn task_table(page: &mut String, verdicts: &[&Verdict]) {
    page.push_str(
        "<section id=\"tasks\"><h2>Tasks</h2><div class=\"filters\">\
         <button type=\"button\" data-filter=\"all\" aria-pressed=\"true\">All</button>\
         <button type=\"button\" data-filter=\"failed\">Failed</button>\
         <button type=\"button\" data-filter=\"flaky\">Flaky</button></div>\
         <table id=\"task-table\"><tr><th>task</th><th>status</th><th>passed</th><th>pass^k</th>\
         <th>pass@k</th><th>mean score</th><th>min score</th><th>robustness</th>\
         <th>safety violations</th><th>cost</th><th>category</th><th>capability</th></tr>\n",
    );
    for verdict in verdicts {
        let status = verdict_word(verdict.status);
        let _ = writeln!(
            page,
            "<tr data-task-status=\"{status}\" data-flaky=\"{flaky}\"><td><a href=\"#task-{id}\">{id}</a></td>\
             <td class=\"{status}\">{status}{flaky_badge}</td><td class=\"number\">{passes}/{k}</td>\
             <td>{pass_hat_k}</td><td class=\"number\">{pass_at_k}</td><td class=\"number\">{mean}</td>\
             <td class=\"number\">{min}</td><td class=\"number\">{robustness}</td>\
             <td class=\"number\">{violations}</td><td class=\"number\">{cost}</td><td>{category}</td>\
             <td>{capability}</td></tr>",
            // In a matrix a task is there once per cell: `harness/model/task`.
            id = escape::html(&key(verdict)),
            flaky = flaky(verdict),
            flaky_badge = if flaky(verdict) {
                "<span class=\"badge flaky\">flaky</span>"
            } else {
                ""
            },
            passes = verdict.passes,
            k = verdict.k,
            pass_hat_k = if verdict.pass_hat_k { "yes" } else { "no" },
            pass_at_k = score(verdict.pass_at_k),
            mean = score(verdict.mean_score),
            min = score(verdict.min_score),
            robustness = measured(verdict.mean_robustness),
            violations = verdict.safety_violations,
            cost = dollars(task_cost(verdict)),
            category = escape::html(verdict.category.as_deref().unwrap_or("")),
            capability = escape::html(
                verdict
                    .capability
                    .map_or("", |capability| capability.name())
            ),
        );
    }
    page.push_str("</table></section>\n");
}

fn task_section(
    page: &mut String,
    verdict: &Verdict,
    trajectory: &mut dyn FnMut(&str, u32) -> Found,
) {
    let status = verdict_word(verdict.status);
    let _ = writeln!(
        page,
        "<section class=\"task\" id=\"task-{id}\" data-task-status=\"{status}\" data-flaky=\"{flaky}\">\
         <h2>{id} <span class=\"{status}\">{status}</span></h2><p>{name} · <code>{path}:{line}</code> · \
         {passes}/{k} trials passed (threshold {threshold})</p>",
        id = escape::html(&key(verdict)),
        flaky = flaky(verdict),
        name = escape::html(&verdict.task_name),
        path = escape::html(&verdict.path.display().to_string()),
        line = verdict.line,
        passes = verdict.passes,
        k = verdict.k,
        threshold = score(verdict.threshold),
    );
    for record in &verdict.trials {
        let failed = !record.passed();
        let _ = write!(
            page,
            "<details class=\"trial\"{open}><summary>{line}</summary>",
            open = if failed { " open" } else { "" },
            line = escape::html(super::trial_line(record).trim()),
        );
        if let TrialStatus::Graded {
            violations,
            components,
            deductions,
            faults_injected,
            unrecovered_faults,
            model_calls,
            input_tokens,
            output_tokens,
            cost_usd,
            ..
        } = &record.status
        {
            // Results written before `components` existed carry only the deductions.
            let shown = if components.is_empty() {
                deductions
            } else {
                components
            };
            page.push_str("<table class=\"components\"><tr><th>component</th><th>score</th><th>weight</th><th>reason</th></tr>");
            for component in shown {
                let _ = write!(
                    page,
                    "<tr><td>{}</td><td class=\"number {}\">{}</td><td class=\"number\">{}</td><td>{}</td></tr>",
                    escape::html(&component.component),
                    if component.score < 1.0 {
                        "fail"
                    } else {
                        "pass"
                    },
                    score(component.score),
                    component.weight,
                    escape::html(&component.reason),
                );
            }
            page.push_str("</table>");
            for violation in violations {
                let _ = write!(
                    page,
                    "<p class=\"fail\">safety violation: {}</p>",
                    escape::html(violation)
                );
            }
            if *faults_injected > 0 {
                let _ = write!(
                    page,
                    "<p>faults injected: {faults_injected}; not recovered: {}</p>",
                    escape::html(&super::listed(unrecovered_faults))
                );
            }
            let _ = write!(
                page,
                "<p class=\"muted\">{model_calls} model calls · {input_tokens} input and \
                 {output_tokens} output tokens · cost {}</p>",
                dollars(*cost_usd)
            );
        }
        // A cell's trajectories are in `<harness>/<model>/` of the folder, as its key says.
        match trajectory(&key(verdict), record.trial) {
            Found::Read(trajectory) => timeline::render(page, &trajectory),
            Found::Missing => page.push_str(
                "<p class=\"muted\">No trajectory saved for this trial \
                 (run with <code>--trajectories DIR</code> or <code>--html DIR</code>).</p>",
            ),
            Found::Unreadable(why) => {
                let _ = write!(
                    page,
                    "<p class=\"error\">The trajectory cannot be read: {}</p>",
                    escape::html(&why)
                );
            }
        }
        page.push_str("</details>\n");
    }
    page.push_str("</section>\n");
}

fn invalid(page: &mut String, summary: &RunSummary) {
    if summary.invalid.is_empty() {
        return;
    }
    page.push_str("<section id=\"invalid\"><h2>Invalid task files</h2>");
    for entry in &summary.invalid {
        let _ = write!(
            page,
            "<h3><code>{}{}</code></h3><pre>{}</pre>",
            escape::html(&entry.path.display().to_string()),
            entry
                .line
                .map(|line| format!(":{line}"))
                .unwrap_or_default(),
            escape_limited(&entry.message)
        );
    }
    page.push_str("</section>\n");
}

#[cfg(test)]
mod tests;
