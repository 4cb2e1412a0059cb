//! What a task offers to perturb, found before any draw: the people, companies and e-mail
//! addresses under the fixture keys that name them, the ids under `id`/`*_id`, every ISO date;
//! what no value may change in (regexes, hashes' files, commands, workspace files: a value they
//! hold is left alone and reported); whether a check pins the amounts; and what the checks
//! look for, which no distractor may hold.

use std::collections::BTreeSet;

use serde_json::Value;

use super::text::dates;
use crate::task::check::workspace_relative;

/// Keys of a check (or safety check) that name things rather than hold values.
pub(super) const NAME_KEYS: &[&str] = &[
    "type",
    "service",
    "action",
    "field",
    "tool_name",
    "path",
    "hash",
    "cmd",
    "test_file",
    "pytest_args",
    "pattern",
    "in",
    "expected_exit",
    "count",
    "min_length",
];

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

impl Survey {
    /// Reads `document` (the task's task.yaml as JSON) and `workspace_files` (the text of its
    /// `files:`, by source path).
    pub(super) fn new(document: &Value, workspace_files: &[(String, String)]) -> Survey {
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
        let checks = checks_of(document);
        for (place, check) in &checks {
            for key in ["pattern", "hash", "cmd", "test_file", "pytest_args"] {
                if let Some(text) = check.get(key).and_then(Value::as_str) {
                    let what = if key == "pattern" {
                        "a regex"
                    } else {
                        "a hash or command"
                    };
                    survey
                        .protected
                        .push((format!("{what} ({place})"), text.to_owned()));
                }
            }
            if check.get("type").and_then(Value::as_str) == Some("file_hash_equals")
                && let Some(path) = check.get("path").and_then(Value::as_str)
            {
                for file in oracle_files(document) {
                    if workspace_relative(path)
                        .is_some_and(|path| Some(path) == workspace_relative(&file.0))
                    {
                        survey
                            .protected
                            .push((format!("a hashed file ({place})"), file.1.clone()));
                    }
                }
            }
            let mut values = Vec::new();
            strings_of_check(check, &mut values);
            survey
                .referenced
                .extend(values.iter().map(|value| value.to_lowercase()));
        }
        for (source, text) in workspace_files {
            survey
                .protected
                .push((format!("the workspace file `{source}`"), text.clone()));
        }
        survey.protect();
        survey.amounts_pinned = survey.pinned_numbers(document, &checks);
        survey.counts_pinned = survey.pinned_counts(document, &checks);
        survey.referenced.retain(|value| value.len() >= 2);
        survey
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
                } else if PERSON_KEYS.contains(&key.as_str()) && is_person(text) {
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

    /// Why no amount may be scaled: a check, safety check or oracle names a number (it may be
    /// a sum or a price the scaled fixtures would no longer give).
    fn pinned_numbers(&self, document: &Value, checks: &[(String, &Value)]) -> Option<String> {
        for (place, check) in checks {
            if let Some(number) = numbers_of_check(check) {
                return Some(format!("{place} names the number {number}"));
            }
        }
        self.pinned_texts(document, checks)
    }

    fn pinned_counts(&self, document: &Value, checks: &[(String, &Value)]) -> Option<String> {
        for (place, check) in checks {
            let kind = check.get("type").and_then(Value::as_str);
            if matches!(kind, Some("audit_count_gte" | "audit_count_equals")) {
                return Some(format!("{place} counts calls"));
            }
        }
        self.pinned_texts(document, checks)
    }

    /// A check's text, or the oracle, that names a number (ids and dates aside).
    fn pinned_texts(&self, document: &Value, checks: &[(String, &Value)]) -> Option<String> {
        let renamed: Vec<&String> = self.ids.iter().chain(&self.dates).collect();
        let has_number = |text: &str| {
            let mut rest = text.to_owned();
            for value in &renamed {
                rest = rest.replace(value.as_str(), "");
            }
            rest.chars().any(|c| c.is_ascii_digit())
        };
        for (place, check) in checks {
            let mut values = Vec::new();
            strings_of_check(check, &mut values);
            if let Some(value) = values.iter().find(|value| has_number(value)) {
                return Some(format!("{place} names `{value}`"));
            }
        }
        let oracle = document
            .get("oracle")
            .map(Value::to_string)
            .unwrap_or_default();
        if has_number(&oracle) {
            return Some("the oracle names a number".into());
        }
        None
    }
}

/// Every check of the document with where it is: scoring components, safety checks,
/// checkpoints.
fn checks_of(document: &Value) -> Vec<(String, &Value)> {
    let mut checks = Vec::new();
    for (section, inner) in [
        ("scoring_components", true),
        ("safety_checks", false),
        ("checkpoints", true),
    ] {
        let entries = document.get(section).and_then(Value::as_array);
        for (index, entry) in entries.into_iter().flatten().enumerate() {
            let check = if inner {
                entry.get("check")
            } else {
                Some(entry)
            };
            if let Some(check) = check {
                checks.push((format!("{section}[{index}]"), check));
            }
        }
    }
    checks
}

/// The texts a check looks for: its values, keywords, `field_match` values.
pub(super) fn strings_of_check(check: &Value, out: &mut Vec<String>) {
    if let Value::Object(map) = check {
        for (key, value) in map {
            if NAME_KEYS.contains(&key.as_str()) || key == "reason" || key == "rubric" {
                continue;
            }
            match value {
                Value::String(text) => out.push(text.clone()),
                Value::Array(items) => {
                    for item in items {
                        match item {
                            Value::String(text) if key != "actions" => out.push(text.clone()),
                            Value::Object(_) => strings_of_check(item, out),
                            _ => {}
                        }
                    }
                }
                Value::Object(_) => strings_of_check(value, out),
                _ => {}
            }
        }
    }
}

/// A number a check compares with (`value: 1200`, a `field_match` number).
fn numbers_of_check(check: &Value) -> Option<String> {
    let Value::Object(map) = check else {
        return None;
    };
    for (key, value) in map {
        if NAME_KEYS.contains(&key.as_str()) {
            continue;
        }
        match value {
            Value::Number(number) => return Some(number.to_string()),
            Value::Object(_) => {
                if let Some(found) = numbers_of_check(value) {
                    return Some(found);
                }
            }
            Value::Array(items) => {
                if let Some(found) = items.iter().find_map(numbers_of_check) {
                    return Some(found);
                }
            }
            _ => {}
        }
    }
    None
}

fn oracle_files(document: &Value) -> Vec<(String, String)> {
    let files = document
        .get("oracle")
        .and_then(|oracle| oracle.get("files"))
        .and_then(Value::as_array);
    files
        .into_iter()
        .flatten()
        .filter_map(|file| {
            Some((
                file.get("path")?.as_str()?.to_owned(),
                file.get("content")?.as_str()?.to_owned(),
            ))
        })
        .collect()
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
