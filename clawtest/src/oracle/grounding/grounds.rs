//! The grounds: what an agent can see, read once into what a fact is looked up in: the words
//! (lower case, every run of other characters one space, so `in_progress` is "in progress"),
//! the e-mail addresses, the digits of phone numbers, the days, the numbers (and the sums an
//! agent could compute from them: any two, or one field over every record), and the field
//! names of the records.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::facts::{
    AMOUNT, DAY_MONTH, Day, Detail, EMAIL, Fact, ISO_DATE, MONTH_DAY, NUMBER, PHONE, hundredths,
    iso_day, written_day,
};

/// At most this many numbers are summed in pairs (their sums are what an agent computes).
const PAIRED: usize = 400;

/// What an agent can see, read for looking facts up.
#[derive(Debug, Default, Clone)]
pub(super) struct Grounds {
    /// The words, each between single spaces (the text starts and ends with one).
    words: String,
    emails: BTreeSet<String>,
    phones: BTreeSet<String>,
    days: BTreeSet<Day>,
    numbers: BTreeSet<i64>,
    /// Each field's numbers, for its total over the records.
    columns: BTreeMap<String, i64>,
    keys: BTreeSet<String>,
}

/// `text` as the words of [`Grounds`]: lower case, runs of other characters one space.
pub(super) fn words(text: &str) -> String {
    let mut words = String::from(" ");
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
    {
        words.push_str(&word.to_lowercase());
        words.push(' ');
    }
    words
}

impl Grounds {
    /// Adds a text.
    pub(super) fn text(&mut self, text: &str) {
        self.words.push_str(&words(text));
        for found in EMAIL.find_iter(text) {
            self.emails.insert(found.as_str().to_lowercase());
        }
        for captures in ISO_DATE.captures_iter(text) {
            self.days.extend(iso_day(&captures));
        }
        for (pattern, month_first) in [(&*MONTH_DAY, true), (&*DAY_MONTH, false)] {
            for captures in pattern.captures_iter(text) {
                self.days.extend(written_day(&captures, month_first));
            }
        }
        // A date's digits are not a phone number's.
        let undated = ISO_DATE.replace_all(text, " ");
        for found in PHONE.find_iter(&undated) {
            let digits: String = found
                .as_str()
                .chars()
                .filter(char::is_ascii_digit)
                .collect();
            if digits.len() >= 7 {
                self.phones.insert(digits);
            }
        }
        for captures in AMOUNT.captures_iter(text) {
            let (digits, suffix) = match (captures.get(1), captures.get(3)) {
                (Some(digits), _) => (digits, captures.get(2)),
                (None, Some(digits)) => (digits, captures.get(4)),
                (None, None) => continue,
            };
            self.numbers.extend(hundredths(
                digits.as_str(),
                suffix.map(|suffix| suffix.as_str()),
            ));
        }
        for found in NUMBER.find_iter(text) {
            self.numbers.extend(hundredths(found.as_str(), None));
        }
    }

    /// Adds a JSON value: its keys and strings as text, its numbers.
    pub(super) fn value(&mut self, value: &Value) {
        self.value_under(None, value);
    }

    fn value_under(&mut self, key: Option<&str>, value: &Value) {
        match value {
            Value::String(text) => self.text(text),
            Value::Number(number) => {
                let hundredths = number
                    .as_f64()
                    .and_then(|number| hundredths(&number.to_string(), None));
                if let Some(hundredths) = hundredths {
                    self.numbers.insert(hundredths);
                    if let Some(key) = key {
                        let total = self.columns.entry(key.to_owned()).or_default();
                        *total = total.saturating_add(hundredths);
                    }
                }
                self.words.push_str(&words(&number.to_string()));
            }
            Value::Array(items) => {
                for item in items {
                    self.value_under(key, item);
                }
            }
            Value::Object(map) => {
                for (key, item) in map {
                    self.keys.insert(key.to_lowercase());
                    self.text(key);
                    self.value_under(Some(key), item);
                }
            }
            Value::Bool(_) | Value::Null => {}
        }
    }

    /// Whether the words of `text` stand together in the grounds.
    pub(super) fn has_phrase(&self, text: &str) -> bool {
        let phrase = words(text);
        phrase.trim().is_empty() || self.words.contains(&phrase)
    }

    /// Whether every word of `text` is somewhere in the grounds.
    pub(super) fn has_each_word(&self, text: &str) -> bool {
        words(text)
            .split_whitespace()
            .all(|word| self.words.contains(&format!(" {word} ")))
    }

    /// Whether `fact` is found here.
    pub(super) fn holds(&self, fact: &Fact) -> bool {
        match fact {
            Fact::Email(email) => self.emails.contains(email),
            Fact::Phone { digits, .. } => self.phones.iter().any(|known| {
                // The same number with or without its country code.
                known.ends_with(digits.as_str()) || digits.ends_with(known.as_str())
            }),
            Fact::Date { date, anchor, .. } => self.has_day(*date, *anchor),
            Fact::Number { hundredths, .. } => self.has_number(*hundredths),
            Fact::Identifier(text) => self.has_phrase(text),
            Fact::Name(text) => self.has_phrase(text) || self.has_each_word(text),
            Fact::Detail(detail) => self.has_detail(*detail),
        }
    }

    /// The day itself; for an anchor, any day within a week of it.
    fn has_day(&self, wanted: Day, anchor: bool) -> bool {
        self.days.iter().any(|known| {
            let year = match (wanted.year, known.year) {
                (Some(wanted), Some(known)) => wanted == known,
                _ => true,
            };
            if !anchor {
                return year && known.month == wanted.month && known.day == wanted.day;
            }
            let ordinal = |day: &Day, year: i64| day_number(year, day.month, day.day);
            let year_of = wanted.year.or(known.year).unwrap_or(2000);
            (ordinal(known, known.year.unwrap_or(year_of)) - ordinal(&wanted, year_of)).abs() <= 7
        })
    }

    /// The number, or a sum an agent computes: of two numbers, or of one field over every
    /// record.
    fn has_number(&self, wanted: i64) -> bool {
        if self.numbers.contains(&wanted) || self.columns.values().any(|total| *total == wanted) {
            return true;
        }
        let numbers: Vec<i64> = self.numbers.iter().copied().take(PAIRED).collect();
        numbers.iter().enumerate().any(|(index, first)| {
            numbers[index + 1..]
                .iter()
                .any(|second| first.saturating_add(*second) == wanted)
        })
    }

    /// A value of that kind, or a record field named for it.
    fn has_detail(&self, detail: Detail) -> bool {
        let keyed = |names: &[&str]| {
            self.keys
                .iter()
                .any(|key| names.iter().any(|name| key.contains(name)))
        };
        match detail {
            Detail::Phone => !self.phones.is_empty() || keyed(&["phone", "mobile", "tel"]),
            Detail::EmailAddress => !self.emails.is_empty() || keyed(&["email", "mail"]),
            Detail::PostalAddress => self.keys.iter().any(|key| {
                key.contains("street") || key.contains("address") && !key.contains("mail")
            }),
            Detail::Birthday => keyed(&["birth", "dob"]),
        }
    }
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's `days_from_civil`).
fn day_number(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month = i64::from(month);
    let day_of_year =
        (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_are_counted_across_months() {
        assert_eq!(day_number(1970, 1, 1), 0);
        assert_eq!(day_number(2026, 3, 2) - day_number(2026, 2, 27), 3);
    }

    #[test]
    fn a_total_of_a_field_and_a_sum_of_two_are_grounded() {
        let mut grounds = Grounds::default();
        grounds.value(&serde_json::json!([
            {"amount": 1200, "note": "paid 300 EUR"},
            {"amount": 3000}
        ]));
        assert!(grounds.has_number(420_000));
        assert!(grounds.has_number(150_000));
        assert!(!grounds.has_number(4_800_000));
    }
}
