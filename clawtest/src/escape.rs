//! Text that an agent, a model or a task controls, made harmless for where it is written: one
//! function per destination, and every output goes through its destination's function.
//!
//! - [`terminal`]: standard output and error, which on CI is also the job log that GitHub's
//!   runner scans for workflow commands;
//! - [`workflow_data`] and [`workflow_property`]: the parts of clawtest's own `::error` lines;
//! - [`xml`]: a whole XML 1.0 document (JUnit);
//! - [`markdown`]: text inside the Markdown summary (a table cell or a list item);
//! - [`html`]: text inside an HTML element or a quoted attribute.
//!
//! Escaping shows what was there (`\x1b`, `\u{202e}`) rather than dropping it, so a reviewer can
//! see that an agent tried something.

use std::fmt::Write as _;

/// `text` for a terminal and a CI job log: control characters (but newline and tab), C1
/// controls and the bidirectional overrides are written as escapes (`\x1b`, `\r`,
/// `\u{202e}`): no screen clear, no clipboard write (OSC 52), no line overwritten after a CR,
/// no text reordered. And no line can be a GitHub workflow command: the runner trims a line's
/// leading white space and then looks for `::` (and for `##[` anywhere, the older syntax), so
/// the first character of those is written as an escape too (`\x3a:error::`, `#\x23[`).
pub fn terminal(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for (index, line) in text.split('\n').enumerate() {
        if index > 0 {
            escaped.push('\n');
        }
        let start = escaped.len();
        for character in line.chars() {
            match character {
                '\t' => escaped.push('\t'),
                '\r' => escaped.push_str("\\r"),
                character if character.is_ascii_control() => {
                    let _ = write!(escaped, "\\x{:02x}", u32::from(character));
                }
                character if invisible_control(character) => {
                    let _ = write!(escaped, "\\u{{{:x}}}", u32::from(character));
                }
                character => escaped.push(character),
            }
        }
        neutralise_commands(&mut escaped, start);
    }
    escaped
}

/// C1 controls (`\u{9b}` is a CSI on some terminals), the bidirectional embeddings, overrides
/// and isolates, and the line and paragraph separators.
fn invisible_control(character: char) -> bool {
    matches!(
        character,
        '\u{80}'..='\u{9f}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
    )
}

/// Makes the line that starts at `start` in `text` (already free of control characters) no
/// workflow command, in place.
fn neutralise_commands(text: &mut String, start: usize) {
    let line = &text[start..];
    let lead = line.len() - line.trim_start().len();
    if line[lead..].starts_with("::") {
        text.replace_range(start + lead..start + lead + 1, "\\x3a");
    }
    let line = text[start..].to_string();
    if line.contains("##[") {
        text.truncate(start);
        text.push_str(&line.replace("##[", "#\\x23["));
    }
}

/// The message of a workflow command (`::error …::MESSAGE`): GitHub's toolkit `escapeData`
/// (`%`, CR and LF percent-encoded, so the message stays one line), with the other control
/// characters and the old `##[` syntax escaped as [`terminal`] does (the line is printed to
/// the job log).
pub fn workflow_data(text: &str) -> String {
    let encoded = text
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A");
    // The runner reads `##[` anywhere in a line as the old command syntax.
    terminal_characters(&encoded).replace("##[", "#\\x23[")
}

/// A property of a workflow command (`file=`, `title=`): [`workflow_data`] plus `:` and `,`
/// (GitHub's toolkit `escapeProperty`).
pub fn workflow_property(text: &str) -> String {
    workflow_data(text).replace(':', "%3A").replace(',', "%2C")
}

/// Control characters escaped as [`terminal`] writes them, for text already on one line.
fn terminal_characters(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        if character.is_ascii_control() && character != '\t' {
            let _ = write!(escaped, "\\x{:02x}", u32::from(character));
        } else if invisible_control(character) {
            let _ = write!(escaped, "\\u{{{:x}}}", u32::from(character));
        } else {
            escaped.push(character);
        }
    }
    escaped
}

/// A whole XML 1.0 document with every character XML 1.0 does not allow (the C0 controls but
/// tab, newline and carriage return; U+FFFE and U+FFFF) replaced by U+FFFD, so a parser reads
/// it. The markup characters are the XML writer's job; these it lets through.
pub fn xml(document: &str) -> String {
    document
        .chars()
        .map(|character| match character {
            '\t' | '\n' | '\r' => character,
            '\u{0}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}' => char::REPLACEMENT_CHARACTER,
            character => character,
        })
        .collect()
}

/// Text inside a line of GitHub-flavoured Markdown (a table cell, a list item): no HTML
/// (`<img>`, `<!--` hiding the rest of the summary), no link or image (`[a](b)`, `![a](b)`),
/// no autolink (`https://…`, `www.…`), no code span, and no `|` ending a table cell. HTML
/// characters become entities, link and code punctuation gets a backslash, the colon of `://`
/// and the dot of `www.` become entities, and a line break becomes a space (a cell is one
/// line). Emphasis characters are left: they can only change how the text looks.
pub fn markdown(text: &str) -> String {
    let one_line = text.replace(['\r', '\n'], " ");
    let mut escaped = String::with_capacity(one_line.len());
    for character in terminal_characters(&one_line).chars() {
        match character {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '\\' | '`' | '[' | ']' | '(' | ')' | '!' | '|' => {
                escaped.push('\\');
                escaped.push(character);
            }
            other => escaped.push(other),
        }
    }
    escaped
        .replace("://", "&#58;//")
        .replace("www.", "www&#46;")
}

/// A task id or a path inside a line of Markdown: monospace, and escaped like any other text
/// (a code span would show escapes as written and end at the text's own backtick).
pub fn markdown_code(text: &str) -> String {
    format!("<code>{}</code>", markdown(text))
}

/// Text inside an HTML element or a quoted attribute.
pub fn html(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            other => escaped.push(other),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_escapes_control_characters_and_keeps_lines() {
        assert_eq!(
            terminal("a\x1b[2Jb\n\tc\rPASS\x07\u{9b}\u{202e}d"),
            "a\\x1b[2Jb\n\tc\\rPASS\\x07\\u{9b}\\u{202e}d"
        );
        assert_eq!(terminal("\x1b]52;c;aGk=\x07"), "\\x1b]52;c;aGk=\\x07");
    }

    #[test]
    fn no_terminal_line_is_a_workflow_command() {
        let escaped =
            terminal("      ::stop-commands::x\n\u{a0}\u{2003}::error::y\nok ::z\nsee ##[error]w");
        for line in escaped.lines() {
            assert!(!line.trim_start().starts_with("::"), "{line}");
            assert!(!line.contains("##["), "{line}");
        }
        assert_eq!(
            escaped,
            "      \\x3a:stop-commands::x\n\u{a0}\u{2003}\\x3a:error::y\nok ::z\nsee #\\x23[error]w"
        );
    }

    #[test]
    fn workflow_data_stays_on_one_line() {
        assert_eq!(
            workflow_data("50%\r\n::x\x1b ##[error]"),
            "50%25%0D%0A::x\\x1b #\\x23[error]"
        );
        assert_eq!(workflow_property("a:b,c"), "a%3Ab%2Cc");
    }

    #[test]
    fn xml_replaces_what_xml_1_0_forbids() {
        assert_eq!(
            xml("a\u{fffe}b\u{ffff}c\x01\td\n"),
            "a\u{fffd}b\u{fffd}c\u{fffd}\td\n"
        );
        assert_eq!(xml("\u{1fffe}é"), "\u{1fffe}é");
    }

    #[test]
    fn markdown_escapes_html_and_links() {
        assert_eq!(
            markdown("<img src=x> [a](https://e.x) | `c` <!--"),
            "&lt;img src=x&gt; \\[a\\]\\(https&#58;//e.x\\) \\| \\`c\\` &lt;\\!--"
        );
        assert_eq!(markdown("a\nb\x1b"), "a b\\\\x1b");
        assert_eq!(
            markdown("see www.e.x: todo.create_task"),
            "see www&#46;e.x: todo.create_task"
        );
    }

    #[test]
    fn html_escapes_markup_and_quotes() {
        assert_eq!(
            html("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }
}
