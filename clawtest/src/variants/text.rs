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
