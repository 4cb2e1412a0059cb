//! The matrix of a run of several cells, as people read it: the table of cells (overall, per
//! category, per capability: pass^k, mean score, completion, robustness, cost), the tasks the
//! cells disagree on, and the attribution of each measure's spread to harness, model and
//! interaction. One set of tables ([`tables`]), rendered for the terminal ([`terminal`]) and
//! for the Markdown summary ([`markdown`]); the HTML report draws its heatmap from the same
//! numbers (`html::matrix`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{measured, score};
use crate::escape;
use crate::llm::money::dollars;
use crate::results::RunSummary;
use crate::results::matrix::{Axis, CellRow, Matrix, Metrics};

/// A titled table: its header and rows of cells, as text not yet escaped.
pub(crate) struct Table {
    /// What the table shows.
    pub(crate) title: String,
    /// The column names.
    pub(crate) header: Vec<String>,
    /// The rows, each as long as the header.
    pub(crate) rows: Vec<Vec<String>>,
}

fn metrics_columns(metrics: &Metrics) -> Vec<String> {
    vec![
        metrics.tasks.to_string(),
        format!("{}/{}", metrics.passed, metrics.tasks),
        score(metrics.mean_score),
        score(metrics.mean_completion),
        measured(metrics.mean_robustness),
        dollars(metrics.cost_usd),
    ]
}

/// The matrix's tables, in the order shown: cells overall, by category, by capability, the
/// disagreements, the attribution.
pub(crate) fn tables(matrix: &Matrix, k: u32) -> Vec<Table> {
    let numbers = [
        "tasks".to_string(),
        format!("pass^{k}"),
        "mean".into(),
        "completion".into(),
        "robustness".into(),
        "cost".into(),
    ];
    let mut tables = vec![Table {
        title: "cells".into(),
        header: std::iter::once("cell".to_string())
            .chain(numbers.iter().cloned())
            .collect(),
        rows: matrix
            .cells
            .iter()
            .map(|row| {
                std::iter::once(row.cell.name())
                    .chain(metrics_columns(&row.overall))
                    .collect()
            })
            .collect(),
    }];
    type Pick = fn(&CellRow) -> &BTreeMap<String, Metrics>;
    let by_category: Pick = |row| &row.by_category;
    let by_capability: Pick = |row| &row.by_capability;
    for (title, pick) in [("category", by_category), ("capability", by_capability)] {
        let mut rows = Vec::new();
        for row in &matrix.cells {
            for (name, metrics) in pick(row) {
                rows.push(
                    [name.clone(), row.cell.name()]
                        .into_iter()
                        .chain(metrics_columns(metrics))
                        .collect(),
                );
            }
        }
        rows.sort();
        tables.push(Table {
            title: format!("cells by {title}"),
            header: [title.to_string(), "cell".into()]
                .into_iter()
                .chain(numbers.iter().cloned())
                .collect(),
            rows,
        });
    }
    tables.push(Table {
        title: "disagreements (solved pass^k by some cells, not by others differing in one part)"
            .into(),
        header: ["task", "varies", "shared", "passed", "failed"]
            .map(String::from)
            .to_vec(),
        rows: matrix
            .disagreements
            .iter()
            .map(|disagreement| {
                vec![
                    disagreement.task_id.clone(),
                    match disagreement.varies {
                        Axis::Harness => "harness".into(),
                        Axis::Model => "model".into(),
                    },
                    disagreement.shared.clone(),
                    disagreement.passed.join(", "),
                    disagreement.failed.join(", "),
                ]
            })
            .collect(),
    });
    tables.push(Table {
        title: "attribution (each measure's spread over the cells: shares of its sum of squares)"
            .into(),
        header: [
            "group",
            "measure",
            "tasks",
            "spread",
            "harness",
            "model",
            "interaction",
        ]
        .map(String::from)
        .to_vec(),
        rows: matrix
            .attribution
            .iter()
            .map(|attribution| {
                let mut group = attribution.group.clone();
                if !attribution.left_out.is_empty() {
                    let _ = write!(group, " (without {})", attribution.left_out.join(", "));
                }
                vec![
                    group,
                    attribution.measure.name().into(),
                    attribution.tasks.to_string(),
                    score(attribution.spread),
                    score(attribution.harness),
                    score(attribution.model),
                    score(attribution.interaction),
                ]
            })
            .collect(),
    });
    tables
}

/// What the terminal shows once every cell has run: the matrix, the gates and the baseline's
/// regressions over the whole, and the matrix's result line (each cell showed its own as it
/// ended). Empty for a run that is not a matrix.
pub fn closing(summary: &RunSummary) -> String {
    let Some(matrix) = &summary.matrix else {
        return String::new();
    };
    let mut text = format!("\n{}", terminal(matrix, summary.k));
    text.push_str(&super::terminal::gate_lines(summary));
    if let Some(comparison) = &summary.baseline {
        for change in &comparison.regressions {
            let _ = writeln!(
                text,
                "REGRESSION {}{}: {}",
                change
                    .cell
                    .as_ref()
                    .map(|cell| format!("{}/", escape::terminal(cell)))
                    .unwrap_or_default(),
                escape::terminal(&change.task_id),
                escape::terminal(&change.reason)
            );
        }
    }
    let _ = writeln!(text, "matrix {}", super::terminal::result_line(summary));
    text
}

/// The tables as plain text with aligned columns, every value made safe for a terminal.
pub fn terminal(matrix: &Matrix, k: u32) -> String {
    let mut text = String::from("matrix: harness × model\n");
    for table in tables(matrix, k) {
        let _ = writeln!(text, "\n{}", table.title);
        if table.rows.is_empty() {
            text.push_str("  (none)\n");
            continue;
        }
        let rows: Vec<Vec<String>> = std::iter::once(&table.header)
            .chain(&table.rows)
            .map(|row| row.iter().map(|value| escape::terminal(value)).collect())
            .collect();
        let widths: Vec<usize> = (0..table.header.len())
            .map(|column| {
                rows.iter()
                    .map(|row| row[column].chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        for row in rows {
            let line: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(value, width)| format!("{value:<width$}"))
                .collect();
            let _ = writeln!(text, "  {}", line.join("  ").trim_end());
        }
    }
    text
}

/// The tables as a Markdown section of the summary, every value escaped.
pub(crate) fn markdown(matrix: &Matrix, k: u32) -> String {
    let mut text = String::from("### Matrix: harness × model\n\n");
    for table in tables(matrix, k) {
        let _ = writeln!(text, "**{}**\n", escape::markdown(&table.title));
        if table.rows.is_empty() {
            text.push_str("(none)\n\n");
            continue;
        }
        let _ = writeln!(
            text,
            "| {} |\n|{}",
            table
                .header
                .iter()
                .map(|name| escape::markdown(name))
                .collect::<Vec<_>>()
                .join(" | "),
            "---|".repeat(table.header.len())
        );
        for row in &table.rows {
            let _ = writeln!(
                text,
                "| {} |",
                row.iter()
                    .map(|value| escape::markdown(value))
                    .collect::<Vec<_>>()
                    .join(" | ")
            );
        }
        text.push('\n');
    }
    text
}
