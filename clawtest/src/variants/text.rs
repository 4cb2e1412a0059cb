//! The small machinery under the perturbations: a seeded random source (the same seed draws
//! the same numbers on every platform), simultaneous whole-token replacement (`t-1` never
//! rewrites `t-10`, and a value renamed is never renamed again), and calendar dates shifted by
//! days (with the services' civil-calendar arithmetic).

use crate::services::time::{civil_from_days, days_from_civil, days_in_month};

/// SplitMix64: tiny, fast, and fixed forever, so a seed means the same variant in every release.
#[derive(Debug, Clone)]
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..bound` (`bound` > 0).
    pub(super) fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound as u64) as usize
    }

    /// Shuffles `items` in place (Fisher–Yates).
    pub(super) fn shuffle<T>(&mut self, items: &mut [T]) {
        for index in (1..items.len()).rev() {
            items.swap(index, self.below(index + 1));
        }
    }
}

/// A stable 64-bit hash of text (FNV-1a), to mix a task's id into its seed.
pub(super) fn hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// What may not touch a match on either side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Boundary {
    /// A letter, digit or `_` (names, ids, e-mail addresses).
    Word,
    /// A digit (dates: `2026-03-11T09:00` is still that date).
    Digit,
}

impl Boundary {
    fn joins(self, c: char) -> bool {
        match self {
            Boundary::Word => c.is_alphanumeric() || c == '_',
            Boundary::Digit => c.is_ascii_digit(),
        }
    }
}

/// Old text → new text, applied all at once.
#[derive(Debug, Clone, Default)]
pub(super) struct Replacements {
    /// Longest first, so `Maria Lopez` wins over `Maria`.
    entries: Vec<(String, String, Boundary)>,
}

impl Replacements {
    pub(super) fn insert(&mut self, old: &str, new: &str, boundary: Boundary) {
        if old.is_empty() || old == new || self.entries.iter().any(|(known, ..)| known == old) {
            return;
        }
        self.entries
            .push((old.to_owned(), new.to_owned(), boundary));
        self.entries
            .sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
    }

    pub(super) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `text` with every old value that stands as a whole token replaced.
    pub(super) fn apply(&self, text: &str) -> String {
        if self.entries.is_empty() {
            return text.to_owned();
        }
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        let mut previous: Option<char> = None;
        'scan: while at < text.len() {
            let rest = &text[at..];
            for (old, new, boundary) in &self.entries {
                if rest.starts_with(old.as_str())
                    && !previous.is_some_and(|c| boundary.joins(c))
                    && !rest[old.len()..]
                        .chars()
                        .next()
                        .is_some_and(|c| boundary.joins(c))
                {
                    out.push_str(new);
                    at += old.len();
                    previous = old.chars().last();
                    continue 'scan;
                }
            }
            let c = rest.chars().next().unwrap_or_default();
            out.push(c);
            at += c.len_utf8().max(1);
            previous = Some(c);
        }
        out
    }
}

/// Whether `needle` occurs in `haystack` as a whole token.
pub(super) fn occurs(haystack: &str, needle: &str, boundary: Boundary) -> bool {
    haystack.match_indices(needle).any(|(at, _)| {
        !haystack[..at]
            .chars()
            .next_back()
            .is_some_and(|c| boundary.joins(c))
            && !haystack[at + needle.len()..]
                .chars()
                .next()
                .is_some_and(|c| boundary.joins(c))
    })
}

/// Every `YYYY-MM-DD` in `text` that is a real calendar date, not inside a longer number.
pub(super) fn dates(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while at + 10 <= bytes.len() {
        let window = &bytes[at..at + 10];
        let shaped = window.iter().enumerate().all(|(index, byte)| match index {
            4 | 7 => *byte == b'-',
            _ => byte.is_ascii_digit(),
        });
        let free = (at == 0 || !bytes[at - 1].is_ascii_digit())
            && bytes.get(at + 10).is_none_or(|byte| !byte.is_ascii_digit());
        if shaped && free && parse_date(&text[at..at + 10]).is_some() {
            found.push(&text[at..at + 10]);
            at += 10;
        } else {
            at += 1;
        }
    }
    found
}

fn parse_date(text: &str) -> Option<(i64, i64, i64)> {
    let year: i64 = text.get(0..4)?.parse().ok()?;
    let month: i64 = text.get(5..7)?.parse().ok()?;
    let day: i64 = text.get(8..10)?.parse().ok()?;
    ((1..=12).contains(&month) && (1..=days_in_month(year, month)).contains(&day))
        .then_some((year, month, day))
}

/// `date` (`YYYY-MM-DD`) moved by `days`; `None` when it is not a date or leaves years 0–9999.
pub(super) fn shift_date(date: &str, days: i64) -> Option<String> {
    let (year, month, day) = parse_date(date)?;
    let (year, month, day) = civil_from_days(days_from_civil(year, month, day) + days);
    (0..=9999)
        .contains(&year)
        .then(|| format!("{year:04}-{month:02}-{day:02}"))
}

/// The weekday of `date`, 0 = Thursday (1970-01-01); for tests that the weekday is kept.
#[cfg(test)]
pub(super) fn weekday(date: &str) -> Option<i64> {
    let (year, month, day) = parse_date(date)?;
    Some(days_from_civil(year, month, day).rem_euclid(7))
}

/// The months, as written out in full; the first three letters (and `Sept`) abbreviate them.
pub(super) const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// A date written out in words (`March 20th`, `20 March 2026`, `Mar 20, 2026`, `20th of
/// March`), with how it is written, so that it can be written again moved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Written {
    /// The text as it stands.
    pub(super) text: String,
    pub(super) month: i64,
    pub(super) day: i64,
    /// The year, when one is written next to it.
    pub(super) year: Option<i64>,
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    /// The month's name: abbreviated, in capitals.
    Month {
        short: bool,
        capitals: bool,
    },
    /// The day's number, with its ordinal suffix (`th`) when it has one, in capitals or not.
    Day {
        suffix: Option<bool>,
    },
    Year,
}

impl Written {
    /// The same date moved by `days` (its year, else `year`), written the same way; `None`
    /// when it is not a real date.
    pub(super) fn shifted(&self, year: i64, days: i64) -> Option<String> {
        let year = self.year.unwrap_or(year);
        let (month, day) = (self.month, self.day);
        if !(1..=days_in_month(year, month)).contains(&day) {
            return None;
        }
        let (year, month, day) = civil_from_days(days_from_civil(year, month, day) + days);
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Month { short, capitals } => {
                    let name = MONTHS[month as usize - 1];
                    let name = if *short { &name[..3] } else { name };
                    match capitals {
                        true => out.push_str(&name.to_uppercase()),
                        false => out.push_str(name),
                    }
                }
                Part::Day { suffix } => {
                    out.push_str(&day.to_string());
                    if let Some(capitals) = suffix {
                        let ordinal = ordinal(day);
                        match capitals {
                            true => out.push_str(&ordinal.to_uppercase()),
                            false => out.push_str(ordinal),
                        }
                    }
                }
                Part::Year => {
                    let year = format!("{year:04}");
                    out.push_str(&year);
                }
            }
        }
        (0..=9999).contains(&year).then_some(out)
    }
}

fn ordinal(day: i64) -> &'static str {
    match (day % 10, day % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    }
}

/// The month a word names (`March`, `Mar`, `Sept`, `MARCH`): (number, abbreviated, capitals).
fn month_of(word: &str) -> Option<(i64, bool, bool)> {
    let capitals = word.len() > 1 && word.chars().all(|c| c.is_ascii_uppercase());
    let mut chars = word.chars();
    let titled = chars.next().is_some_and(|c| c.is_ascii_uppercase())
        && chars.all(|c| c.is_ascii_lowercase());
    if !capitals && !titled {
        return None;
    }
    let lower = word.to_ascii_lowercase();
    MONTHS.iter().enumerate().find_map(|(index, name)| {
        let name = name.to_ascii_lowercase();
        let short = lower.len() >= 3
            && lower.len() < name.len()
            && (name.starts_with(&lower))
            && (lower.len() == 3 || lower == "sept");
        (lower == name || short).then_some((index as i64 + 1, short, capitals))
    })
}

/// A day written before or after a month: 1–2 digits and an optional ordinal suffix; its
/// length in bytes, the number, whether it has a suffix (in capitals or not).
fn day_at(text: &str) -> Option<(usize, i64, Option<bool>)> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if !(1..=2).contains(&digits) {
        return None;
    }
    let day: i64 = text[..digits].parse().ok()?;
    let rest = &text[digits..];
    let suffix = ["st", "nd", "rd", "th"]
        .iter()
        .find(|suffix| rest.len() >= 2 && rest[..2].eq_ignore_ascii_case(suffix));
    let length = digits + suffix.map_or(0, |_| 2);
    let joined = text[length..]
        .chars()
        .next()
        .is_some_and(|c| c.is_alphanumeric());
    let capitals = suffix.map(|_| rest[..2].chars().all(|c| c.is_ascii_uppercase()));
    ((1..=31).contains(&day) && !joined).then_some((length, day, capitals))
}

/// A year after a date: `, 2026` or ` 2026`; its length in bytes (separator included), the
/// separator and the year.
fn year_at(text: &str) -> Option<(usize, &str, i64)> {
    let separator = if text.starts_with(", ") {
        2
    } else if text.starts_with(' ') {
        1
    } else {
        return None;
    };
    let digits = &text[separator..];
    let length = digits.bytes().take_while(u8::is_ascii_digit).count();
    let joined = digits[length..]
        .chars()
        .next()
        .is_some_and(char::is_alphanumeric);
    if length != 4 || joined {
        return None;
    }
    Some((separator + 4, &text[..separator], digits[..4].parse().ok()?))
}

/// Every date written out in words in `text`.
pub(super) fn written_dates(text: &str) -> Vec<Written> {
    let mut found = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let rest = &text[at..];
        let length = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        let starts_word = !text[..at]
            .chars()
            .next_back()
            .is_some_and(char::is_alphanumeric);
        if length == 0 || !starts_word {
            at += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        }
        if let Some(written) =
            month_of(&rest[..length]).and_then(|month| around(text, at, length, month))
        {
            at = written.1;
            found.push(written.0);
        } else {
            at += length;
        }
    }
    found
}

/// The date around the month word at `at` (`length` bytes), if a day stands after or before it:
/// the date and where its text ends.
fn around(
    text: &str,
    at: usize,
    length: usize,
    month: (i64, bool, bool),
) -> Option<(Written, usize)> {
    let (number, short, capitals) = month;
    let month_part = Part::Month { short, capitals };
    let after = &text[at + length..];
    let (start, mut end, mut parts, day) =
        if let Some((day_length, day, suffix)) = after.strip_prefix(' ').and_then(day_at) {
            // `March 20th`
            let parts = vec![month_part, Part::Text(" ".into()), Part::Day { suffix }];
            (at, at + length + 1 + day_length, parts, day)
        } else {
            // `20th March`, `20th of March`
            let before = text[..at].strip_suffix(' ')?;
            let (before, of) = match before.strip_suffix(" of") {
                Some(before) => (before, " of "),
                None => (before, " "),
            };
            let day_start = before
                .char_indices()
                .rev()
                .take_while(|(_, c)| c.is_ascii_alphanumeric())
                .last()
                .map(|(index, _)| index)?;
            if text[..day_start]
                .chars()
                .next_back()
                .is_some_and(char::is_alphanumeric)
            {
                return None;
            }
            let (day_length, day, suffix) = day_at(&text[day_start..])?;
            if day_start + day_length != before.len() {
                return None;
            }
            let parts = vec![Part::Day { suffix }, Part::Text(of.into()), month_part];
            (day_start, at + length, parts, day)
        };
    let year = year_at(&text[end..]).map(|(year_length, separator, year)| {
        parts.push(Part::Text(separator.into()));
        parts.push(Part::Year);
        end += year_length;
        year
    });
    let written = Written {
        text: text[start..end].to_owned(),
        month: number,
        day,
        year,
        parts,
    };
    Some((written, end))
}
