//! `pattern_match` patterns: whether one would fail to compile when grading (a parse error,
//! look-around or backreferences, a size over regex's limit), found at validation and said
//! in words with what to do instead.

use crate::task::check::pattern_regex;

/// What is wrong with a `pattern_match` pattern, in words, with what to do instead.
pub(super) struct PatternProblem {
    pub(super) message: String,
    pub(super) help: &'static str,
}

/// Whether `pattern` would fail to compile when grading. Parsing is what usually fails for a
/// pattern a person writes, and costs a fraction of compiling; compiling (what grading does)
/// only adds regex's size limit, so only patterns whose estimated size comes near it are
/// compiled here (`\w{1000}` and `(\w{15}){15}` are over it; `\d{4}-\d{2}` is far below).
pub(super) fn pattern_problem(pattern: &str) -> Option<PatternProblem> {
    let hir = match pattern_parser().parse(pattern) {
        Ok(hir) => hir,
        Err(error) => {
            let first = error.to_string();
            let last = first.lines().last().unwrap_or("invalid").trim().to_string();
            let help = if last.contains("not supported") {
                // Python's `re` has these; Rust's `regex` (linear time) does not.
                "look-around and backreferences are not available: match the surrounding text itself, or use a keywords check"
            } else {
                ESCAPE_HELP
            };
            return Some(PatternProblem {
                message: format!("not a valid regular expression: {last}"),
                help,
            });
        }
    };
    if size_units(&hir) <= COMPILE_ABOVE_UNITS {
        return None;
    }
    match pattern_regex(pattern) {
        Ok(_) => None,
        Err(regex::Error::CompiledTooBig(limit)) => Some(PatternProblem {
            message: format!(
                "the regular expression is too large to compile: over regex's limit of {} MiB",
                limit / (1024 * 1024)
            ),
            help: "use an open repetition (`\\w+`, `.{20,}`) instead of a large count, or match a shorter piece of the output",
        }),
        Err(error) => Some(PatternProblem {
            message: format!("not a valid regular expression: {error}"),
            help: ESCAPE_HELP,
        }),
    }
}

const ESCAPE_HELP: &str = "escape special characters such as ( [ { with a backslash";

/// The parser configured as grading compiles patterns (case-insensitive, [`pattern_regex`]).
fn pattern_parser() -> regex_syntax::Parser {
    regex_syntax::ParserBuilder::new()
        .case_insensitive(true)
        .build()
}

/// Patterns of more size units than this are compiled at validation. Measured on regex 1.12:
/// a unit compiles to at most ~150 bytes of NFA (`.{1,5000}`; most patterns 15–30), and regex
/// refuses a pattern from ~4 MiB of forward NFA (`(\w{15}){15}`, 203,776 units), so a pattern
/// of at most 4,096 units (≤ 600 KiB) is far inside the limit and need not be compiled.
const COMPILE_ABOVE_UNITS: u64 = 4096;

/// An estimate of a pattern's compiled size: a unit for each literal byte and class range,
/// multiplied by repetition counts. Depth is bounded by the parser's nesting limit.
fn size_units(hir: &regex_syntax::hir::Hir) -> u64 {
    use regex_syntax::hir::{Class, HirKind};
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => 1,
        HirKind::Literal(literal) => literal.0.len() as u64,
        HirKind::Class(Class::Unicode(class)) => class.ranges().len() as u64,
        HirKind::Class(Class::Bytes(class)) => class.ranges().len() as u64,
        // `{n,m}` compiles m copies of its body, `{n,}` n copies and a loop.
        HirKind::Repetition(repetition) => {
            let copies = u64::from(repetition.max.unwrap_or(repetition.min).max(1)) + 1;
            size_units(&repetition.sub).saturating_mul(copies)
        }
        HirKind::Capture(capture) => size_units(&capture.sub),
        HirKind::Concat(items) | HirKind::Alternation(items) => {
            items.iter().map(size_units).fold(0, u64::saturating_add)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{COMPILE_ABOVE_UNITS, pattern_parser, pattern_problem, size_units};

    fn units(pattern: &str) -> u64 {
        size_units(&pattern_parser().parse(pattern).unwrap())
    }

    #[test]
    fn the_size_estimate_multiplies_repetitions_and_adds_sequences() {
        assert_eq!(units("(?-i)abc"), 3);
        assert_eq!(units("(?-i)a{5}"), 6);
        assert_eq!(units("(?-i)(ab){2,}|c"), 7);
        assert_eq!(units(r"\w{1000}"), units(r"\w") * 1001);
        assert!(units(r"\d{4}-\d{2}") <= COMPILE_ABOVE_UNITS);
    }

    #[test]
    fn patterns_over_the_size_limit_are_problems_however_they_get_there() {
        for pattern in [
            r"\w{1000}".to_string(),
            r"(\w{15}){15}".into(),
            r"\w".repeat(3000),
        ] {
            let problem = pattern_problem(&pattern).expect("too large");
            assert!(problem.message.contains("too large"), "{}", problem.message);
        }
        for pattern in [
            r"\w{50}",
            r"(pending|done)+",
            r"[a-z]{1000}",
            r"\d{4}-\d{2}",
        ] {
            assert!(pattern_problem(pattern).is_none(), "{pattern}");
        }
        let unbalanced = pattern_problem("(pending").expect("unclosed group");
        assert!(
            unbalanced
                .message
                .starts_with("not a valid regular expression")
        );
    }
}
