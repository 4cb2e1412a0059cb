//! What a user (and the supervisor) can see of the agent's work in a round: the earlier
//! turns, the round's tool calls with their arguments and results (the World's audit
//! entries), its last answer; each bounded, so that a round of thousands of calls or
//! megabytes of output stays one bounded request. The simulated user and the model
//! supervisor are shown it in the same words.

use std::fmt::Write;

use crate::trajectory::AuditEntry;

/// What the user could see of the agent's work: the earlier turns, this round's tool calls
/// (the World's audit entries of the round) and its last answer.
pub(crate) struct Visible<'a> {
    /// The earlier rounds, one `{"role", "content"}` JSON object per line.
    pub(crate) earlier: &'a str,
    /// The tool calls of the round just run, in order.
    pub(crate) tool_calls: &'a [AuditEntry],
    /// The agent's last answer.
    pub(crate) answer: &'a str,
}

/// How much of the visible trajectory is shown: the most tool calls, and the characters of a
/// call's arguments or result, of the earlier turns and of the answer.
pub(crate) const MOST_TOOL_CALLS: usize = 30;
pub(crate) const CALL_CHARACTERS: usize = 400;
pub(crate) const EARLIER_CHARACTERS: usize = 6000;
pub(crate) const ANSWER_CHARACTERS: usize = 4000;

impl Visible<'_> {
    /// The round's tool calls, one line each (`- action: arguments -> status result`), at
    /// most [`MOST_TOOL_CALLS`], or `(no tool calls)`.
    pub(crate) fn write_tool_calls(&self, out: &mut String) {
        if self.tool_calls.is_empty() {
            out.push_str("(no tool calls)\n");
        }
        for entry in self.tool_calls.iter().take(MOST_TOOL_CALLS) {
            let _ = writeln!(
                out,
                "- {}: {} -> {} {}",
                entry.action,
                head(&entry.params.to_string(), CALL_CHARACTERS),
                entry.status,
                head(&entry.response.to_string(), CALL_CHARACTERS),
            );
        }
        if let Some(more) = self.tool_calls.len().checked_sub(MOST_TOOL_CALLS)
            && more > 0
        {
            let _ = writeln!(out, "- … and {more} more tool calls");
        }
    }
}

/// The first `most` characters of `text`, marked when cut.
pub(crate) fn head(text: &str, most: usize) -> String {
    match text.char_indices().nth(most) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

/// The last `most` characters of `text`, marked when cut.
pub(crate) fn tail(text: &str, most: usize) -> String {
    let count = text.chars().count();
    match count.checked_sub(most).filter(|skip| *skip > 0) {
        Some(skip) => {
            let start = text.char_indices().nth(skip).map_or(0, |(start, _)| start);
            format!("…{}", &text[start..])
        }
        None => text.to_string(),
    }
}
