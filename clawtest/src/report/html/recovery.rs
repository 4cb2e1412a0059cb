//! The HTML report's recovery profile: a table per fault kind for the suite and each task,
//! with a bar of the share recovered (the rows are `report::recovery`'s).

use std::fmt::Write as _;

use crate::escape;
use crate::report::recovery::{Row, rate, rows};
use crate::results::RunSummary;

/// The section, or nothing when no fault was injected in the run.
pub(super) fn section(page: &mut String, summary: &RunSummary) {
    let rows = rows(summary);
    if rows.is_empty() {
        return;
    }
    page.push_str(
        "<section id=\"recovery\"><h2>Recovery profile</h2>\
         <p>Per fault kind: injected, recovered (the same action succeeded within the \
         service's next 4 calls), given up on, and of those hidden from the user (the \
         final answer mentions no failure). Slow answers are answered, late: counted, \
         not judged.</p><table><tr><th>scope</th><th>fault</th><th>injected</th>\
         <th>recovered</th><th>gave up</th><th>hidden</th><th>recovery</th></tr>",
    );
    for row in &rows {
        write_row(page, row);
    }
    page.push_str("</table></section>\n");
}

fn write_row(page: &mut String, row: &Row<'_>) {
    let scope = match row.task {
        Some(task) => format!("<a href=\"#task-{id}\">{id}</a>", id = escape::html(task)),
        None => "<strong>suite</strong>".into(),
    };
    let (recovered, gave_up, hidden, bar) = match row.counts.rate() {
        Some(share) if row.kind.is_error() => (
            row.counts.recovered.to_string(),
            row.counts.gave_up.to_string(),
            row.counts.hidden.to_string(),
            // The bar's width is the share recovered, in whole percent.
            format!(
                "<span class=\"bar\"><span class=\"filled\" style=\"width:{}%\"></span></span> ",
                (share * 100.0).round() as u32
            ),
        ),
        _ => ("-".into(), "-".into(), "-".into(), String::new()),
    };
    let _ = write!(
        page,
        "<tr><td>{scope}</td><td>{kind}</td><td class=\"number\">{injected}</td>\
         <td class=\"number\">{recovered}</td><td class=\"number{class}\">{gave_up}</td>\
         <td class=\"number{hidden_class}\">{hidden}</td><td class=\"number\">{bar}{rate}</td></tr>",
        class = if row.counts.gave_up > 0 { " fail" } else { "" },
        hidden_class = if row.counts.hidden > 0 { " fail" } else { "" },
        kind = escape::html(row.kind.label()),
        injected = row.counts.injected,
        rate = rate(&row.counts),
    );
}
