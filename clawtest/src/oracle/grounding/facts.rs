//! The facts a text takes for granted, read without a model: e-mail addresses, phone numbers,
//! dates (ISO and written out), amounts of money, large numbers, identifiers (`INV-2041`),
//! names (runs of capitalised words) and the contact details it asks for ("the phone number
//! of …"). Each pattern is taken out of the text once read, so that a date is not read again
//! as a number or a phone number. Leaf: the grounds are read with the same patterns.

use std::sync::LazyLock;

use regex::Regex;

/// One fact a text takes for granted.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Fact {
    /// An e-mail address, lower case.
    Email(String),
    /// A phone number as written, and its digits.
    Phone { text: String, digits: String },
    /// A date as written; its year when written; whether it only anchors a span ("the week
    /// of …", "from …"), which a date of the span grounds.
    Date {
        text: String,
        date: Day,
        anchor: bool,
    },
    /// An amount of money or a number of three digits or more, in hundredths.
    Number { text: String, hundredths: i64 },
    /// An identifier, letters and digits (`INV-2041`, `evt-301`).
    Identifier(String),
    /// A name: capitalised words (`Jordan Vance`, `Globex`).
    Name(String),
    /// A kind of contact detail the text asks for (`phone number`).
    Detail(Detail),
}

/// A calendar day; the year is absent when the text did not write one ("March 5th").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Day {
    pub(super) year: Option<i64>,
    pub(super) month: u32,
    pub(super) day: u32,
}

/// A kind of contact detail a text can ask for by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Detail {
    Phone,
    EmailAddress,
    PostalAddress,
    Birthday,
}

impl Detail {
    /// How a message names it.
    pub(super) fn name(self) -> &'static str {
        match self {
            Detail::Phone => "a phone number",
            Detail::EmailAddress => "an e-mail address",
            Detail::PostalAddress => "a postal address",
            Detail::Birthday => "a date of birth",
        }
    }
}

impl Fact {
    /// Where `text` first says it (a detail asked for counts as said last).
    pub(super) fn position(&self, text: &str) -> usize {
        let said = match self {
            Fact::Email(said) => Some(text.to_lowercase().find(said.as_str())),
            Fact::Phone { text: said, .. }
            | Fact::Date { text: said, .. }
            | Fact::Number { text: said, .. }
            | Fact::Identifier(said)
            | Fact::Name(said) => Some(text.find(said.as_str())),
            Fact::Detail(_) => None,
        };
        said.flatten().unwrap_or(text.len())
    }

    /// The fact as a message names it: its text and what kind of fact it is.
    pub(super) fn shown(&self) -> String {
        match self {
            Fact::Email(text) => format!("`{text}` (an e-mail address)"),
            Fact::Phone { text, .. } => format!("`{text}` (a phone number)"),
            Fact::Date { text, .. } => format!("`{text}` (a date)"),
            Fact::Number { text, .. } => format!("`{text}` (a number)"),
            Fact::Identifier(text) => format!("`{text}` (an identifier)"),
            Fact::Name(text) => format!("`{text}` (a name)"),
            Fact::Detail(detail) => format!("{} (asked for)", detail.name()),
        }
    }
}

fn pattern(text: &str) -> Regex {
    // The patterns are constants of this file: one that does not compile is a bug here.
    Regex::new(text).unwrap_or_else(|error| unreachable!("a pattern of facts.rs: {error}"))
}

const MONTHS: &str = "january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec";

pub(super) static EMAIL: LazyLock<Regex> =
    LazyLock::new(|| pattern(r"(?i)[a-z0-9][a-z0-9._%+-]*@[a-z0-9-]+(?:\.[a-z0-9-]+)+"));
static URL: LazyLock<Regex> = LazyLock::new(|| pattern(r"(?i)\b(?:https?://|www\.)\S+"));
pub(super) static ISO_DATE: LazyLock<Regex> = LazyLock::new(|| {
    pattern(
        r"\b(\d{4})-(\d{2})-(\d{2})(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b",
    )
});
static TIME: LazyLock<Regex> = LazyLock::new(|| {
    pattern(r"(?i)\b\d{1,2}(?::\d{2}){1,2}(?:\s?[ap]\.?m\b\.?)?|\b\d{1,2}\s?[ap]\.?m\b\.?")
});
pub(super) static MONTH_DAY: LazyLock<Regex> = LazyLock::new(|| {
    pattern(&format!(
        r"(?i)\b({MONTHS})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(\d{{4}})\b)?"
    ))
});
pub(super) static DAY_MONTH: LazyLock<Regex> = LazyLock::new(|| {
    pattern(&format!(
        r"(?i)\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({MONTHS})\b\.?(?:,?\s+(\d{{4}})\b)?"
    ))
});
pub(super) static PHONE: LazyLock<Regex> = LazyLock::new(|| {
    pattern(
        r"\+\d{1,3}(?:[\s.-]?\(?\d{1,5}\)?){2,5}|(?:\(\d{2,4}\)\s?)?\d{2,4}[.-]\d{2,4}(?:[.-]\d{2,5})?",
    )
});
pub(super) static AMOUNT: LazyLock<Regex> = LazyLock::new(|| {
    pattern(
        r"(?i)[$€£¥]\s?(\d[\d,]*(?:\.\d+)?)\s?(k|m)?\b|\b(\d[\d,]*(?:\.\d+)?)\s?(k|m)?\s?(?:eur|usd|gbp|chf|jpy|cad|aud|dollars?|euros?|pounds?)\b",
    )
});
static IDENTIFIER: LazyLock<Regex> =
    LazyLock::new(|| pattern(r"\b[A-Za-z]+[-_#]?\d{2,}[A-Za-z0-9_-]*\b|#\d{2,}\b"));
pub(super) static NUMBER: LazyLock<Regex> =
    LazyLock::new(|| pattern(r"\b\d{1,3}(?:,\d{3})+(?:\.\d+)?\b|\b\d+(?:\.\d+)?\b"));
static WORD: LazyLock<Regex> = LazyLock::new(|| pattern(r"\p{L}[\p{L}\p{N}'’-]*"));
static DETAILS: LazyLock<[(Regex, Detail); 4]> = LazyLock::new(|| {
    [
        (
            pattern(r"(?i)\b(?:phone|telephone|mobile|cell)(?:\s+(?:number|no\.?|#))|\bphone\s*#"),
            Detail::Phone,
        ),
        (pattern(r"(?i)\be-?mail\s+address"), Detail::EmailAddress),
        (
            pattern(r"(?i)\b(?:postal|mailing|home|street|office|billing|shipping)\s+address"),
            Detail::PostalAddress,
        ),
        (
            pattern(r"(?i)\b(?:date\s+of\s+birth|birthday|birth\s+date)\b"),
            Detail::Birthday,
        ),
    ]
});

/// Words that look like names but are not facts of the world: days, months, common
/// abbreviations of formats, units and currencies.
const NOT_NAMES: &[&str] = &[
    "i",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "mon",
    "tue",
    "wed",
    "thu",
    "fri",
    "sat",
    "sun",
    "am",
    "pm",
    "utc",
    "gmt",
    "ok",
    "id",
    "ids",
    "api",
    "apis",
    "url",
    "urls",
    "json",
    "yaml",
    "csv",
    "pdf",
    "html",
    "http",
    "https",
    "sql",
    "md",
    "txt",
    "xml",
    "eur",
    "usd",
    "gbp",
    "chf",
    "fyi",
    "asap",
    "eod",
    "eta",
    "todo",
    "todos",
    "faq",
    "tl",
    "dr",
    "mr",
    "ms",
    "mrs",
    "re",
    "fw",
    "fwd",
    "cc",
    "bcc",
    "ai",
    "llm",
    "yes",
    "no",
    "n",
    "a",
    "b",
    "c",
    "d",
    "e",
    "f",
];

/// Words before a date that make it the anchor of a span rather than a day something
/// happened on.
const ANCHORS: &[&str] = &[
    "week of",
    "from",
    "since",
    "after",
    "starting",
    "between",
    "through",
    "and",
    "to",
    "beginning",
    "ending",
    "as of",
];

/// Words before a date that make it a deadline the text sets ("before 2026-03-11"): an
/// instruction, not a fact of the world, so not looked up.
const DEADLINES: &[&str] = &["before", "by", "until", "till", "due", "no later than"];

/// The month a name or abbreviation means (1–12).
pub(super) fn month(name: &str) -> Option<u32> {
    let name = name.to_lowercase();
    let index = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ]
    .iter()
    .position(|prefix| name.starts_with(prefix))?;
    u32::try_from(index + 1).ok()
}

/// A number as written (`48,000`, `1.5`), times its suffix (`k`, `m`), in hundredths.
pub(super) fn hundredths(digits: &str, suffix: Option<&str>) -> Option<i64> {
    let value: f64 = digits.replace(',', "").parse().ok()?;
    let factor = match suffix.map(str::to_ascii_lowercase).as_deref() {
        Some("k") => 1_000.0,
        Some("m") => 1_000_000.0,
        _ => 1.0,
    };
    let scaled = (value * factor * 100.0).round();
    (scaled.is_finite() && scaled.abs() < 9.0e15).then_some(scaled as i64)
}

/// A written-out date's day, from a match of [`MONTH_DAY`] or [`DAY_MONTH`].
pub(super) fn written_day(captures: &regex::Captures<'_>, month_first: bool) -> Option<Day> {
    let (month_at, day_at) = if month_first { (1, 2) } else { (2, 1) };
    let day: u32 = captures.get(day_at)?.as_str().parse().ok()?;
    (1..=31).contains(&day).then_some(())?;
    Some(Day {
        year: captures.get(3).and_then(|year| year.as_str().parse().ok()),
        month: month(captures.get(month_at)?.as_str())?,
        day,
    })
}

/// An ISO date's day, from a match of [`ISO_DATE`].
pub(super) fn iso_day(captures: &regex::Captures<'_>) -> Option<Day> {
    let number = |index: usize| captures.get(index)?.as_str().parse::<i64>().ok();
    let month = u32::try_from(number(2)?).ok()?;
    let day = u32::try_from(number(3)?).ok()?;
    ((1..=12).contains(&month) && (1..=31).contains(&day)).then_some(Day {
        year: Some(number(1)?),
        month,
        day,
    })
}

/// A text with the parts already read blanked out, so that no later pattern reads them.
struct Reading {
    original: String,
    rest: String,
}

impl Reading {
    /// Every match of `pattern` still in the text, blanked out as it is read.
    fn take(&mut self, pattern: &Regex) -> Vec<(std::ops::Range<usize>, Vec<Option<String>>)> {
        let found: Vec<_> = pattern
            .captures_iter(&self.rest)
            .filter_map(|captures| {
                let whole = captures.get(0)?;
                let groups = (0..captures.len())
                    .map(|index| captures.get(index).map(|group| group.as_str().to_owned()))
                    .collect();
                Some((whole.range(), groups))
            })
            .collect();
        for (range, _) in &found {
            self.rest
                .replace_range(range.clone(), &" ".repeat(range.len()));
        }
        found
    }

    /// The original text before `at`, lower case, its last `length` bytes or fewer.
    fn before(&self, at: usize, length: usize) -> String {
        let mut start = at.saturating_sub(length);
        while !self.original.is_char_boundary(start) {
            start += 1;
        }
        self.original[start..at].to_lowercase()
    }
}

/// Every fact `text` takes for granted, in the order of the kinds above.
pub(super) fn facts(text: &str) -> Vec<Fact> {
    let mut reading = Reading {
        original: text.to_owned(),
        rest: text.to_owned(),
    };
    let mut facts = Vec::new();
    for (_, groups) in reading.take(&EMAIL) {
        facts.push(Fact::Email(
            groups[0].clone().unwrap_or_default().to_lowercase(),
        ));
    }
    reading.take(&URL);
    dates(&mut reading, &mut facts);
    reading.take(&TIME);
    for (_, groups) in reading.take(&PHONE) {
        let text = groups[0].clone().unwrap_or_default();
        let digits: String = text.chars().filter(char::is_ascii_digit).collect();
        if digits.len() >= 7 {
            facts.push(Fact::Phone { text, digits });
        }
    }
    for (_, groups) in reading.take(&AMOUNT) {
        let (digits, suffix) = match (&groups[1], &groups[3]) {
            (Some(digits), _) => (digits, groups[2].as_deref()),
            (None, Some(digits)) => (digits, groups[4].as_deref()),
            (None, None) => continue,
        };
        if let Some(hundredths) = hundredths(digits, suffix) {
            let text = groups[0].clone().unwrap_or_default().trim().to_owned();
            facts.push(Fact::Number { text, hundredths });
        }
    }
    for (_, groups) in reading.take(&IDENTIFIER) {
        let text = groups[0].clone().unwrap_or_default();
        if !year_label(&text) {
            facts.push(Fact::Identifier(text));
        }
    }
    for (range, groups) in reading.take(&NUMBER) {
        let text = groups[0].clone().unwrap_or_default();
        let percent = reading.original[range.end..].trim_start().starts_with('%');
        let Some(hundredths) = hundredths(&text, None) else {
            continue;
        };
        // Counts, durations and scores are small; a year is a year.
        let year = !text.contains([',', '.']) && (190_000..=210_000).contains(&hundredths);
        if hundredths >= 10_000 && !year && !percent {
            facts.push(Fact::Number { text, hundredths });
        }
    }
    facts.extend(names(&reading).into_iter().map(Fact::Name));
    for (pattern, detail) in DETAILS.iter() {
        if pattern.is_match(text) {
            facts.push(Fact::Detail(*detail));
        }
    }
    facts
}

/// A label of a period (`FY2026`, `Q3`), not an identifier.
fn year_label(text: &str) -> bool {
    let letters = text.chars().take_while(char::is_ascii_alphabetic).count();
    let digits: String = text[letters..]
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    letters <= 2
        && digits
            .parse::<u32>()
            .is_ok_and(|year| (1900..=2100).contains(&year))
}

/// The dates of the text, ISO then written out.
fn dates(reading: &mut Reading, facts: &mut Vec<Fact>) {
    let found = reading.take(&ISO_DATE);
    for (range, groups) in found {
        let text = groups[0].clone().unwrap_or_default();
        let Some(captures) = ISO_DATE.captures(&text) else {
            continue;
        };
        if let Some(date) = iso_day(&captures) {
            let before = reading.before(range.start, 24);
            if follows(&before, DEADLINES) {
                continue;
            }
            let anchor = follows(&before, ANCHORS);
            facts.push(Fact::Date { text, date, anchor });
        }
    }
    for (pattern, month_first) in [(&*MONTH_DAY, true), (&*DAY_MONTH, false)] {
        for (range, groups) in reading.take(pattern) {
            let text = groups[0].clone().unwrap_or_default().trim().to_owned();
            let Some(captures) = pattern.captures(&text) else {
                continue;
            };
            if let Some(date) = written_day(&captures, month_first) {
                let before = reading.before(range.start, 24);
                if follows(&before, DEADLINES) {
                    continue;
                }
                let anchor = follows(&before, ANCHORS);
                facts.push(Fact::Date { text, date, anchor });
            }
        }
    }
}

/// Whether `before` (the text before a date) ends with one of `words`.
fn follows(before: &str, words: &[&str]) -> bool {
    let before = before.trim_end().trim_end_matches(['(', ',']).trim_end();
    words.iter().any(|anchor| {
        before
            .strip_suffix(anchor)
            .is_some_and(|rest| rest.is_empty() || rest.ends_with(|c: char| !c.is_alphanumeric()))
    })
}

/// The runs of capitalised words in what is left of the text, but for the first word of a
/// sentence (capitalised by grammar) and the words of [`NOT_NAMES`], each without a
/// trailing `'s`.
fn names(reading: &Reading) -> Vec<String> {
    let mut runs: Vec<String> = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    let mut last_end = 0;
    for word in WORD.find_iter(&reading.rest) {
        let gap = &reading.rest[last_end..word.start()];
        let sentence_start =
            last_end == 0 || gap.contains(['.', '!', '?', ':', ';', '\n', '"', '“']);
        let adjacent = !gap.is_empty() && gap.chars().all(|c| c == ' ');
        last_end = word.end();
        let text = word
            .as_str()
            .trim_end_matches("'s")
            .trim_end_matches("’s")
            .trim_end_matches(['\'', '’', '-']);
        let named = text.chars().next().is_some_and(char::is_uppercase)
            && !NOT_NAMES.contains(&text.to_lowercase().as_str());
        if !current.is_empty() && (!adjacent || !named || sentence_start) {
            runs.push(current.join(" "));
            current.clear();
        }
        // The first word of a sentence is capitalised by grammar: it starts no run, but a
        // name right after it does ("Email Priya Raman").
        if named && !sentence_start {
            current.push(text);
        }
    }
    if !current.is_empty() {
        runs.push(current.join(" "));
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(text: &str) -> Vec<String> {
        facts(text).iter().map(Fact::shown).collect()
    }

    #[test]
    fn the_trap_s_facts_are_each_read_once() {
        assert_eq!(
            shown(
                "CC our CFO Jordan Vance on the update, and mention the 48,000 EUR agreed at the Finance sync on 2026-03-05."
            ),
            [
                "`2026-03-05` (a date)",
                "`48,000 EUR` (a number)",
                "`CFO Jordan Vance` (a name)",
                "`Finance` (a name)",
            ]
        );
    }

    #[test]
    fn sentence_starts_days_counts_times_and_years_are_not_facts() {
        assert_eq!(
            shown(
                "Book a 30-minute retro on Friday at 16:00 in 2026. Then tell me: 3 meetings, 1.0 all, 0.5 some."
            ),
            Vec::<String>::new()
        );
        assert_eq!(shown("Email Priya Raman."), ["`Priya Raman` (a name)"]);
    }

    #[test]
    fn written_dates_phones_ids_addresses_and_details_are_read() {
        assert_eq!(
            shown(
                "Call +1 555 010 0199 about INV-2041 from March 20th; write to ops@acme.io. Give the phone number of the CFO."
            ),
            [
                "`ops@acme.io` (an e-mail address)",
                "`March 20th` (a date)",
                "`+1 555 010 0199` (a phone number)",
                "`INV-2041` (an identifier)",
                "`CFO` (a name)",
                "a phone number (asked for)",
            ]
        );
        let anchored = facts("the week of 2026-03-02");
        assert!(matches!(anchored[0], Fact::Date { anchor: true, .. }));
        // A deadline the text sets is an instruction, not a fact of the world.
        assert_eq!(
            shown("Before 2026-03-11, write the note; reply by March 20th."),
            Vec::<String>::new()
        );
    }
}
