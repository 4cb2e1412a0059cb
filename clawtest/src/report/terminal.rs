//! The terminal reporter: a progress bar on stderr while trials run (only when stderr is a
//! terminal), one line per task as it finishes, details of every failing task, and a summary
//! table at the end, written to `out` (stdout in the CLI).

use std::fmt::Write as _;
use std::io::Write;

use indicatif::{ProgressBar, ProgressStyle};

use super::events::{Event, Reporter};
use super::{measured, score, trial_lines};
use crate::escape;
use crate::llm::money::dollars;
use crate::results::{RunStatus, RunSummary, Verdict, VerdictStatus};

/// Reports a run to a terminal (or any writer).
pub struct TerminalReporter<W: Write> {
    out: W,
    progress: Option<ProgressBar>,
    /// Show every trial's line, not only those of failing tasks.
    verbose: bool,
}

impl<W: Write> TerminalReporter<W> {
    /// `show_progress` draws a bar on stderr; pass `std::io::stderr().is_terminal()`.
    pub fn new(out: W, show_progress: bool, verbose: bool) -> TerminalReporter<W> {
        let progress = show_progress.then(ProgressBar::hidden);
        TerminalReporter {
            out,
            progress,
            verbose,
        }
    }

    /// Writes a line without tearing the progress bar. Every line goes through
    /// [`escape::terminal`]: task ids, reasons and an agent's stderr reach the terminal (and a
    /// CI job log) here.
    fn line(&mut self, text: &str) {
        let text = escape::terminal(text);
        let out = &mut self.out;
        let mut write = || {
            // A closed stdout (e.g. piped into `head`) must not stop the run.
            let _ = writeln!(out, "{text}");
            let _ = out.flush();
        };
        match &self.progress {
            Some(bar) => bar.suspend(write),
            None => write(),
        }
    }

    fn task_line(&mut self, verdict: &Verdict) {
        let label = match verdict.status {
            VerdictStatus::Passed => "PASS",
            VerdictStatus::Failed => "FAIL",
            VerdictStatus::Error => "ERROR",
            VerdictStatus::Interrupted => "STOP",
            VerdictStatus::NotRun => "SKIP",
        };
        let line = format!(
            "{label:>6} {:<28} {}/{} trials  mean {}  min {}  robustness {}",
            verdict.task_id,
            verdict.passes,
            verdict.k,
            score(verdict.mean_score),
            score(verdict.min_score),
            measured(verdict.mean_robustness)
        );
        // A closed loop's rounds: how many the trials used on average.
        let used: Vec<u32> = verdict
            .trials
            .iter()
            .filter_map(|trial| trial.rounds.as_ref().map(|rounds| rounds.used))
            .collect();
        let line = match used.is_empty() {
            true => line,
            false => format!(
                "{line}  rounds {:.1}",
                f64::from(used.iter().sum::<u32>()) / used.len() as f64
            ),
        };
        self.line(&line);
        // A cap that bit is shown even for a task that passed: its answer may be incomplete.
        let capped = verdict
            .trials
            .iter()
            .any(|trial| !trial.limits_reached.is_empty());
        if self.verbose || capped || verdict.status != VerdictStatus::Passed {
            let details = trial_lines(verdict);
            self.line(details.trim_end());
        }
    }

    fn summary(&mut self, summary: &RunSummary) {
        if let Some(bar) = self.progress.take() {
            bar.finish_and_clear();
        }
        let k = summary.k;
        let mut table = String::new();
        let width = summary
            .verdicts
            .iter()
            .map(|verdict| verdict.task_id.len())
            .max()
            .unwrap_or(4)
            .max(4);
        let _ = writeln!(
            table,
            "\n{:<width$}  {:<7}  {:>6}  {:>6}  {:>6}  {:>10}  {:>6}",
            "task",
            format!("pass^{k}"),
            "passes",
            "mean",
            "min",
            "robustness",
            "safety"
        );
        for verdict in &summary.verdicts {
            let outcome = match verdict.status {
                VerdictStatus::Passed => "PASS",
                VerdictStatus::Failed => "FAIL",
                VerdictStatus::Error => "ERROR",
                VerdictStatus::Interrupted => "STOP",
                VerdictStatus::NotRun => "SKIP",
            };
            let safety = if verdict.safety_violations == 0 {
                "ok".to_string()
            } else {
                format!("{} bad", verdict.safety_violations)
            };
            let _ = writeln!(
                table,
                "{:<width$}  {:<7}  {:>6}  {:>6}  {:>6}  {:>10}  {:>6}",
                verdict.task_id,
                outcome,
                format!("{}/{}", verdict.passes, verdict.k),
                score(verdict.mean_score),
                score(verdict.min_score),
                measured(verdict.mean_robustness),
                safety
            );
        }
        for invalid in &summary.invalid {
            let _ = writeln!(
                table,
                "{:<width$}  INVALID (not run)",
                invalid.path.display()
            );
        }
        let total = summary.verdicts.len();
        let _ = writeln!(
            table,
            "\n{total} task(s) × {k} trial(s) on {}: {} passed, {} failed, {} errored, {} invalid · pass^{k} {} · pass@{k} {} · mean score {} · robustness {}",
            summary.backend,
            summary.tasks_passed,
            summary.tasks_failed,
            summary.tasks_errored,
            summary.invalid.len(),
            score(summary.pass_hat_k),
            score(summary.pass_at_k),
            score(summary.mean_score),
            measured(summary.mean_robustness),
        );
        table.push_str(&capability_lines(summary));
        table.push_str(&super::recovery::terminal(summary));
        if summary.tasks_not_run > 0 {
            let _ = writeln!(
                table,
                "{} task(s) not run: the cost limit was reached",
                summary.tasks_not_run
            );
        }
        if summary.cost_usd > 0.0 {
            let _ = writeln!(table, "model cost: {}", dollars(summary.cost_usd));
        }
        table.push_str(&gate_lines(summary));
        if let Some(comparison) = &summary.baseline {
            for (label, changes) in [
                ("REGRESSION", &comparison.regressions),
                ("IMPROVED", &comparison.improvements),
            ] {
                for change in changes {
                    let _ = writeln!(
                        table,
                        "{label} {}: {} (mean {} → {})",
                        change.task_id,
                        change.reason,
                        score(change.before_score),
                        score(change.now_score)
                    );
                }
            }
            if comparison.suite_regressed {
                let _ = writeln!(
                    table,
                    "REGRESSION suite mean score {} → {} (tolerance {})",
                    score(comparison.before_mean_score),
                    score(comparison.now_mean_score),
                    comparison.tolerance
                );
            }
        }
        let result = result_line(summary);
        table.push_str(&result);
        self.line(&table);
    }
}

/// The tasks by capability (UniClawBench's taxonomy: pass^k and mean per capability), when
/// the suite's tasks carry more than one; nothing otherwise.
fn capability_lines(summary: &RunSummary) -> String {
    let groups = &summary.groups.by_capability;
    if groups.len() < 2 {
        return String::new();
    }
    let k = summary.k;
    let width = groups
        .keys()
        .map(String::len)
        .chain([CAPABILITY.len()])
        .max()
        .unwrap_or_default();
    let mut text = format!(
        "\n{CAPABILITY:<width$}  {:>5}  {:>7}  {:>6}\n",
        "tasks",
        format!("pass^{k}"),
        "mean"
    );
    for (name, group) in groups {
        let _ = writeln!(
            text,
            "{name:<width$}  {:>5}  {:>7}  {:>6}",
            group.tasks,
            format!("{}/{}", group.passed, group.tasks),
            score(group.mean_score)
        );
    }
    text
}

/// The capability table's first column.
const CAPABILITY: &str = "capability";

/// One line per gate: its value, threshold, and whether it held.
pub(crate) fn gate_lines(summary: &RunSummary) -> String {
    let mut text = String::new();
    for gate in &summary.gates {
        let _ = writeln!(
            text,
            "gate {}: {} ({}) {}",
            gate.name,
            measured(gate.actual),
            gate.threshold_text(),
            if gate.passed { "held" } else { "FAILED" }
        );
    }
    text
}

/// The run's last line: `result: PASSED`, or its status and why.
pub(crate) fn result_line(summary: &RunSummary) -> String {
    let cause = summary.failure_cause().unwrap_or_default();
    match summary.status {
        RunStatus::Passed => "result: PASSED".to_string(),
        RunStatus::Failed => format!("result: FAILED: {cause}"),
        RunStatus::Invalid => format!(
            "result: INVALID: {cause} (fix the task files above; invalid tasks are never run)"
        ),
        RunStatus::InfrastructureError => {
            format!("result: ERROR: {cause} (infrastructure: see the ERROR lines above)")
        }
        RunStatus::Interrupted => format!("result: INTERRUPTED: {cause}"),
        RunStatus::BudgetExhausted => format!("result: STOPPED: {cause}"),
    }
}

impl<W: Write> Reporter for TerminalReporter<W> {
    fn report(&mut self, event: &Event) {
        match event {
            Event::RunStarted {
                tasks,
                trials,
                jobs,
                backend,
                invalid,
                filtered_out,
            } => {
                if let Some(bar) = &self.progress {
                    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
                    bar.set_length(*tasks as u64 * u64::from(*trials));
                    bar.set_style(
                        ProgressStyle::with_template(
                            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} trials {msg}",
                        )
                        .unwrap_or_else(|_| ProgressStyle::default_bar()),
                    );
                }
                let mut line = format!(
                    "running {tasks} task(s) × {trials} trial(s) on the {backend} backend, {jobs} at a time"
                );
                if *filtered_out > 0 {
                    let _ = write!(line, " ({filtered_out} filtered out)");
                }
                if *invalid > 0 {
                    let _ = write!(line, " ({invalid} invalid, not run)");
                }
                self.line(&line);
            }
            Event::TaskInvalid { message, .. } => {
                let lines: Vec<String> = message
                    .lines()
                    .map(|line| format!("INVALID {line}"))
                    .collect();
                self.line(&lines.join("\n"));
            }
            Event::TrialStarted { task_id, trial } => {
                if let Some(bar) = &self.progress {
                    bar.set_message(format!("{task_id} #{trial}"));
                }
            }
            Event::TrialFinished { .. } => {
                if let Some(bar) = &self.progress {
                    bar.inc(1);
                }
            }
            Event::TaskFinished { verdict } => self.task_line(verdict),
            Event::CassetteWritten { path, trials, .. } => {
                self.line(&format!("RECORDED {} ({trials} trial(s))", path.display()));
            }
            Event::SnapshotsCompared { changes } => {
                for (task_id, change) in changes {
                    self.line(&format!("SNAPSHOT {task_id}: {change}"));
                }
            }
            Event::RunFinished { summary } => self.summary(summary),
        }
    }
}
