//! The serialized results of a run (docs/results.md, schema `clawtest-results/1`): one
//! trial's record, one task's [`Verdict`] over its k trials, and the run's [`RunSummary`];
//! and the pure computations over them: `aggregate` (trials → verdicts → summary),
//! [`groups`] (per category, capability and fault), [`baseline`] (comparison with an
//! earlier run) and [`merge`] (shards into one run).
//!
//! Leaf data for the reports: it is built from the grader's [`crate::grade::Grade`] and the
//! [`crate::trajectory::Trajectory`], and imports nothing of [`crate::run`] or
//! [`crate::report`] (the run's events carry these types; reports read them).

pub(crate) mod aggregate;
pub mod baseline;
pub mod cause;
pub mod gates;
pub mod groups;
pub mod matrix;
pub mod merge;
pub(crate) mod ranges;

pub(crate) use aggregate::SummaryInputs;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::grade::RecoveryProfile;
use crate::task::Capability;
use crate::trajectory::HarnessExit;

/// One trial, as the verdict keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrialSummary {
    /// The trial's number within its task, from 0.
    pub trial: u32,
    /// How the trial ended, and its scores when it was graded.
    #[serde(flatten)]
    pub status: TrialStatus,
    /// The `[limits]` caps that bit in the trial, one line each (see the trajectory's
    /// `limits_reached`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limits_reached: Vec<String>,
    /// A closed-loop trial's rounds: UniClawBench's status, why the loop stopped, the
    /// rounds used and the best one (whose grade the status above holds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<RoundsSummary>,
}

/// A closed-loop trial's rounds, as results keep them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundsSummary {
    /// `pass`, `fail`, `budget_exhausted` or `global_timeout`.
    pub status: crate::trajectory::rounds::LoopStatus,
    /// Why no further round ran.
    pub stop: crate::trajectory::rounds::StopReason,
    /// How many rounds ran.
    pub used: u32,
    /// The round whose grade is the trial's, from 1.
    pub best_round: u32,
    /// Each round's message, verdict, score and missing checkpoints.
    pub rounds: Vec<crate::trajectory::rounds::Round>,
}

impl RoundsSummary {
    /// The summary of `rounds`, for a trial whose best round `passed` or not.
    pub fn new(rounds: &crate::trajectory::rounds::Rounds, passed: bool) -> RoundsSummary {
        RoundsSummary {
            status: rounds.status(passed),
            stop: rounds.stop,
            used: rounds.used(),
            best_round: rounds.best_round,
            // A round's time differs from run to run: results, which replays must give byte
            // for byte, leave it to the trajectory.
            rounds: rounds
                .rounds
                .iter()
                .map(|round| crate::trajectory::rounds::Round {
                    duration_ms: None,
                    ..round.clone()
                })
                .collect(),
        }
    }
}

/// The part of a trial's outcome that reports need.
#[expect(
    clippy::large_enum_variant,
    reason = "one per trial, read field by field by every report: a box would only add a pointer to follow"
)]
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum TrialStatus {
    /// The trial ran and its trajectory was graded.
    Graded {
        /// The final score reached the pass threshold.
        passed: bool,
        /// The final score, 0..=1: safety × (0.8·completion + 0.2·robustness).
        final_score: f64,
        /// The weighted mean of the components' scores, 0..=1.
        completion: f64,
        /// The share of injected faults the agent recovered from, 0..=1 (1 when none was
        /// injected, as ClawEnvKit counts it in the final score; `faults_injected` 0 says so,
        /// and reports show "n/a").
        robustness: f64,
        /// 0 when a safety check was violated, else 1.
        safety: f64,
        /// The safety checks violated, one description each.
        violations: Vec<String>,
        /// (component, score, weight, reason) of every component that did not score 1.
        deductions: Vec<ComponentSummary>,
        /// Every component of the task, in task order, with its score and reason (the grade
        /// snapshots and the HTML report show them all; `deductions` are those below 1).
        #[serde(default)]
        components: Vec<ComponentSummary>,
        /// How many model calls the trial made through the gateway.
        model_calls: usize,
        /// Tokens of all model calls of the trial, as the answers reported them.
        input_tokens: u64,
        /// Output tokens of the same calls.
        output_tokens: u64,
        /// Their cost in US dollars (`[llm.prices]`); `None` when a model has no price.
        cost_usd: Option<f64>,
        /// How many service calls the trial's audit log holds.
        audit_entries: usize,
        /// How the harness ended, in words in the JSON (`exit code 0`, `killed at the time
        /// limit`).
        #[serde(with = "crate::trajectory::exit_in_words")]
        harness_exit: HarnessExit,
        /// Injected 429/500 faults, and the `service.action` of each one not recovered.
        #[serde(default)]
        faults_injected: usize,
        /// The `service.action` of each injected fault the agent did not recover from.
        #[serde(default)]
        unrecovered_faults: Vec<String>,
        /// Per fault kind: injected, recovered, given up on.
        #[serde(default)]
        recovery: RecoveryProfile,
    },
    /// The trial could not be graded: the harness or the run's machinery failed.
    Error {
        /// What went wrong, for the user.
        message: String,
    },
    /// The run was interrupted before the trial finished.
    Interrupted,
    /// Never started: the run's cost limit was reached first.
    NotRun {
        /// Why the trial was not started, for the user.
        reason: String,
    },
}

/// A component's score in a trial as the results keep it (the `ComponentScore` of its `Grade`, with
/// its line): a deduction when it is below 1.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ComponentSummary {
    /// The component's name in the task file.
    pub component: String,
    /// The line of the component's check in the task file, for annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// The component's score in the trial, 0..=1.
    pub score: f64,
    /// The component's weight in the task's completion.
    pub weight: f64,
    /// What the component looked for and what it found, in one line.
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
    /// The task's `task_id`.
    pub task_id: String,
    /// The task's `task_name`, for people.
    pub task_name: String,
    /// The task file, as discovered (relative to the suite root when it can be).
    pub path: PathBuf,
    /// The line of `task_id` in the task file, where annotations about the whole task point.
    pub line: u64,
    /// Passed, failed, errored, interrupted or not run, over the task's trials.
    pub status: VerdictStatus,
    /// Trials asked for the task (`--trials`, else `run.trials`).
    pub k: u32,
    /// How many of the trials passed.
    pub passes: u32,
    /// All k trials passed.
    pub pass_hat_k: bool,
    /// Unbiased pass@k estimate over the trials run (1 − C(n−c, k) / C(n, k)).
    pub pass_at_k: f64,
    /// The mean final score of the graded trials (0 when none was graded).
    pub mean_score: f64,
    /// The lowest final score of the graded trials (0 when none was graded).
    pub min_score: f64,
    /// The mean robustness of the graded trials that had a fault to recover from; `None`
    /// (null) when none had: "n/a (no fault to recover from)", never a perfect score.
    pub mean_robustness: Option<f64>,
    /// The task's recovery profile: its trials' faults per kind, summed.
    #[serde(default)]
    pub recovery: RecoveryProfile,
    /// How many trials violated at least one safety check.
    pub safety_violations: usize,
    /// The final score a trial needed to pass: the task's `pass_threshold`, else the run's
    /// (`run.pass_threshold`).
    pub threshold: f64,
    /// The pass^k estimate from the pass rate, (c/n)^k, comparable across trial counts.
    #[serde(default)]
    pub pass_hat_k_estimate: f64,
    /// The task's `category`, if it has one (grouped in the results' `breakdowns`).
    #[serde(default)]
    pub category: Option<String>,
    /// The task's `capability`, if it has one (grouped in the results' `breakdowns`).
    #[serde(default)]
    pub capability: Option<Capability>,
    /// The harness and model the trials ran with, in a run of a matrix (absent for one
    /// unnamed harness).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cell: Option<matrix::Cell>,
    /// Every trial of the task, in trial order.
    pub trials: Vec<TrialSummary>,
}

/// A suite-level threshold and whether the run met it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GateResult {
    /// The gate's name: `min_score`, `min_robustness`, `min_pass_hat_k` or
    /// `min_recovery.<kind>`; for a cell, `<harness/model>: ` before it; for a change,
    /// `<from> → <to>: <measure> change` (and ` in <group>`), then `.min` or `.max`.
    pub name: String,
    /// The configured threshold (`[gates]`, or its command-line override).
    pub threshold: f64,
    /// The suite's value the gate measures: mean score, mean robustness, pass^k or a kind's
    /// recovery rate; `None` (null) when there was nothing to measure (no fault of the kind
    /// injected), which fails the gate.
    pub actual: Option<f64>,
    /// The value was on the threshold's side.
    pub passed: bool,
    /// What the gate measured when not the whole run: one cell, or the change between two.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<gates::GateScope>,
    /// `at_most` when the value must not pass the threshold (a change gate's `max`); left out
    /// for `at_least`, every other gate.
    #[serde(default, skip_serializing_if = "gates::Bound::is_at_least")]
    pub bound: gates::Bound,
}

/// How the run as a whole ended, in order of precedence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Every task passed pass^k and every gate held.
    Passed,
    /// A task failed pass^k, a gate did not hold, a task regressed against the baseline, or a
    /// grade snapshot changed (`--snapshots`).
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
    /// The task file.
    pub path: PathBuf,
    /// The line of the first problem, when it has one.
    pub line: Option<u64>,
    /// Every problem of the file, as `cargo clawtest validate` words it.
    pub message: String,
}

/// Everything a run produced.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunSummary {
    /// How the run ended; decides the exit code.
    pub status: RunStatus,
    /// Trials per task.
    pub k: u32,
    /// The sandbox backend the trials ran in (`process` or `docker`).
    pub backend: String,
    /// One per task that was run, in the suite's order (by task file, as discovered).
    pub verdicts: Vec<Verdict>,
    /// The task files that were not run because they are invalid.
    pub invalid: Vec<InvalidEntry>,
    /// The suite-level gates that were configured, and whether each held.
    pub gates: Vec<GateResult>,
    /// Tasks whose k trials all passed.
    pub tasks_passed: usize,
    /// Tasks graded and failed pass^k.
    pub tasks_failed: usize,
    /// Tasks with at least one trial that hit an infrastructure error.
    pub tasks_errored: usize,
    /// Tasks not (fully) run because the cost limit was reached.
    pub tasks_not_run: usize,
    /// What the run's model calls cost, in US dollars (from `[llm.prices]`): replayed calls
    /// at the cost they had when recorded; the judge's questions included.
    pub cost_usd: f64,
    /// The money the run spent, in US dollars: the calls a provider answered (live and
    /// record mode, the judge's cache misses); only this counts against the cost limit. Written only when something
    /// was spent, so a replay's results do not change.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub spent_usd: f64,
    /// Fraction of tasks that passed pass^k.
    pub pass_hat_k: f64,
    /// Mean over tasks of the unbiased pass@k.
    pub pass_at_k: f64,
    /// Mean final score over all graded trials.
    pub mean_score: f64,
    /// Mean robustness over the graded trials that had a fault to recover from; `None` (null)
    /// when none had.
    pub mean_robustness: Option<f64>,
    /// The suite's recovery profile: every trial's faults per kind, summed.
    #[serde(default)]
    pub recovery: RecoveryProfile,
    /// The run was interrupted (Ctrl-C) before every trial finished; the results are partial.
    pub interrupted: bool,
    /// Fraction of graded trials without a safety violation.
    #[serde(default)]
    pub safety_pass_rate: f64,
    /// Per category and capability, and the faults left unrecovered most often.
    #[serde(default)]
    #[serde(rename = "breakdowns")]
    pub groups: groups::Groups,
    /// The comparison of the cells, in a run of a matrix: each cell's numbers, the tasks they
    /// disagree on, the attribution to harness, model and interaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matrix: Option<matrix::Matrix>,
    /// The comparison with `--baseline`, when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<baseline::BaselineComparison>,
    /// A grade snapshot changed or could not be compared (`--snapshots`), which failed the
    /// run; kept so that `merge` fails a merged run for it too. Written only when true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub snapshots_changed: bool,
    /// Which grade snapshots failed the run, new or changed (`--snapshots`); written only when
    /// some did.
    #[serde(default, skip_serializing_if = "cause::SnapshotFailures::is_empty")]
    pub snapshots: cause::SnapshotFailures,
    /// The cells the run ran, by name, in a run of a matrix (also those that ran no task, as
    /// an empty shard): `merge` checks each cell's shards are all there.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cells: Vec<matrix::Cell>,
    /// The shard of a sharded run (`--partition`) this file holds, so that `merge` can tell a
    /// whole set of shards from one with a shard missing. Absent for a whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<merge::Shard>,
}

/// True for no money (`spent_usd` is left out of a replay's results).
fn is_zero(usd: &f64) -> bool {
    *usd == 0.0
}
