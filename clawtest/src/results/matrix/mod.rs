//! The harness × model matrix in the results: a [`Cell`] (which harness, by name and digest,
//! and which model ran a verdict's trials), and the [`Matrix`] a run of several cells adds
//! to its summary: each cell's numbers overall, per category and per capability; the tasks on
//! which cells disagree; and the attribution of the spread in score over the cells to the
//! harness, the model and their interaction (docs/matrix.md gives the method). Pure functions
//! over verdicts, so a run and a merge of shards compute the same.

pub(crate) mod gates;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::{TrialStatus, Verdict, VerdictStatus};
use crate::llm::Money;
use crate::task::Capability;

/// The harness and model a verdict's trials ran with.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Cell {
    /// The harness's name (`[harness.<name>]`; `default` for an unnamed `[harness]`).
    pub harness: String,
    /// The model given to the harness as `CLAWTEST_MODEL` (`default` when none was).
    pub model: String,
    /// The first 12 hex digits of the SHA-256 of the harness as configured (its command,
    /// image or Dockerfile, tier, answer, environment names and files): two results with the
    /// same name but another digest ran another harness.
    pub harness_digest: String,
}

impl Cell {
    /// `harness/model`: how `--cell` selects it and its folders are named.
    pub fn name(&self) -> String {
        format!("{}/{}", self.harness, self.model)
    }
}

/// A verdict's key across cells: its cell's name and its task.
pub(crate) fn key(verdict: &Verdict) -> String {
    match &verdict.cell {
        Some(cell) => format!("{}/{}", cell.name(), verdict.task_id),
        None => verdict.task_id.clone(),
    }
}

/// One cell's (or one of its groups') numbers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Tasks run in the cell.
    pub tasks: usize,
    /// How many passed pass^k.
    pub passed: usize,
    /// The share that passed pass^k.
    pub pass_hat_k: f64,
    /// The mean over tasks of their mean final score.
    pub mean_score: f64,
    /// The mean over tasks of their mean completion.
    pub mean_completion: f64,
    /// The mean over tasks with an injected fault of their mean robustness; `None` (null)
    /// when no task had one.
    pub mean_robustness: Option<f64>,
    /// What the cell's model calls cost, in US dollars.
    pub cost_usd: f64,
}

/// One cell's row of the matrix table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellRow {
    /// The cell.
    pub cell: Cell,
    /// Over all its tasks.
    pub overall: Metrics,
    /// By task `category` (`(none)` for tasks without one).
    pub by_category: BTreeMap<String, Metrics>,
    /// By task `capability` (`(none)` for tasks without one).
    pub by_capability: BTreeMap<String, Metrics>,
}

/// What stays the same across the cells of a disagreement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Axis {
    /// Same model, other harnesses: the harness made the difference.
    Harness,
    /// Same harness, other models: the model made the difference.
    Model,
}

/// A task that some cells solve (pass^k) and others, differing on one axis only, do not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Disagreement {
    /// The task's `task_id`.
    pub task_id: String,
    /// Which axis varies: `harness` (same model) or `model` (same harness).
    pub varies: Axis,
    /// The model (when harnesses vary) or harness (when models vary) the cells share.
    pub shared: String,
    /// The cells that passed the task pass^k, by name.
    pub passed: Vec<String>,
    /// The cells that did not, by name.
    pub failed: Vec<String>,
}

/// Which number an attribution decomposes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// The final score.
    Score,
    /// The completion (the weighted components).
    Completion,
    /// The robustness (over tasks with an injected fault).
    Robustness,
}

impl Measure {
    const ALL: [Measure; 3] = [Measure::Score, Measure::Completion, Measure::Robustness];

    /// The measure's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Measure::Score => "score",
            Measure::Completion => "completion",
            Measure::Robustness => "robustness",
        }
    }

    /// The task's mean of this measure in its cell, when it has one.
    fn of(self, verdict: &Verdict) -> Option<f64> {
        match self {
            Measure::Score => Some(verdict.mean_score),
            Measure::Completion => mean_completion(verdict),
            Measure::Robustness => verdict.mean_robustness,
        }
    }
}

/// The two-way decomposition of one measure over the cells, for one group of tasks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attribution {
    /// `all`, `category:<name>` or `capability:<name>`.
    pub group: String,
    /// The measure decomposed.
    pub measure: Measure,
    /// The harnesses of the complete grid, by name.
    pub harnesses: Vec<String>,
    /// The models of the complete grid.
    pub models: Vec<String>,
    /// Harnesses left out because they do not run every model (`exclude_models`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
    /// The tasks of the group that every cell of the grid has a value for.
    pub tasks: usize,
    /// The highest cell mean less the lowest.
    pub spread: f64,
    /// The total sum of squares of the cell means about their grand mean.
    pub total: f64,
    /// The harness main effect's share of `total`, 0..=1 (0 when `total` is 0).
    pub harness: f64,
    /// The model main effect's share.
    pub model: f64,
    /// The interaction's share (what neither main effect explains).
    pub interaction: f64,
    /// Each harness's main effect: its row mean less the grand mean.
    pub harness_effects: BTreeMap<String, f64>,
    /// Each model's main effect: its column mean less the grand mean.
    pub model_effects: BTreeMap<String, f64>,
}

/// The comparison of a run's cells.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Matrix {
    /// One row per cell, by name.
    pub cells: Vec<CellRow>,
    /// The tasks cells disagree on, by task then axis.
    pub disagreements: Vec<Disagreement>,
    /// Per group (all tasks, each category, each capability) and measure.
    pub attribution: Vec<Attribution>,
}

const NONE: &str = "(none)";

impl Matrix {
    /// The comparison of `verdicts`' cells; `None` when no verdict names a cell (a run of one
    /// unnamed harness).
    pub(crate) fn of(verdicts: &[Verdict]) -> Option<Matrix> {
        let mut by_cell: BTreeMap<&Cell, Vec<&Verdict>> = BTreeMap::new();
        for verdict in verdicts {
            if let Some(cell) = &verdict.cell {
                by_cell.entry(cell).or_default().push(verdict);
            }
        }
        if by_cell.is_empty() {
            return None;
        }
        let cells = by_cell
            .iter()
            .map(|(cell, verdicts)| CellRow {
                cell: (*cell).clone(),
                overall: metrics(verdicts),
                by_category: grouped(verdicts, |verdict| verdict.category.as_deref()),
                by_capability: grouped(verdicts, |verdict| {
                    verdict.capability.map(Capability::name)
                }),
            })
            .collect();
        Some(Matrix {
            cells,
            disagreements: disagreements(&by_cell),
            attribution: attribution(&by_cell),
        })
    }
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (mut sum, mut count) = (0.0, 0usize);
    for value in values {
        sum += value;
        count += 1;
    }
    (count > 0).then(|| sum / count as f64)
}

/// The mean completion of a verdict's graded trials.
fn mean_completion(verdict: &Verdict) -> Option<f64> {
    mean(
        verdict
            .trials
            .iter()
            .filter_map(|trial| match trial.status {
                TrialStatus::Graded { completion, .. } => Some(completion),
                _ => None,
            }),
    )
}

fn metrics(verdicts: &[&Verdict]) -> Metrics {
    let passed = verdicts
        .iter()
        .filter(|verdict| verdict.status == VerdictStatus::Passed)
        .count();
    let cost: Money = verdicts
        .iter()
        .flat_map(|verdict| &verdict.trials)
        .filter_map(|trial| match trial.status {
            TrialStatus::Graded { cost_usd, .. } => cost_usd.map(Money::from_usd),
            _ => None,
        })
        .sum();
    Metrics {
        tasks: verdicts.len(),
        passed,
        pass_hat_k: if verdicts.is_empty() {
            0.0
        } else {
            passed as f64 / verdicts.len() as f64
        },
        mean_score: mean(verdicts.iter().map(|verdict| verdict.mean_score)).unwrap_or(0.0),
        mean_completion: mean(
            verdicts
                .iter()
                .filter_map(|verdict| mean_completion(verdict)),
        )
        .unwrap_or(0.0),
        mean_robustness: mean(
            verdicts
                .iter()
                .filter_map(|verdict| verdict.mean_robustness),
        ),
        cost_usd: cost.usd(),
    }
}

fn grouped(verdicts: &[&Verdict], key: fn(&Verdict) -> Option<&str>) -> BTreeMap<String, Metrics> {
    let mut groups: BTreeMap<String, Vec<&Verdict>> = BTreeMap::new();
    for verdict in verdicts {
        groups
            .entry(key(verdict).unwrap_or(NONE).to_owned())
            .or_default()
            .push(verdict);
    }
    groups
        .into_iter()
        .map(|(name, verdicts)| (name, metrics(&verdicts)))
        .collect()
}

/// For each task, the cells that share a model (or a harness) and split on it.
fn disagreements(by_cell: &BTreeMap<&Cell, Vec<&Verdict>>) -> Vec<Disagreement> {
    // task → (cell → passed pass^k), every verdict that ended (an interrupted or unrun task
    // says nothing about the cell).
    let mut outcomes: BTreeMap<&str, BTreeMap<&Cell, bool>> = BTreeMap::new();
    for (cell, verdicts) in by_cell {
        for verdict in verdicts {
            if matches!(
                verdict.status,
                VerdictStatus::Passed | VerdictStatus::Failed
            ) {
                outcomes
                    .entry(verdict.task_id.as_str())
                    .or_default()
                    .insert(cell, verdict.status == VerdictStatus::Passed);
            }
        }
    }
    let mut found = Vec::new();
    for (task_id, cells) in outcomes {
        for varies in [Axis::Harness, Axis::Model] {
            let mut split: BTreeMap<&str, (Vec<String>, Vec<String>)> = BTreeMap::new();
            for (cell, passed) in &cells {
                let shared = match varies {
                    Axis::Harness => cell.model.as_str(),
                    Axis::Model => cell.harness.as_str(),
                };
                let entry = split.entry(shared).or_default();
                let side = if *passed { &mut entry.0 } else { &mut entry.1 };
                side.push(cell.name());
            }
            for (shared, (passed, failed)) in split {
                if !passed.is_empty() && !failed.is_empty() {
                    found.push(Disagreement {
                        task_id: task_id.to_owned(),
                        varies,
                        shared: shared.to_owned(),
                        passed,
                        failed,
                    });
                }
            }
        }
    }
    found
}

/// Every group's attribution of every measure: all tasks, then each category, then each
/// capability.
fn attribution(by_cell: &BTreeMap<&Cell, Vec<&Verdict>>) -> Vec<Attribution> {
    let mut groups: BTreeSet<String> = BTreeSet::new();
    for verdict in by_cell.values().flatten() {
        groups.insert(format!(
            "category:{}",
            verdict.category.as_deref().unwrap_or(NONE)
        ));
        groups.insert(format!(
            "capability:{}",
            verdict.capability.map(Capability::name).unwrap_or(NONE)
        ));
    }
    let in_group = |group: &str, verdict: &Verdict| match group.split_once(':') {
        Some(("category", name)) => verdict.category.as_deref().unwrap_or(NONE) == name,
        Some(("capability", name)) => {
            verdict.capability.map(Capability::name).unwrap_or(NONE) == name
        }
        _ => true,
    };
    let ordered = std::iter::once("all".to_owned())
        .chain(
            groups
                .iter()
                .filter(|group| group.starts_with("category:"))
                .cloned(),
        )
        .chain(
            groups
                .iter()
                .filter(|group| group.starts_with("capability:"))
                .cloned(),
        );
    let mut found = Vec::new();
    for group in ordered {
        for measure in Measure::ALL {
            // (harness, model) → task → value
            let mut values: BTreeMap<(&str, &str), BTreeMap<&str, f64>> = BTreeMap::new();
            for (cell, verdicts) in by_cell {
                let column = values
                    .entry((cell.harness.as_str(), cell.model.as_str()))
                    .or_default();
                for verdict in verdicts.iter().filter(|verdict| in_group(&group, verdict)) {
                    if let Some(value) = measure.of(verdict) {
                        column.insert(verdict.task_id.as_str(), value);
                    }
                }
            }
            if let Some(attribution) = decompose(&group, measure, &values) {
                found.push(attribution);
            }
        }
    }
    found
}

/// The two-way decomposition (ANOVA sums of squares, one value per cell) of the cell means of
/// the complete grid: the harnesses that run every model, over the tasks every cell of it has
/// a value for. `None` when no task is left.
fn decompose(
    group: &str,
    measure: Measure,
    values: &BTreeMap<(&str, &str), BTreeMap<&str, f64>>,
) -> Option<Attribution> {
    let models: BTreeSet<&str> = values.keys().map(|(_, model)| *model).collect();
    let all_harnesses: BTreeSet<&str> = values.keys().map(|(harness, _)| *harness).collect();
    let (harnesses, left_out): (Vec<&str>, Vec<&str>) = all_harnesses.iter().partition(|harness| {
        models
            .iter()
            .all(|model| values.contains_key(&(**harness, *model)))
    });
    let grid: Vec<&BTreeMap<&str, f64>> = harnesses
        .iter()
        .flat_map(|harness| models.iter().map(move |model| (*harness, *model)))
        .map(|cell| &values[&cell])
        .collect();
    let first = grid.first()?;
    let tasks: Vec<&str> = first
        .keys()
        .filter(|task| grid.iter().all(|column| column.contains_key(*task)))
        .copied()
        .collect();
    if tasks.is_empty() {
        return None;
    }
    let (rows, columns) = (harnesses.len(), models.len());
    // y[h][m]: the cell's mean over the common tasks, summed in task order.
    let cell_mean = |harness: &str, model: &str| {
        let column = &values[&(harness, model)];
        tasks.iter().map(|task| column[task]).sum::<f64>() / tasks.len() as f64
    };
    let y: Vec<Vec<f64>> = harnesses
        .iter()
        .map(|harness| {
            models
                .iter()
                .map(|model| cell_mean(harness, model))
                .collect()
        })
        .collect();
    let grand = y.iter().flatten().sum::<f64>() / (rows * columns) as f64;
    let row_means: Vec<f64> = y
        .iter()
        .map(|row| row.iter().sum::<f64>() / columns as f64)
        .collect();
    let column_means: Vec<f64> = (0..columns)
        .map(|column| y.iter().map(|row| row[column]).sum::<f64>() / rows as f64)
        .collect();
    let square = |value: f64| value * value;
    let total: f64 = y.iter().flatten().map(|value| square(value - grand)).sum();
    let harness_ss = columns as f64
        * row_means
            .iter()
            .map(|mean| square(mean - grand))
            .sum::<f64>();
    let model_ss = rows as f64
        * column_means
            .iter()
            .map(|mean| square(mean - grand))
            .sum::<f64>();
    let mut interaction_ss = 0.0;
    for (row, values) in y.iter().enumerate() {
        for (column, value) in values.iter().enumerate() {
            interaction_ss += square(value - row_means[row] - column_means[column] + grand);
        }
    }
    let share = |part: f64| {
        if total > 1e-12 {
            round(part / total)
        } else {
            0.0
        }
    };
    let highest = y.iter().flatten().copied().fold(f64::MIN, f64::max);
    let lowest = y.iter().flatten().copied().fold(f64::MAX, f64::min);
    Some(Attribution {
        group: group.to_owned(),
        measure,
        harnesses: harnesses.iter().map(|name| (*name).to_owned()).collect(),
        models: models.iter().map(|name| (*name).to_owned()).collect(),
        left_out: left_out.iter().map(|name| (*name).to_owned()).collect(),
        tasks: tasks.len(),
        spread: round(highest - lowest),
        total: round(total),
        harness: share(harness_ss),
        model: share(model_ss),
        interaction: share(interaction_ss),
        harness_effects: harnesses
            .iter()
            .zip(&row_means)
            .map(|(name, mean)| ((*name).to_owned(), round(mean - grand)))
            .collect(),
        model_effects: models
            .iter()
            .zip(&column_means)
            .map(|(name, mean)| ((*name).to_owned(), round(mean - grand)))
            .collect(),
    })
}

/// Rounded to 6 decimals: the last bits of a sum of squares are noise, and would make the
/// results differ from one platform's floating point to another's.
pub(crate) fn round(value: f64) -> f64 {
    let rounded = (value * 1e6).round() / 1e6;
    if rounded == 0.0 { 0.0 } else { rounded }
}

#[cfg(test)]
mod tests;
