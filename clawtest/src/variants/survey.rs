//! What a task offers to perturb, found before any draw: the people, companies and e-mail
//! addresses under the fixture keys that name them (the fixtures are the one untyped part of a
//! task: their keys are all there is to go by), the ids under `id`/`*_id`, every ISO date;
//! what no value may change in (regexes, hashes' files, commands, workspace files: a value they
//! hold is left alone and reported); whether a check pins the amounts; and what the checks
//! look for, which no distractor may hold. The checks are read through the typed task, by the
//! table of `fields.rs`.

use std::collections::BTreeSet;

use serde_json::Value;

use super::fields::{self, CheckRef, Role, Slot};
use super::text::{Written, dates, written_dates};
use crate::task::check::workspace_relative;
use crate::task::{Check, Task};

/// Fixture keys whose text is a person's name (two or more capitalised words).
pub(super) const PERSON_KEYS: &[&str] = &[
    "name",
    "full_name",
    "contact",
    "contact_name",
    "from_name",
    "to_name",
    "sender_name",
    "author",
    "assignee",
    "owner",
    "organizer",
    "organiser",
    "attendee",
    "manager",
    "customer_name",
    "employee",
    "recipient_name",
    "display_name",
    "reviewer",
    "requester",
    "reporter",
];

/// Fixture keys holding one given or family name.
const NAME_PART_KEYS: &[&str] = &["first_name", "last_name", "given_name", "family_name"];

/// Fixture keys whose text is a company.
const COMPANY_KEYS: &[&str] = &[
    "company",
    "company_name",
    "organization",
    "organisation",
    "org",
    "vendor",
    "client",
    "customer",
    "employer",
    "supplier",
    "merchant",
];

/// Fixture keys whose number is an amount of money or goods.
pub(super) const AMOUNT_KEYS: &[&str] = &[
    "amount",
    "price",
    "total",
    "cost",
    "balance",
    "budget",
    "salary",
    "subtotal",
    "fee",
    "unit_price",
    "revenue",
    "quantity",
];

/// What can be known of a task before any draw: the values found, and what must not change.
#[derive(Debug, Clone, Default)]
pub(super) struct Survey {
    pub(super) people: BTreeSet<String>,
    pub(super) name_parts: BTreeSet<(String, bool)>,
    pub(super) companies: BTreeSet<String>,
    pub(super) emails: BTreeSet<String>,
    pub(super) ids: BTreeSet<String>,
    pub(super) dates: BTreeSet<String>,
    /// Dates written out in words (`March 20th`), shifted with the ISO dates: only when the
    /// task has ISO dates, each with the year of the ISO date of its day, else of the first.
    pub(super) written: Vec<(Written, i64)>,
    /// Regexes, hashes' files, commands and workspace files: text no value may be changed in.
    pub(super) protected: Vec<(String, String)>,
    /// Why amounts are left alone for the whole task, if they are.
    pub(super) amounts_pinned: Option<String>,
    /// Why no distractor record may be added, if none may: a check counts calls, or a check
    /// or the oracle names a number, and one more matching record changes a count ("close
    /// every open task", "how many are unread").
    pub(super) counts_pinned: Option<String>,
    /// Every text of the document, lowercase: a drawn value must not already occur in it.
    pub(super) all_text: String,
    /// What a check, safety check or checkpoint looks for: no distractor may hold it.
    pub(super) referenced: Vec<String>,
    /// Values left alone and why, for the report.
    pub(super) left_alone: Vec<String>,
}

/// What one check holds, as the survey reads it.
struct CheckValues {
    /// Where it is (`scoring_components[2]`).
    place: String,
    /// What it looks for (its [`Role::Sought`] texts).
    sought: Vec<String>,
    /// The first number it compares with.
    number: Option<String>,
    /// Whether it counts calls.
    counts: bool,
}

impl Survey {
    /// Reads `task`, `document` (its task.yaml as JSON: the fixtures and every text) and
    /// `workspace_files` (the text of its `files:`, by source path).
    pub(super) fn new(
        task: &Task,
        document: &Value,
        workspace_files: &[(String, String)],
    ) -> Survey {
        let mut survey = Survey {
            all_text: document.to_string().to_lowercase(),
            ..Survey::default()
        };
        if let Some(fixtures) = document.get("fixtures") {
            survey.collect(fixtures, None);
        }
        // A date is a date wherever it is written (the prompt may name one no record holds).
        let whole = document.to_string();
        survey
            .dates
            .extend(dates(&whole).into_iter().map(str::to_owned));
        let checks = survey.read_checks(task);
        for (source, text) in workspace_files {
            survey
                .protected
                .push((format!("the workspace file `{source}`"), text.clone()));
        }
        let iso_dates = survey.dates.clone();
        survey.protect();
        survey.written_out(&whole, &iso_dates);
        let oracle = task
            .oracle
            .as_ref()
            .and_then(|oracle| serde_json::to_string(oracle).ok())
            .unwrap_or_default();
        survey.amounts_pinned = survey.pinned_numbers(&checks, &oracle);
        survey.counts_pinned = survey.pinned_counts(&checks, &oracle);
        survey.referenced.retain(|value| value.len() >= 2);
        survey
    }

    /// Every check's values by the table of `fields.rs`: regexes, hashes, commands and hashed
    /// files protected; what the checks look for referenced.
    fn read_checks(&mut self, task: &Task) -> Vec<CheckValues> {
        // The table hands out the places the rewrite changes: the survey reads a copy's.
        let mut typed = task.clone();
        let oracle_files: Vec<(String, String)> = task
            .oracle
            .iter()
            .flat_map(|oracle| &oracle.files)
            .map(|file| (file.path.clone(), file.content.clone()))
            .collect();
        let mut read = Vec::new();
        for (place, mut check) in fields::checks_mut(&mut typed) {
            let counts = matches!(
                check,
                CheckRef::Scoring(Check::AuditCountGte { .. } | Check::AuditCountEquals { .. })
            );
            let mut values = CheckValues {
                place,
                sought: Vec::new(),
                number: None,
                counts,
            };
            for (role, slot) in check.slots() {
                match (role, slot) {
                    (Role::Regex, Slot::Text(text)) => self
                        .protected
                        .push((format!("a regex ({})", values.place), text.clone())),
                    (Role::Command, Slot::Text(text)) => self.protected.push((
                        format!("a hash or command ({})", values.place),
                        text.clone(),
                    )),
                    (Role::Sought, Slot::Text(text)) => values.sought.push(text.clone()),
                    (Role::Sought, Slot::Texts(texts)) => {
                        values.sought.extend(texts.iter().cloned())
                    }
                    (Role::Sought, Slot::Data(value)) => {
                        fields::texts_of(value, &mut values.sought);
                        values.number = values.number.take().or_else(|| fields::number_of(value));
                    }
                    _ => {}
                }
            }
            if let CheckRef::Scoring(Check::FileHashEquals { path, .. }) = &check {
                for file in &oracle_files {
                    if workspace_relative(path)
                        .is_some_and(|path| Some(path) == workspace_relative(&file.0))
                    {
                        self.protected
                            .push((format!("a hashed file ({})", values.place), file.1.clone()));
                    }
                }
            }
            self.referenced
                .extend(values.sought.iter().map(|value| value.to_lowercase()));
            read.push(values);
        }
        read
    }

    fn collect(&mut self, value: &Value, key: Option<&str>) {
        match value {
            Value::String(text) => {
                for date in dates(text) {
                    self.dates.insert(date.to_owned());
                }
                let id_key = key.is_some_and(is_id_key);
                let key = key.unwrap_or_default().to_ascii_lowercase();
                if is_email(text) {
                    self.emails.insert(text.clone());
                } else if id_key && id_parts(text).is_some() {
                    self.ids.insert(text.clone());
                } else if PERSON_KEYS.contains(&key.as_str())
                    && is_person(text)
                    && !super::pools::is_role_name(text)
                {
                    self.people.insert(text.clone());
                } else if NAME_PART_KEYS.contains(&key.as_str()) && is_name_word(text) {
                    self.name_parts.insert((
                        text.clone(),
                        key.starts_with("first") || key.starts_with("given"),
                    ));
                } else if COMPANY_KEYS.contains(&key.as_str()) && is_company(text) {
                    self.companies.insert(text.clone());
                }
            }
            Value::Array(items) => {
                for item in items {
                    self.collect(item, key);
                }
            }
            Value::Object(map) => {
                for (key, item) in map {
                    self.collect(item, Some(key));
                }
            }
            _ => {}
        }
    }

    /// Drops every found value that a protected text holds, noting why.
    fn protect(&mut self) {
        let protected = std::mem::take(&mut self.protected);
        let mut left_alone = Vec::new();
        let mut guard = |value: &str| -> bool {
            let lower = value.to_lowercase();
            match protected
                .iter()
                .find(|(_, text)| text.to_lowercase().contains(&lower))
            {
                Some((place, _)) => {
                    left_alone.push(format!("`{value}` (in {place})"));
                    false
                }
                None => true,
            }
        };
        self.people
            .retain(|person| person.split(' ').all(&mut guard));
        self.name_parts.retain(|(word, _)| guard(word));
        self.companies.retain(|company| guard(company));
        self.emails.retain(|email| guard(email));
        self.ids.retain(|id| guard(id));
        self.dates.retain(|date| guard(date));
        left_alone.sort();
        left_alone.dedup();
        self.left_alone = left_alone;
        self.protected = protected;
    }

    /// The dates written out in words in `whole` (the document's text), each with the year it
    /// is in. They move with the ISO dates (`iso_dates`, before any was left alone), or not at
    /// all: when one is in a protected text, or its ISO date is, every date is left alone.
    fn written_out(&mut self, whole: &str, iso_dates: &BTreeSet<String>) {
        let mut written = written_dates(whole);
        written.sort_by(|a, b| a.text.cmp(&b.text));
        written.dedup_by(|a, b| a.text == b.text);
        let Some(first) = iso_dates.first() else {
            return;
        };
        let same_day = |written: &Written| {
            iso_dates.iter().find(|date| {
                date[5..7].parse() == Ok(written.month) && date[8..10].parse() == Ok(written.day)
            })
        };
        for date in &written {
            let partner = same_day(date);
            let pinned = self
                .protected
                .iter()
                .find(|(_, text)| text.contains(&date.text))
                .map(|(place, _)| place.clone())
                .or_else(|| {
                    partner
                        .filter(|iso| !self.dates.contains(*iso))
                        .map(|iso| format!("the place of `{iso}`, which is left alone"))
                });
            if let Some(place) = pinned {
                self.left_alone.push(format!(
                    "every date (`{}` is written out in {place}, and would no longer agree with the others)",
                    date.text
                ));
                self.dates.clear();
                return;
            }
        }
        self.written = written
            .into_iter()
            .map(|date| {
                let year = date
                    .year
                    .or_else(|| same_day(&date).and_then(|iso| iso[..4].parse().ok()))
                    .or_else(|| first[..4].parse().ok())
                    .unwrap_or(2000);
                (date, year)
            })
            .collect();
    }

    /// Why no amount may be scaled: a check, safety check or oracle names a number (it may be
    /// a sum or a price the scaled fixtures would no longer give).
    fn pinned_numbers(&self, checks: &[CheckValues], oracle: &str) -> Option<String> {
        for check in checks {
            if let Some(number) = &check.number {
                return Some(format!("{} names the number {number}", check.place));
            }
        }
        self.pinned_texts(checks, oracle)
    }

    fn pinned_counts(&self, checks: &[CheckValues], oracle: &str) -> Option<String> {
        if let Some(check) = checks.iter().find(|check| check.counts) {
            return Some(format!("{} counts calls", check.place));
        }
        self.pinned_texts(checks, oracle)
    }

    /// A check's text, or the oracle, that names a number (ids and dates aside).
    fn pinned_texts(&self, checks: &[CheckValues], oracle: &str) -> Option<String> {
        let renamed: Vec<&String> = self.ids.iter().chain(&self.dates).collect();
        let has_number = |text: &str| {
            let mut rest = text.to_owned();
            for value in &renamed {
                rest = rest.replace(value.as_str(), "");
            }
            rest.chars().any(|c| c.is_ascii_digit())
        };
        for check in checks {
            if let Some(value) = check.sought.iter().find(|value| has_number(value)) {
                return Some(format!("{} names `{value}`", check.place));
            }
        }
        if has_number(oracle) {
            return Some("the oracle names a number".into());
        }
        None
    }
}

pub(super) fn is_email(text: &str) -> bool {
    let Some((local, domain)) = text.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && local
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+'))
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && domain
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'))
}

/// `msg_101` → (`msg_`, `101`): letters (and `_`/`-`) then digits.
pub(super) fn id_parts(text: &str) -> Option<(&str, &str)> {
    let split = text.find(|c: char| c.is_ascii_digit())?;
    let (prefix, digits) = text.split_at(split);
    let shaped = prefix.starts_with(|c: char| c.is_ascii_alphabetic())
        && prefix
            .chars()
            .all(|c| c.is_ascii_alphabetic() || matches!(c, '_' | '-'))
        && !digits.is_empty()
        && digits.len() <= 9
        && digits.chars().all(|c| c.is_ascii_digit());
    shaped.then_some((prefix, digits))
}

/// `id`, `*_id`, `*Id`: keys that hold an id.
pub(super) fn is_id_key(key: &str) -> bool {
    key.eq_ignore_ascii_case("id") || key.ends_with("_id") || key.ends_with("Id")
}

fn is_name_word(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c.is_ascii_uppercase())
        && word.len() >= 2
        && chars.all(|c| c.is_ascii_lowercase() || c == '\'')
}

pub(super) fn is_person(text: &str) -> bool {
    let words: Vec<&str> = text.split(' ').collect();
    (2..=3).contains(&words.len()) && words.iter().all(|word| is_name_word(word))
}

fn is_company(text: &str) -> bool {
    text.starts_with(|c: char| c.is_ascii_uppercase())
        && text.len() <= 40
        && text.split(' ').count() <= 4
        && !is_email(text)
}
