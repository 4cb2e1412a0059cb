//! The gates of a matrix: `[gates.cells."<glob>"]`, the thresholds of `[gates]` held by each
//! cell a glob over `harness/model` matches, and `[[gates.change]]`, how far a measure may move
//! from one cell to another (a model upgrade, a harness change). Read and checked here: the
//! globs when they are read (so a bad one is reported at its line), the values' ranges, and
//! that every glob and every cell named is one of the suite's cells once the harnesses and
//! models are known. What they measure is decided in `results::matrix::gates`.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer};

use super::{CellSpec, Config, ConfigError};
use crate::fault::FaultKind;

/// The thresholds a gate holds over a set of verdicts: the whole run's (`[gates]`) or one
/// cell's (`[gates.cells."<glob>"]`). The same keys, the same meaning.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Thresholds {
    /// Minimum mean final score over the trials.
    pub min_score: Option<f64>,
    /// Minimum mean robustness over the trials with an injected fault.
    pub min_robustness: Option<f64>,
    /// Minimum fraction of tasks that pass pass^k.
    pub min_pass_hat_k: Option<f64>,
    /// Per fault kind, the least share of the injected faults of that kind recovered from.
    #[serde(default)]
    pub min_recovery: BTreeMap<FaultKind, f64>,
}

/// A glob over cell names (`harness/model`), checked when it is read; `*` stops at the `/`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct CellPattern(String);

impl CellPattern {
    /// The glob as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The glob, compiled: `*` matches within one part of `harness/model`.
    pub(super) fn compile(pattern: &str) -> Result<globset::GlobMatcher, String> {
        globset::GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map(|glob| glob.compile_matcher())
            .map_err(|error| format!("`{pattern}` is not a glob over harness/model: {error}"))
    }

    /// Whether the cell named `name` (`harness/model`) is one the glob matches.
    pub fn matches(&self, name: &str) -> bool {
        // Checked when read: a pattern that does not compile matches nothing.
        Self::compile(&self.0).is_ok_and(|glob| glob.is_match(name))
    }
}

impl fmt::Display for CellPattern {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for CellPattern {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<CellPattern, D::Error> {
        let pattern = String::deserialize(deserializer)?;
        CellPattern::compile(&pattern).map_err(de::Error::custom)?;
        Ok(CellPattern(pattern))
    }
}

/// The number of a cell a change gate compares: a field of the results' matrix table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeMeasure {
    /// The share of tasks that passed pass^k.
    PassHatK,
    /// The mean over tasks of their mean final score.
    MeanScore,
    /// The mean over tasks of their mean completion.
    MeanCompletion,
    /// The mean over tasks with an injected fault of their mean robustness.
    MeanRobustness,
}

impl ChangeMeasure {
    /// The measure's name, as written in the configuration and the results.
    pub fn name(self) -> &'static str {
        match self {
            ChangeMeasure::PassHatK => "pass_hat_k",
            ChangeMeasure::MeanScore => "mean_score",
            ChangeMeasure::MeanCompletion => "mean_completion",
            ChangeMeasure::MeanRobustness => "mean_robustness",
        }
    }
}

/// `[[gates.change]]`: the change of one measure from cell `from` to cell `to` (to − from),
/// overall or over one category or capability, held between `min` and `max`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ChangeGate {
    /// The cell compared from (`harness/model`), e.g. the current model.
    pub from: String,
    /// The cell compared to, e.g. the candidate model.
    pub to: String,
    /// What is compared.
    pub measure: ChangeMeasure,
    /// Only the tasks of this `category`.
    #[serde(default)]
    pub category: Option<String>,
    /// Only the tasks of this `capability`.
    #[serde(default)]
    pub capability: Option<String>,
    /// The least change allowed: `-0.05` lets the measure fall by 0.05 at most.
    #[serde(default)]
    pub min: Option<f64>,
    /// The most change allowed: `0` requires `to` to be no better (a cheaper model allowed
    /// to match, not to be trusted beyond).
    #[serde(default)]
    pub max: Option<f64>,
}

impl ChangeGate {
    /// The group of tasks compared, as the results' attribution names groups: `all`,
    /// `category:<name>` or `capability:<name>`.
    pub fn group(&self) -> String {
        match (&self.category, &self.capability) {
            (Some(category), _) => format!("category:{category}"),
            (None, Some(capability)) => format!("capability:{capability}"),
            (None, None) => "all".into(),
        }
    }
}

impl super::Gates {
    /// These gates without the cell gates that match none of `run` and the change gates
    /// between cells that are not both among them: a run of some cells (`--cell`) is gated
    /// on what it ran. A merge keeps them all, so a cell whose results are missing fails its
    /// gates.
    pub fn for_cells(&self, run: &[String]) -> super::Gates {
        let mut gates = self.clone();
        gates
            .cells
            .retain(|pattern, _| run.iter().any(|cell| pattern.matches(cell)));
        gates
            .change
            .retain(|gate| run.contains(&gate.from) && run.contains(&gate.to));
        gates
    }
}

/// The checks of the matrix's gates once the cells are known: thresholds that are fractions,
/// change bounds that are given and ordered, every glob matching a cell and every cell named
/// being one; none of them in a suite that is not a matrix.
pub(super) fn check(config: &Config) -> Result<(), ConfigError> {
    let value_error = |field: String, message: String| ConfigError::Value {
        origin: config.origin.clone(),
        field,
        message,
    };
    let gates = &config.gates;
    if !config.is_matrix() && (!gates.cells.is_empty() || !gates.change.is_empty()) {
        let field = if gates.cells.is_empty() {
            "gates.change"
        } else {
            "gates.cells"
        };
        return Err(value_error(
            field.into(),
            "gates the cells of a harness × model matrix, and this suite has one harness and no [matrix] models: put its thresholds in [gates]".into(),
        ));
    }
    let cells: Vec<String> = config.cells().iter().map(CellSpec::name).collect();
    let listed = cells.join(", ");
    for (pattern, thresholds) in &gates.cells {
        let field = format!("gates.cells.\"{pattern}\"");
        if !cells.iter().any(|cell| pattern.matches(cell)) {
            return Err(value_error(
                field,
                format!("matches no cell; the cells are {listed}"),
            ));
        }
        check_thresholds(thresholds)
            .map_err(|(key, message)| value_error(format!("{field}.{key}"), message))?;
    }
    for (index, gate) in gates.change.iter().enumerate() {
        let field = format!("gates.change[{index}]");
        for (key, cell) in [("from", &gate.from), ("to", &gate.to)] {
            if !cells.contains(cell) {
                let known: Vec<&str> = cells.iter().map(String::as_str).collect();
                return Err(value_error(
                    format!("{field}.{key}"),
                    format!(
                        "`{cell}` is not a cell: {}",
                        crate::spelling::suggestion(cell, &known, "the cells are")
                    ),
                ));
            }
        }
        check_change(gate)
            .map_err(|(key, message)| value_error(format!("{field}{key}"), message))?;
    }
    Ok(())
}

/// A change gate's own values: two cells, one group, a bound, bounds in order.
fn check_change(gate: &ChangeGate) -> Result<(), (&'static str, String)> {
    if gate.from == gate.to {
        return Err((
            ".to",
            format!(
                "`{}` is also `from`: a change is between two cells",
                gate.to
            ),
        ));
    }
    if gate.category.is_some() && gate.capability.is_some() {
        return Err((
            ".capability",
            "a change gate compares one group: give `category` or `capability`, not both; write two gates for both".into(),
        ));
    }
    for (key, bound) in [(".min", gate.min), (".max", gate.max)] {
        if let Some(bound) = bound
            && !(-1.0..=1.0).contains(&bound)
        {
            return Err((
                key,
                format!("a change of a share is between -1 and 1, found {bound}"),
            ));
        }
    }
    match (gate.min, gate.max) {
        (None, None) => Err((
            "",
            "needs `min` (the least change allowed, e.g. -0.05) or `max` (the most), or both"
                .into(),
        )),
        (Some(min), Some(max)) if min > max => Err((
            ".min",
            format!("{min} is above `max` ({max}): no change could hold"),
        )),
        _ => Ok(()),
    }
}

/// A cell's thresholds: fractions, and recovery only of faults there is something to recover
/// from (as `[gates]`'s).
pub(super) fn check_thresholds(thresholds: &Thresholds) -> Result<(), (String, String)> {
    for (key, value) in [
        ("min_score", thresholds.min_score),
        ("min_robustness", thresholds.min_robustness),
        ("min_pass_hat_k", thresholds.min_pass_hat_k),
    ] {
        if let Some(value) = value
            && !(0.0..=1.0).contains(&value)
        {
            return Err((
                key.into(),
                format!("must be between 0 and 1, found {value}"),
            ));
        }
    }
    for (kind, threshold) in &thresholds.min_recovery {
        let key = format!("min_recovery.{kind}");
        if !kind.is_error() {
            return Err((
                key,
                "a slow answer is answered, late: there is nothing to recover from; gate `rate_limited` or `server_error`".into(),
            ));
        }
        if !(0.0..=1.0).contains(threshold) {
            return Err((key, format!("must be between 0 and 1, found {threshold}")));
        }
    }
    Ok(())
}
