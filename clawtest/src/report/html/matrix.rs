//! The HTML report's matrix section, in a run of several cells: a heatmap of harnesses ×
//! models (mean score, its colour from red at 0 to green at 1, with pass^k and robustness),
//! the attribution of each measure's spread per group, and the tasks the cells disagree on,
//! each cell linked to its task's trials below.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::super::{measured, score};
use crate::escape;
use crate::results::RunSummary;
use crate::results::matrix::{Axis, Metrics};

/// The section, or nothing for a run that is not a matrix.
pub(super) fn section(page: &mut String, summary: &RunSummary) {
    let Some(matrix) = &summary.matrix else {
        return;
    };
    page.push_str("<section id=\"matrix\"><h2>Matrix: harness × model</h2>");
    let cells: BTreeMap<(&str, &str), &Metrics> = matrix
        .cells
        .iter()
        .map(|row| {
            (
                (row.cell.harness.as_str(), row.cell.model.as_str()),
                &row.overall,
            )
        })
        .collect();
    let harnesses: BTreeSet<&str> = cells.keys().map(|(harness, _)| *harness).collect();
    let models: BTreeSet<&str> = cells.keys().map(|(_, model)| *model).collect();
    page.push_str("<table class=\"heatmap\"><tr><th>harness \\ model</th>");
    for model in &models {
        let _ = write!(page, "<th>{}</th>", escape::html(model));
    }
    page.push_str("</tr>\n");
    for harness in &harnesses {
        let _ = write!(page, "<tr><th>{}</th>", escape::html(harness));
        for model in &models {
            match cells.get(&(*harness, *model)) {
                Some(metrics) => {
                    // Hue 0 (red) at a mean score of 0 to 120 (green) at 1.
                    let hue = (metrics.mean_score.clamp(0.0, 1.0) * 120.0).round();
                    let _ = write!(
                        page,
                        "<td class=\"number\" style=\"background: hsl({hue}, 70%, 80%)\" \
                         title=\"mean score {mean}\">{mean}<br><small>pass^{k} {passed}/{tasks} · \
                         robustness {robustness}</small></td>",
                        mean = score(metrics.mean_score),
                        k = summary.k,
                        passed = metrics.passed,
                        tasks = metrics.tasks,
                        robustness = measured(metrics.mean_robustness),
                    );
                }
                None => page.push_str("<td class=\"muted\">excluded</td>"),
            }
        }
        page.push_str("</tr>\n");
    }
    page.push_str(
        "</table><h3>Attribution</h3><p class=\"muted\">Each measure's spread over the cells, \
         as shares of its sum of squares: the harness's main effect, the model's, and their \
         interaction.</p><table><tr><th>group</th><th>measure</th><th>tasks</th><th>spread</th>\
         <th>harness</th><th>model</th><th>interaction</th></tr>\n",
    );
    for attribution in &matrix.attribution {
        let _ = writeln!(
            page,
            "<tr><td>{}</td><td>{}</td><td class=\"number\">{}</td><td class=\"number\">{}</td>\
             <td class=\"number\">{}</td><td class=\"number\">{}</td><td class=\"number\">{}</td></tr>",
            escape::html(&attribution.group),
            attribution.measure.name(),
            attribution.tasks,
            score(attribution.spread),
            score(attribution.harness),
            score(attribution.model),
            score(attribution.interaction),
        );
    }
    page.push_str("</table><h3>Disagreements</h3>");
    if matrix.disagreements.is_empty() {
        page.push_str("<p class=\"muted\">Every task passed or failed in every cell alike.</p>");
    } else {
        page.push_str(
            "<table><tr><th>task</th><th>varies</th><th>shared</th><th>passed in</th>\
             <th>failed in</th></tr>\n",
        );
        for disagreement in &matrix.disagreements {
            let link = |cells: &[String]| {
                cells
                    .iter()
                    .map(|cell| {
                        let key = format!("{cell}/{}", disagreement.task_id);
                        format!(
                            "<a href=\"#task-{}\">{}</a>",
                            escape::html(&key),
                            escape::html(cell)
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let _ = writeln!(
                page,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape::html(&disagreement.task_id),
                match disagreement.varies {
                    Axis::Harness => "harness",
                    Axis::Model => "model",
                },
                escape::html(&disagreement.shared),
                link(&disagreement.passed),
                link(&disagreement.failed),
            );
        }
        page.push_str("</table>");
    }
    page.push_str("</section>\n");
}
