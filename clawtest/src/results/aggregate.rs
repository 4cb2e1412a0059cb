//! From trials to verdicts: what a result keeps of a graded trial, pass^k per task (all k
//! trials pass), the unbiased pass@k, mean and minimum scores, and the suite's totals and
//! gates. Pure functions over finished trials.

use super::gates::{Measured, mean, measured_robustness};
use super::{
    ComponentSummary, InvalidEntry, RunStatus, RunSummary, TrialStatus, TrialSummary, Verdict,
    VerdictStatus,
};
use crate::config::Gates;
use crate::grade::Grade;
use crate::llm::Money;
use crate::task::Task;
use crate::trajectory::Trajectory;

impl TrialStatus {
    /// What the verdict keeps of a graded trial: the grade's scores and deductions, and the
    /// trajectory's counts (model calls, tokens, cost, audit entries, how the harness ended).
    pub(crate) fn graded(task: &Task, grade: &Grade, trajectory: &Trajectory) -> TrialStatus {
        TrialStatus::Graded {
            passed: grade.passed,
            final_score: grade.final_score,
            completion: grade.completion,
            robustness: grade.robustness.score,
            safety: grade.safety,
            violations: grade.violations.clone(),
            deductions: components(task, grade)
                .filter(|component| component.score < 1.0)
                .collect(),
            components: components(task, grade).collect(),
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
            cost_usd: cost(&trajectory.model_calls),
            audit_entries: trajectory.audit.len(),
            harness_exit: trajectory.exit.clone(),
            faults_injected: grade.robustness.injected,
            unrecovered_faults: grade
                .robustness
                .unrecovered
                .iter()
                .map(|fault| format!("{}.{}", fault.service, fault.action))
                .collect(),
            recovery: grade.robustness.profile.clone(),
        }
    }
}

/// Each component of `grade` with its line in `task`.
fn components<'a>(task: &'a Task, grade: &'a Grade) -> impl Iterator<Item = ComponentSummary> + 'a {
    // A closed loop's grade has the task's components, then the checkpoints graded so far.
    let checkpoint_line = |name: &str| {
        task.checkpoints
            .iter()
            .find(|checkpoint| checkpoint.name == name)
            .and_then(|checkpoint| checkpoint.line)
    };
    grade
        .components
        .iter()
        .enumerate()
        .map(move |(index, component)| ComponentSummary {
            component: component.name.clone(),
            line: match task.components.get(index) {
                Some(spec) => spec.line,
                None => checkpoint_line(&component.name),
            },
            score: component.score,
            weight: component.weight,
            reason: component.reason.clone(),
        })
}

impl TrialSummary {
    /// The trial was graded and passed.
    pub(crate) fn passed(&self) -> bool {
        matches!(self.status, TrialStatus::Graded { passed: true, .. })
    }

    /// The trial's final score, if it was graded.
    pub(crate) fn score(&self) -> Option<f64> {
        match self.status {
            TrialStatus::Graded { final_score, .. } => Some(final_score),
            _ => None,
        }
    }
}

/// Builds a task's verdict from its trials (in trial order).
pub(crate) fn verdict(
    task: &Task,
    threshold: f64,
    k: u32,
    mut trials: Vec<TrialSummary>,
) -> Verdict {
    trials.sort_by_key(|record| record.trial);
    let passes = trials.iter().filter(|record| record.passed()).count() as u32;
    let status = if trials
        .iter()
        .any(|record| matches!(record.status, TrialStatus::Interrupted))
        || trials.len() < k as usize
    {
        VerdictStatus::Interrupted
    } else if trials
        .iter()
        .any(|record| matches!(record.status, TrialStatus::NotRun { .. }))
    {
        VerdictStatus::NotRun
    } else if trials
        .iter()
        .any(|record| matches!(record.status, TrialStatus::Error { .. }))
    {
        VerdictStatus::Error
    } else if passes == k {
        VerdictStatus::Passed
    } else {
        VerdictStatus::Failed
    };
    let scores: Vec<f64> = trials.iter().filter_map(TrialSummary::score).collect();
    let robustness: Vec<f64> = trials.iter().filter_map(measured_robustness).collect();
    let recovery = crate::grade::sum_profiles(trials.iter().filter_map(profile));
    let safety_violations = trials
        .iter()
        .filter(|record| matches!(&record.status, TrialStatus::Graded { violations, .. } if !violations.is_empty()))
        .count();
    Verdict {
        task_id: task.id.clone(),
        task_name: task.name.clone(),
        path: task.path.clone(),
        line: task.line,
        status,
        k,
        passes,
        pass_hat_k: status == VerdictStatus::Passed,
        pass_at_k: pass_at_k(scores.len() as u64, u64::from(passes), u64::from(k)),
        mean_score: mean(&scores),
        min_score: scores.iter().copied().fold(f64::NAN, f64::min).max(0.0),
        mean_robustness: (!robustness.is_empty()).then(|| mean(&robustness)),
        recovery,
        safety_violations,
        threshold,
        pass_hat_k_estimate: if scores.is_empty() {
            0.0
        } else {
            (f64::from(passes) / scores.len() as f64).powi(k as i32)
        },
        category: task.category.clone(),
        capability: task.capability,
        cell: None,
        trials,
    }
}

/// A graded trial's recovery profile.
fn profile(record: &TrialSummary) -> Option<&crate::grade::RecoveryProfile> {
    match &record.status {
        TrialStatus::Graded { recovery, .. } => Some(recovery),
        _ => None,
    }
}

/// The unbiased pass@k estimator over n trials with c passes: 1 − C(n−c, k) / C(n, k).
/// With fewer than k trials it falls back to "any pass".
pub(crate) fn pass_at_k(n: u64, c: u64, k: u64) -> f64 {
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

/// Everything a run's summary is made of. [`RunSummary::new`] derives the rest (totals,
/// rates, gates, groups, the baseline comparison and the status), so a run and a merge of
/// shards summarize the same way and neither can leave a field out.
#[derive(Debug, Clone)]
pub(crate) struct SummaryInputs<'a> {
    /// One per task, in the order to report them.
    pub(crate) verdicts: Vec<Verdict>,
    /// The task files that were not run because they are invalid.
    pub(crate) invalid: Vec<InvalidEntry>,
    /// Trials per task.
    pub(crate) k: u32,
    /// The sandbox backend's name.
    pub(crate) backend: &'a str,
    /// The run stopped before every trial finished.
    pub(crate) interrupted: bool,
    /// What the run's model calls cost, in US dollars (from `[llm.prices]`), replayed calls
    /// at their recorded cost.
    pub(crate) cost_usd: f64,
    /// The money the run spent on calls a provider answered, in US dollars.
    pub(crate) spent_usd: f64,
    /// The suite-level thresholds; their tolerance is also the baseline's.
    pub(crate) gates: &'a Gates,
    /// The results to compare with (`--baseline`); a regression fails a run that passed.
    pub(crate) baseline: Option<&'a RunSummary>,
    /// The grade snapshots that changed, are new, or could not be compared (`run
    /// --snapshots`): they fail a run that would otherwise pass.
    pub(crate) snapshots: super::cause::SnapshotFailures,
}

impl RunSummary {
    /// Folds verdicts, invalid tasks, gates, cost, the baseline and the snapshots' outcome into
    /// the run's summary and status. The one place a summary is built and its status decided.
    pub(crate) fn new(inputs: SummaryInputs<'_>) -> RunSummary {
        let SummaryInputs {
            verdicts,
            invalid,
            k,
            backend,
            interrupted,
            cost_usd,
            spent_usd,
            gates,
            baseline,
            snapshots,
        } = inputs;
        let snapshots_changed = !snapshots.is_empty();
        let count = |status: VerdictStatus| {
            verdicts
                .iter()
                .filter(|verdict| verdict.status == status)
                .count()
        };
        let (tasks_passed, tasks_failed, tasks_errored) = (
            count(VerdictStatus::Passed),
            count(VerdictStatus::Failed),
            count(VerdictStatus::Error),
        );
        let tasks_not_run = count(VerdictStatus::NotRun);
        let measured = Measured::of(verdicts.iter());
        let pass_at_k = if verdicts.is_empty() {
            0.0
        } else {
            verdicts
                .iter()
                .map(|verdict| verdict.pass_at_k)
                .sum::<f64>()
                / verdicts.len() as f64
        };
        let matrix = super::matrix::Matrix::of(&verdicts);
        let mut gate_results = super::gates::held(&gates.thresholds(), &measured, "", None);
        gate_results.extend(super::matrix::gates::held(
            gates,
            &verdicts,
            matrix.as_ref(),
        ));
        let Measured {
            mean_score,
            mean_robustness,
            pass_hat_k,
            recovery,
        } = measured;
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
        } else if snapshots_changed {
            RunStatus::Failed
        } else {
            RunStatus::Passed
        };
        let safety_pass_rate = super::groups::safety_pass_rate(&verdicts);
        let groups = super::groups::Groups::of(&verdicts);
        let mut summary = RunSummary {
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
            cost_usd,
            spent_usd,
            pass_hat_k,
            pass_at_k,
            mean_score,
            mean_robustness,
            recovery,
            interrupted,
            safety_pass_rate,
            groups,
            matrix,
            baseline: None,
            snapshots_changed,
            cells: Vec::new(),
            shard: None,
            snapshots,
        };
        if let Some(before) = baseline {
            let comparison = super::baseline::compare(before, &summary, gates.tolerance());
            super::baseline::apply(&mut summary, comparison);
        }
        summary
    }
}

/// What a trial's model calls cost, or None when one of them has no price; summed as whole
/// nano-dollars, as the run's total is (each call's cost is a whole number of them).
fn cost(calls: &[crate::trajectory::ModelCall]) -> Option<f64> {
    let sum: Option<Money> = calls
        .iter()
        .map(|call| call.cost_usd.map(Money::from_usd))
        .sum();
    sum.map(Money::usd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trial_without_model_calls_cost_positive_zero() {
        let cost = cost(&[]).unwrap();
        assert!(cost == 0.0 && cost.is_sign_positive(), "{cost:?}");
        assert_eq!(serde_json::to_string(&cost).unwrap(), "0.0");
    }

    #[test]
    fn pass_at_k_is_the_unbiased_estimator() {
        assert_eq!(pass_at_k(3, 0, 3), 0.0);
        assert_eq!(pass_at_k(3, 1, 3), 1.0);
        assert!((pass_at_k(5, 1, 1) - 0.2).abs() < 1e-12);
        // 1 − C(3,2)/C(5,2) = 1 − 3/10
        assert!((pass_at_k(5, 2, 2) - 0.7).abs() < 1e-12);
    }
}
