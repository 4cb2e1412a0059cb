//! From trials to verdicts: pass^k per task (all k trials pass), the unbiased pass@k, mean and
//! minimum scores, and the suite's totals and gates. Pure functions over finished trials.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::config::Gates;
use crate::spec::Task;

use super::events::TrialOutcome;

/// One trial, as the verdict keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrialRecord {
    pub trial: u32,
    #[serde(flatten)]
    pub result: TrialResult,
}

/// The part of a trial's outcome that reports need.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum TrialResult {
    Graded {
        passed: bool,
        final_score: f64,
        completion: f64,
        robustness: f64,
        safety: f64,
        violations: Vec<String>,
        /// (component, score, weight, reason) of every component that did not score 1.
        deductions: Vec<Deduction>,
        model_calls: usize,
        /// Tokens of all model calls of the trial, as the answers reported them.
        input_tokens: u64,
        output_tokens: u64,
        /// Their cost in US dollars (`[llm.prices]`); `None` when a model has no price.
        cost_usd: Option<f64>,
        audit_entries: usize,
        harness_exit: String,
        /// Injected 429/500 faults, and the `service.action` of each one not recovered.
        #[serde(default)]
        faults_injected: usize,
        #[serde(default)]
        unrecovered_faults: Vec<String>,
    },
    Error {
        message: String,
    },
    Interrupted,
    /// Never started: the run's cost limit was reached first.
    NotRun {
        reason: String,
    },
}

/// A component that lost score in a trial.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Deduction {
    pub component: String,
    /// The line of the component's check in the task file, for annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    pub score: f64,
    pub weight: f64,
    pub reason: String,
}

impl TrialRecord {
    pub fn new(task: &Task, trial: u32, outcome: &TrialOutcome) -> TrialRecord {
        let result = match outcome {
            TrialOutcome::Graded { grade, trajectory } => TrialResult::Graded {
                passed: grade.passed,
                final_score: grade.final_score,
                completion: grade.completion,
                robustness: grade.robustness.score,
                safety: grade.safety,
                violations: grade.violations.clone(),
                deductions: grade
                    .components
                    .iter()
                    .zip(&task.components)
                    .filter(|(component, _)| component.score < 1.0)
                    .map(|(component, spec)| Deduction {
                        component: component.name.clone(),
                        line: spec.line,
                        score: component.score,
                        weight: component.weight,
                        reason: component.reason.clone(),
                    })
                    .collect(),
                model_calls: trajectory.model_calls.len(),
                input_tokens: trajectory
                    .model_calls
                    .iter()
                    .map(|call| call.input_tokens)
                    .sum(),
                output_tokens: trajectory
                    .model_calls
                    .iter()
                    .map(|call| call.output_tokens)
                    .sum(),
                cost_usd: trajectory
                    .model_calls
                    .iter()
                    .map(|call| call.cost_usd)
                    .sum::<Option<f64>>(),
                audit_entries: trajectory.audit.len(),
                harness_exit: trajectory.exit.describe(),
                faults_injected: grade.robustness.injected,
                unrecovered_faults: grade
                    .robustness
                    .unrecovered
                    .iter()
                    .map(|fault| format!("{}.{}", fault.service, fault.action))
                    .collect(),
            },
            TrialOutcome::Error { message, .. } => TrialResult::Error {
                message: message.clone(),
            },
            TrialOutcome::Interrupted => TrialResult::Interrupted,
            TrialOutcome::NotRun { reason } => TrialResult::NotRun {
                reason: reason.clone(),
            },
        };
        TrialRecord { trial, result }
    }

    pub fn passed(&self) -> bool {
        matches!(self.result, TrialResult::Graded { passed: true, .. })
    }

    pub fn score(&self) -> Option<f64> {
        match self.result {
            TrialResult::Graded { final_score, .. } => Some(final_score),
            _ => None,
        }
    }
}

/// The task-level result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// All k trials passed.
    Passed,
    /// Every trial was graded and at least one failed.
    Failed,
    /// At least one trial hit an infrastructure error.
    Error,
    /// The run stopped before all trials finished.
    Interrupted,
    /// Some trials were never started (the cost limit was reached): reported as skipped.
    NotRun,
}

/// One task over its k trials.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Verdict {
    pub task_id: String,
    pub task_name: String,
    pub path: PathBuf,
    pub line: u64,
    pub status: Status,
    pub k: u32,
    pub passes: u32,
    /// All k trials passed.
    pub pass_hat_k: bool,
    /// Unbiased pass@k estimate over the trials run (1 − C(n−c, k) / C(n, k)).
    pub pass_at_k: f64,
    pub mean_score: f64,
    pub min_score: f64,
    pub mean_robustness: f64,
    pub safety_violations: usize,
    pub threshold: f64,
    /// The pass^k estimate from the pass rate, (c/n)^k, comparable across trial counts.
    #[serde(default)]
    pub pass_hat_k_estimate: f64,
    #[serde(default)]
    pub category: Option<String>,
    #[serde(default)]
    pub capability: Option<String>,
    pub trials: Vec<TrialRecord>,
}

/// Builds a task's verdict from its trials (in trial order).
pub fn verdict(task: &Task, threshold: f64, k: u32, mut trials: Vec<TrialRecord>) -> Verdict {
    trials.sort_by_key(|record| record.trial);
    let passes = trials.iter().filter(|record| record.passed()).count() as u32;
    let status = if trials
        .iter()
        .any(|record| matches!(record.result, TrialResult::Interrupted))
        || trials.len() < k as usize
    {
        Status::Interrupted
    } else if trials
        .iter()
        .any(|record| matches!(record.result, TrialResult::NotRun { .. }))
    {
        Status::NotRun
    } else if trials
        .iter()
        .any(|record| matches!(record.result, TrialResult::Error { .. }))
    {
        Status::Error
    } else if passes == k {
        Status::Passed
    } else {
        Status::Failed
    };
    let scores: Vec<f64> = trials.iter().filter_map(TrialRecord::score).collect();
    let robustness: Vec<f64> = trials
        .iter()
        .filter_map(|record| match record.result {
            TrialResult::Graded { robustness, .. } => Some(robustness),
            _ => None,
        })
        .collect();
    let safety_violations = trials
        .iter()
        .filter(|record| matches!(&record.result, TrialResult::Graded { violations, .. } if !violations.is_empty()))
        .count();
    Verdict {
        task_id: task.id.clone(),
        task_name: task.name.clone(),
        path: task.path.clone(),
        line: task.line,
        status,
        k,
        passes,
        pass_hat_k: status == Status::Passed,
        pass_at_k: pass_at_k(scores.len() as u64, u64::from(passes), u64::from(k)),
        mean_score: mean(&scores),
        min_score: scores.iter().copied().fold(f64::NAN, f64::min).max(0.0),
        mean_robustness: mean(&robustness),
        safety_violations,
        threshold,
        pass_hat_k_estimate: if scores.is_empty() {
            0.0
        } else {
            (f64::from(passes) / scores.len() as f64).powi(k as i32)
        },
        category: task.category.clone(),
        capability: task.capability.clone(),
        trials,
    }
}

fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        0.0
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

/// The unbiased pass@k estimator over n trials with c passes: 1 − C(n−c, k) / C(n, k).
/// With fewer than k trials it falls back to "any pass".
pub fn pass_at_k(n: u64, c: u64, k: u64) -> f64 {
    if c == 0 {
        return 0.0;
    }
    if n < k || n - c < k {
        return 1.0;
    }
    // C(n−c, k) / C(n, k) = Π_{i=0}^{k−1} (n−c−i) / (n−i), computed as a product to stay exact
    // enough without big integers.
    let failing = (0..k)
        .map(|i| (n - c - i) as f64 / (n - i) as f64)
        .product::<f64>();
    1.0 - failing
}

/// A suite-level threshold and whether the run met it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GateResult {
    pub name: String,
    pub threshold: f64,
    pub actual: f64,
    pub passed: bool,
}

/// How the run as a whole ended, in order of precedence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Every task passed pass^k and every gate held.
    Passed,
    /// A task failed pass^k or a gate did not hold.
    Failed,
    /// A task file or the configuration is invalid.
    Invalid,
    /// Something other than the agent went wrong (a harness that cannot start, a cassette miss).
    InfrastructureError,
    /// The run was interrupted; the results are partial.
    Interrupted,
    /// The cost limit stopped the run: some tasks were not run (and so not verified).
    BudgetExhausted,
}

/// A task file that was not run because it is invalid.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InvalidEntry {
    pub path: PathBuf,
    pub line: Option<u64>,
    pub message: String,
}

/// Everything a run produced.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunSummary {
    pub status: RunStatus,
    pub k: u32,
    pub backend: String,
    pub verdicts: Vec<Verdict>,
    pub invalid: Vec<InvalidEntry>,
    pub gates: Vec<GateResult>,
    pub tasks_passed: usize,
    pub tasks_failed: usize,
    pub tasks_errored: usize,
    /// Tasks not (fully) run because the cost limit was reached.
    pub tasks_not_run: usize,
    /// What the run's model calls cost, in US dollars (from `[llm.prices]`).
    pub cost_usd: f64,
    /// Fraction of tasks that passed pass^k.
    pub pass_hat_k: f64,
    /// Mean over tasks of the unbiased pass@k.
    pub pass_at_k: f64,
    /// Mean final score over all graded trials.
    pub mean_score: f64,
    /// Mean robustness over all graded trials.
    pub mean_robustness: f64,
    pub interrupted: bool,
    /// Fraction of graded trials without a safety violation.
    #[serde(default)]
    pub safety_pass_rate: f64,
    /// Per category and capability, and the faults left unrecovered most often.
    #[serde(default)]
    pub breakdowns: super::breakdown::Breakdowns,
    /// The comparison with `--baseline`, when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<super::baseline::Comparison>,
}

/// Folds verdicts, invalid tasks and gates into the run's summary and status.
pub fn summarize(
    verdicts: Vec<Verdict>,
    invalid: Vec<InvalidEntry>,
    gates: &Gates,
    k: u32,
    backend: &str,
    interrupted: bool,
) -> RunSummary {
    let count = |status: Status| {
        verdicts
            .iter()
            .filter(|verdict| verdict.status == status)
            .count()
    };
    let (tasks_passed, tasks_failed, tasks_errored) = (
        count(Status::Passed),
        count(Status::Failed),
        count(Status::Error),
    );
    let tasks_not_run = count(Status::NotRun);
    let scores: Vec<f64> = verdicts
        .iter()
        .flat_map(|verdict| verdict.trials.iter().filter_map(TrialRecord::score))
        .collect();
    let robustness: Vec<f64> = verdicts
        .iter()
        .flat_map(|verdict| verdict.trials.iter())
        .filter_map(|record| match record.result {
            TrialResult::Graded { robustness, .. } => Some(robustness),
            _ => None,
        })
        .collect();
    let share = |part: usize| {
        if verdicts.is_empty() {
            0.0
        } else {
            part as f64 / verdicts.len() as f64
        }
    };
    let pass_hat_k = share(tasks_passed);
    let pass_at_k = if verdicts.is_empty() {
        0.0
    } else {
        verdicts
            .iter()
            .map(|verdict| verdict.pass_at_k)
            .sum::<f64>()
            / verdicts.len() as f64
    };
    let (mean_score, mean_robustness) = (mean(&scores), mean(&robustness));
    let mut gate_results = Vec::new();
    for (name, threshold, actual) in [
        ("min_score", gates.min_score, mean_score),
        ("min_robustness", gates.min_robustness, mean_robustness),
        ("min_pass_hat_k", gates.min_pass_hat_k, pass_hat_k),
    ] {
        if let Some(threshold) = threshold {
            gate_results.push(GateResult {
                name: name.into(),
                threshold,
                actual,
                passed: actual + 1e-9 >= threshold,
            });
        }
    }
    let status = if interrupted {
        RunStatus::Interrupted
    } else if !invalid.is_empty() {
        RunStatus::Invalid
    } else if tasks_errored > 0 {
        RunStatus::InfrastructureError
    } else if tasks_failed > 0 || gate_results.iter().any(|gate| !gate.passed) {
        RunStatus::Failed
    } else if tasks_not_run > 0 {
        RunStatus::BudgetExhausted
    } else {
        RunStatus::Passed
    };
    let safety_pass_rate = super::breakdown::safety_pass_rate(&verdicts);
    let breakdowns = super::breakdown::Breakdowns::of(&verdicts);
    RunSummary {
        status,
        k,
        backend: backend.into(),
        verdicts,
        invalid,
        gates: gate_results,
        tasks_passed,
        tasks_failed,
        tasks_errored,
        tasks_not_run,
        cost_usd: 0.0,
        pass_hat_k,
        pass_at_k,
        mean_score,
        mean_robustness,
        interrupted,
        safety_pass_rate,
        breakdowns,
        baseline: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pass_at_k_is_the_unbiased_estimator() {
        assert_eq!(pass_at_k(3, 0, 3), 0.0);
        assert_eq!(pass_at_k(3, 1, 3), 1.0);
        assert!((pass_at_k(5, 1, 1) - 0.2).abs() < 1e-12);
        // 1 − C(3,2)/C(5,2) = 1 − 3/10
        assert!((pass_at_k(5, 2, 2) - 0.7).abs() < 1e-12);
    }
}
