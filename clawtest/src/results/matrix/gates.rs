//! The matrix's gates held over a run's cells: each `[gates.cells."<glob>"]` by every cell it
//! matches (over that cell's verdicts, measured as the whole run's `[gates]` are), and each
//! `[[gates.change]]` on the matrix table's numbers of its two cells (to − from, overall or
//! in its group). A cell a change gate names that is not in the results, or a group one of
//! them lacks, leaves nothing to measure, and the gate fails: a lost cell must not pass.

use super::{Matrix, Metrics, round};
use crate::config::{ChangeGate, ChangeMeasure, Gates};
use crate::results::gates::{Bound, GateScope, Measured, held as held_over};
use crate::results::{GateResult, Verdict};

/// The outcome of every cell gate and change gate of `gates` over `verdicts` (their cells'
/// rows in `matrix`): cells in name order, then the change gates in the order written.
pub(crate) fn held(
    gates: &Gates,
    verdicts: &[Verdict],
    matrix: Option<&Matrix>,
) -> Vec<GateResult> {
    let rows = matrix
        .map(|matrix| matrix.cells.as_slice())
        .unwrap_or_default();
    let mut results = Vec::new();
    for (pattern, thresholds) in &gates.cells {
        let matched: Vec<String> = rows
            .iter()
            .map(|row| row.cell.name())
            .filter(|name| pattern.matches(name))
            .collect();
        if matched.is_empty() {
            // A glob over cells none of the results have: a lost cell, not a vacuous pass.
            let scope = GateScope::Cell {
                cell: None,
                pattern: pattern.to_string(),
            };
            let nothing = Measured::of(std::iter::empty());
            let unmeasured = held_over(thresholds, &nothing, &format!("{pattern}: "), Some(&scope))
                .into_iter()
                .map(|gate| {
                    GateResult::new(gate.name, gate.threshold, None, gate.bound, gate.scope)
                });
            results.extend(unmeasured);
        }
        for cell in matched {
            let measured = Measured::of(
                verdicts
                    .iter()
                    .filter(|verdict| verdict.cell.as_ref().is_some_and(|own| own.name() == cell)),
            );
            let scope = GateScope::Cell {
                cell: Some(cell.clone()),
                pattern: pattern.to_string(),
            };
            results.extend(held_over(
                thresholds,
                &measured,
                &format!("{cell}: "),
                Some(&scope),
            ));
        }
    }
    for gate in &gates.change {
        results.extend(change(gate, matrix));
    }
    results
}

/// One change gate's outcomes: its `min`, then its `max`.
fn change(gate: &ChangeGate, matrix: Option<&Matrix>) -> Vec<GateResult> {
    let group = gate.group();
    let value = |cell: &str| -> Option<f64> {
        let row = matrix?.cells.iter().find(|row| row.cell.name() == cell)?;
        let metrics = match (&gate.category, &gate.capability) {
            (Some(category), _) => row.by_category.get(category)?,
            (None, Some(capability)) => row.by_capability.get(capability)?,
            (None, None) => &row.overall,
        };
        measure(metrics, gate.measure)
    };
    let actual = value(&gate.from)
        .zip(value(&gate.to))
        .map(|(from, to)| round(to - from));
    let scope = GateScope::Change {
        from: gate.from.clone(),
        to: gate.to.clone(),
        measure: gate.measure.name().into(),
        group: group.clone(),
    };
    let within = if group == "all" {
        String::new()
    } else {
        format!(" in {group}")
    };
    let name = format!(
        "{} → {}: {} change{within}",
        gate.from,
        gate.to,
        gate.measure.name()
    );
    [
        (gate.min, Bound::AtLeast, "min"),
        (gate.max, Bound::AtMost, "max"),
    ]
    .into_iter()
    .filter_map(|(threshold, bound, side)| {
        Some(GateResult::new(
            format!("{name}.{side}"),
            threshold?,
            actual,
            bound,
            Some(scope.clone()),
        ))
    })
    .collect()
}

/// A cell's (or group's) number a change gate compares; `None` for a robustness where no
/// task had a fault, or a group without tasks.
fn measure(metrics: &Metrics, measure: ChangeMeasure) -> Option<f64> {
    if metrics.tasks == 0 {
        return None;
    }
    match measure {
        ChangeMeasure::PassHatK => Some(metrics.pass_hat_k),
        ChangeMeasure::MeanScore => Some(metrics.mean_score),
        ChangeMeasure::MeanCompletion => Some(metrics.mean_completion),
        ChangeMeasure::MeanRobustness => metrics.mean_robustness,
    }
}
