//! The serialized results of a run (docs/results.md, schema `clawtest-results/1`): one
//! trial's record, one task's [`Verdict`] over its k trials, and the run's [`RunSummary`];
//! and the pure computations over them: [`aggregate`] (trials → verdicts → summary),
//! [`groups`] (per category, capability and fault), [`baseline`] (comparison with an
//! earlier run) and [`merge`] (shards into one run).
//!
//! Leaf data for the reports: it is built from the grader's [`crate::grade::Grade`] and the
//! [`crate::trajectory::Trajectory`], and imports nothing of [`crate::run`] or
//! [`crate::report`] (the run's events carry these types; reports read them).

pub mod aggregate;
pub mod baseline;
pub mod groups;
pub mod merge;

pub use aggregate::SummaryInputs;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// One trial, as the verdict keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrialSummary {
    pub trial: u32,
    #[serde(flatten)]
    pub status: TrialStatus,
}

/// The part of a trial's outcome that reports need.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum TrialStatus {
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

/// The task-level result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictStatus {
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
    pub status: VerdictStatus,
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
    pub trials: Vec<TrialSummary>,
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
    #[serde(rename = "breakdowns")]
    pub groups: groups::Groups,
    /// The comparison with `--baseline`, when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<baseline::BaselineComparison>,
}
