//! A text that a `pattern_match` regex matches, for a derived answer: the shortest the
//! pattern's structure gives (each repetition its minimum, each alternation its first
//! branch, each class a readable member), and where the pattern is anchored.

use regex_syntax::hir::{Class, Hir, HirKind, Look};

/// Where a sample must stand in the answer for its pattern to match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Anchor {
    /// Anywhere (among words: a `\b` at either end holds beside spaces).
    Free,
    /// At the start of the answer (`^…`).
    Start,
    /// At the end (`…$`).
    End,
    /// The whole answer (`^…$`).
    Whole,
}

/// A text `pattern` matches (case-insensitively, as the grader matches), and where it must
/// stand; None when the pattern does not parse or can match nothing.
pub(super) fn sample(pattern: &str) -> Option<(String, Anchor)> {
    let hir = regex_syntax::ParserBuilder::new()
        .case_insensitive(true)
        .build()
        .parse(pattern)
        .ok()?;
    // The sample is the first branch's, and so is where it must stand: in `^yes|confirmed`
    // only the branch written is anchored.
    let mut chosen = &hir;
    loop {
        match chosen.kind() {
            HirKind::Alternation(branches) => chosen = branches.first()?,
            HirKind::Capture(capture) => chosen = &capture.sub,
            _ => break,
        }
    }
    let mut text = String::new();
    write(chosen, &mut text)?;
    let properties = chosen.properties();
    let starts = [Look::Start, Look::StartLF, Look::StartCRLF]
        .iter()
        .any(|look| properties.look_set_prefix().contains(*look));
    let ends = [Look::End, Look::EndLF, Look::EndCRLF]
        .iter()
        .any(|look| properties.look_set_suffix().contains(*look));
    let anchor = match (starts, ends) {
        (true, true) => Anchor::Whole,
        (true, false) => Anchor::Start,
        (false, true) => Anchor::End,
        (false, false) => Anchor::Free,
    };
    Some((text, anchor))
}

fn write(hir: &Hir, text: &mut String) -> Option<()> {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => {}
        HirKind::Literal(literal) => text.push_str(&String::from_utf8_lossy(&literal.0)),
        HirKind::Class(Class::Unicode(class)) => {
            let ranges = class.ranges();
            // A readable member: a letter or digit when the class has one.
            let pick = ['a', 'A', '0', ' ']
                .into_iter()
                .find(|c| {
                    ranges
                        .iter()
                        .any(|range| (range.start()..=range.end()).contains(c))
                })
                .or_else(|| ranges.first().map(|range| range.start()))?;
            text.push(pick);
        }
        HirKind::Class(Class::Bytes(class)) => {
            let byte = class.ranges().first()?.start();
            text.push(char::from(byte));
        }
        HirKind::Repetition(repetition) => {
            for _ in 0..repetition.min {
                write(&repetition.sub, text)?;
            }
        }
        HirKind::Capture(capture) => write(&capture.sub, text)?,
        HirKind::Concat(parts) => {
            for part in parts {
                write(part, text)?;
            }
        }
        HirKind::Alternation(branches) => write(branches.first()?, text)?,
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::{Anchor, sample};

    #[test]
    fn each_sample_matches_its_pattern_where_it_stands() {
        for pattern in [
            r"INV-\d{4}",
            r"(?i)total:\s*\$?[0-9]+(\.[0-9]{2})?",
            r"^Dear \w+",
            r"regards$",
            r"^(yes|no)$",
            r"\bapproved\b",
            r"[A-Z]{3}-[0-9]+",
            r"colou?r",
            r"^yes|confirmed",
            r"(done$|finished)",
        ] {
            let (text, anchor) = sample(pattern).unwrap();
            let answer = match anchor {
                Anchor::Free => format!("Done. {text} ok."),
                Anchor::Start => format!("{text} and more."),
                Anchor::End => format!("Some words {text}"),
                Anchor::Whole => text.clone(),
            };
            let regex = regex::RegexBuilder::new(pattern)
                .case_insensitive(true)
                .build()
                .unwrap();
            assert!(regex.is_match(&answer), "/{pattern}/ against {answer:?}");
        }
        assert_eq!(sample(r"^(yes|no)$").unwrap().1, Anchor::Whole);
        assert!(sample("(unclosed").is_none());
    }
}
