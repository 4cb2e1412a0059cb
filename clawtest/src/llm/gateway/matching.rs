//! How a replayed request is matched against its recording (the rules are documented for
//! users in `docs/cassettes.md`): both bodies are first *normalised* — the fields the
//! configuration ignores are removed and every string goes through the redactions
//! (volatile text such as timestamps, dates and uuids by default, plus `[llm.replay]
//! redactions`) — and then compared: a recorded map names the keys that must match, a
//! recorded list matches the same number of trailing items, numbers compare numerically,
//! strings exactly. The per-trial values clawtest itself creates were already replaced by
//! their placeholders (`placeholders.rs`) on both sides, so they match whatever their value.
//!
//! A difference is described by the first place it occurs, with the text around it on both
//! sides, so that a long system prompt differing in one word shows that word.

use std::borrow::Cow;

use regex::Regex;
use serde_json::Value;

use super::placeholders::map_strings;
use crate::config::ReplayConfig;

/// The redactions every replay applies unless `[llm.replay] defaults = false`, in order:
/// timestamps (with an optional weekday after them, as harnesses write "Current Time:
/// 2026-12-01 15:21 (Tuesday)"), ISO dates, written-out dates ("Tuesday, December 1,
/// 2026"), times of day ("15:21:07", "3:21 PM"), and uuids.
const DEFAULT_REDACTIONS: &[(&str, &str)] = &[
    (
        r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?( ?\((Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day\))?",
        "<datetime>",
    ),
    (
        r"\d{4}-\d{2}-\d{2}( ?\((Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day\))?",
        "<date>",
    ),
    (
        r"((Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day, )?(January|February|March|April|May|June|July|August|September|October|November|December) \d{1,2}(st|nd|rd|th)?,? \d{4}",
        "<date>",
    ),
    (r"\b\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?( ?[AP]M)?\b", "<time>"),
    (
        r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
        "<uuid>",
    ),
];

/// The fields every replay ignores unless `[llm.replay] defaults = false`: the per-user and
/// per-session identifiers of both providers, which never change what the model answers.
const DEFAULT_IGNORED: &[&str] = &[
    "user",
    "metadata.user_id",
    "prompt_cache_key",
    "safety_identifier",
];

/// How much text a divergence shows on each side of the first differing character.
const CONTEXT: usize = 60;

/// The normalisation and comparison of one run's replays.
#[derive(Debug)]
pub(crate) struct Matcher {
    redactions: Vec<(Regex, String)>,
    ignored: Vec<Vec<String>>,
}

impl Default for Matcher {
    fn default() -> Matcher {
        Matcher::new(&ReplayConfig::default()).expect("the built-in redactions are valid")
    }
}

impl Matcher {
    /// The matcher `[llm.replay]` describes; an error names the redaction whose pattern is
    /// not a regular expression.
    pub(crate) fn new(config: &ReplayConfig) -> Result<Matcher, String> {
        let mut redactions = Vec::new();
        let mut ignored: Vec<Vec<String>> = Vec::new();
        if config.defaults {
            for (pattern, replacement) in DEFAULT_REDACTIONS {
                redactions.push((
                    Regex::new(pattern).map_err(|e| e.to_string())?,
                    replacement.to_string(),
                ));
            }
            ignored.extend(DEFAULT_IGNORED.iter().map(|field| field_path(field)));
        }
        for (index, redaction) in config.redactions.iter().enumerate() {
            let regex = Regex::new(&redaction.pattern)
                .map_err(|error| format!("llm.replay.redactions[{index}].pattern: {error}"))?;
            redactions.push((regex, redaction.replacement.clone()));
        }
        ignored.extend(config.ignore_fields.iter().map(|field| field_path(field)));
        Ok(Matcher {
            redactions,
            ignored,
        })
    }

    /// `body` as it is compared: ignored fields removed, every string redacted.
    pub(crate) fn normalise(&self, body: &Value) -> Value {
        let mut body = self.redact(body);
        for path in &self.ignored {
            remove(&mut body, path);
        }
        body
    }

    fn redact(&self, value: &Value) -> Value {
        map_strings(value, &mut |text| self.redact_text(text))
    }

    fn redact_text(&self, text: &str) -> String {
        let mut text = text.to_string();
        for (regex, replacement) in &self.redactions {
            if regex.is_match(&text) {
                text = regex.replace_all(&text, replacement.as_str()).into_owned();
            }
        }
        text
    }

    /// Where `actual` first differs from `recorded` once both are normalised, in words, or
    /// `None` when it matches. A `whole` recording's lists must have as many items as
    /// recorded; otherwise a recorded list is matched by the request's last items.
    #[cfg(test)]
    pub(crate) fn difference(
        &self,
        recorded: &Value,
        actual: &Value,
        whole: bool,
    ) -> Option<String> {
        self.difference_seen(recorded, actual, whole, &|text| Cow::Borrowed(text))
    }

    /// [`Matcher::difference`] with every string of `actual` first seen through `seen` (the
    /// trial's values made placeholders).
    ///
    /// Nothing is copied to compare: a request repeats the whole conversation and every
    /// tool at each call, while a recording names a few of its fields, so only the strings
    /// the recording names are looked at, and a string is redacted only when it differs as
    /// written (redactions map equal texts to equal texts).
    pub(crate) fn difference_seen(
        &self,
        recorded: &Value,
        actual: &Value,
        whole: bool,
        seen: &dyn Fn(&str) -> Cow<'_, str>,
    ) -> Option<String> {
        let comparison = Comparison {
            matcher: self,
            seen,
            lists: if whole { Lists::Whole } else { Lists::Trailing },
        };
        comparison.differ(
            &self.without_ignored(recorded),
            &self.without_ignored(actual),
            &At::Body,
        )
    }

    /// `body` without the ignored fields: itself when none of them is there.
    fn without_ignored<'v>(&self, body: &'v Value) -> Cow<'v, Value> {
        if !self.ignored.iter().any(|path| present(body, path)) {
            return Cow::Borrowed(body);
        }
        let mut body = body.clone();
        for path in &self.ignored {
            remove(&mut body, path);
        }
        Cow::Owned(body)
    }
}

/// Where in the bodies a comparison is, written out only when it reports a difference.
enum At<'a> {
    Body,
    Key(&'a At<'a>, &'a str),
    /// The item `.1` from the end of a list.
    FromEnd(&'a At<'a>, usize),
}

impl std::fmt::Display for At<'_> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            At::Body => formatter.write_str("body"),
            At::Key(parent, key) => write!(formatter, "{parent}.{key}"),
            At::FromEnd(parent, from_end) => write!(formatter, "{parent}[-{from_end}]"),
        }
    }
}

/// One comparison of a recorded body with a request.
struct Comparison<'a> {
    matcher: &'a Matcher,
    /// The request's strings as compared (the trial's values made placeholders).
    seen: &'a dyn Fn(&str) -> Cow<'_, str>,
    lists: Lists,
}

impl Comparison<'_> {
    fn differ(&self, recorded: &Value, actual: &Value, at: &At<'_>) -> Option<String> {
        match (recorded, actual) {
            (Value::Object(expected), Value::Object(found)) => {
                expected
                    .iter()
                    .find_map(|(key, value)| match found.get(key) {
                        None => Some(format!(
                            "{at}.{key} is missing (recorded {})",
                            brief(&self.matcher.redact(value))
                        )),
                        Some(other) => self.differ(value, other, &At::Key(at, key)),
                    })
            }
            (Value::Array(expected), Value::Array(found)) => {
                if self.lists == Lists::Whole && found.len() != expected.len() {
                    return Some(format!(
                        "{at} has {} items, the recording has {}",
                        found.len(),
                        expected.len()
                    ));
                }
                if found.len() < expected.len() {
                    return Some(format!(
                        "{at} has {} items, the recording expects at least {}",
                        found.len(),
                        expected.len()
                    ));
                }
                let offset = found.len() - expected.len();
                expected.iter().enumerate().find_map(|(index, value)| {
                    let from_end = expected.len() - index;
                    self.differ(value, &found[offset + index], &At::FromEnd(at, from_end))
                })
            }
            (Value::Number(expected), Value::Number(found))
                if expected.as_f64() == found.as_f64() =>
            {
                None
            }
            (Value::String(expected), Value::String(found)) => {
                let found = (self.seen)(found);
                if *expected == *found {
                    return None;
                }
                let (expected, found) = (
                    self.matcher.redact_text(expected),
                    self.matcher.redact_text(&found),
                );
                (expected != found).then(|| text_difference(at, &expected, &found))
            }
            (expected, found) if expected == found => None,
            (expected, found) => Some(format!(
                "{at}: recorded {}, got {}",
                brief(&self.matcher.redact(expected)),
                brief(&self.matcher.redact(&self.seen_value(found)))
            )),
        }
    }

    /// A request's value as compared, for a message.
    fn seen_value(&self, value: &Value) -> Value {
        map_strings(value, &mut |text| (self.seen)(text).into_owned())
    }
}

/// Whether the field at `path` (`*` is any key or item) is anywhere in `value`: what
/// [`remove`] would change.
fn present(value: &Value, path: &[String]) -> bool {
    let Some((first, rest)) = path.split_first() else {
        return false;
    };
    match value {
        Value::Object(map) if rest.is_empty() => {
            if first == "*" {
                !map.is_empty()
            } else {
                map.contains_key(first)
            }
        }
        Value::Object(map) => map
            .iter()
            .any(|(key, child)| (first == "*" || key == first) && present(child, rest)),
        Value::Array(items) => {
            let index = first.parse::<usize>().ok();
            if rest.is_empty() {
                return match index {
                    Some(index) => index < items.len(),
                    None => first == "*" && !items.is_empty(),
                };
            }
            items
                .iter()
                .enumerate()
                .any(|(at, child)| (first == "*" || index == Some(at)) && present(child, rest))
        }
        _ => false,
    }
}

/// `messages.*.id` as its segments.
fn field_path(field: &str) -> Vec<String> {
    field.split('.').map(str::to_string).collect()
}

/// Removes the field at `path` (`*` is any key or item) wherever it is.
fn remove(value: &mut Value, path: &[String]) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    match value {
        Value::Object(map) if rest.is_empty() => {
            if first == "*" {
                map.clear();
            } else {
                map.remove(first);
            }
        }
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                if first == "*" || key == first {
                    remove(child, rest);
                }
            }
        }
        Value::Array(items) => {
            let index = first.parse::<usize>().ok();
            if rest.is_empty() {
                match index {
                    Some(index) if index < items.len() => {
                        items.remove(index);
                    }
                    _ if first == "*" => items.clear(),
                    _ => {}
                }
                return;
            }
            for (at, child) in items.iter_mut().enumerate() {
                if first == "*" || index == Some(at) {
                    remove(child, rest);
                }
            }
        }
        _ => {}
    }
}

/// How a recorded list is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lists {
    /// Item for item, of the same length (a recording of the whole request).
    Whole,
    /// With the request's last items (a hand-written request names the newest only).
    Trailing,
}

/// Two texts that differ, shown from a little before their first differing character to a
/// little after it, on both sides.
fn text_difference(at: &At<'_>, recorded: &str, actual: &str) -> String {
    let recorded: Vec<char> = recorded.chars().collect();
    let actual: Vec<char> = actual.chars().collect();
    let first = recorded
        .iter()
        .zip(&actual)
        .position(|(a, b)| a != b)
        .unwrap_or(recorded.len().min(actual.len()));
    let line = 1 + recorded[..first].iter().filter(|c| **c == '\n').count();
    let start = first.saturating_sub(CONTEXT);
    let excerpt = |text: &[char]| {
        let end = (first + CONTEXT).min(text.len());
        let before: String = text[start..first].iter().collect();
        let after: String = text[first..end].iter().collect();
        format!(
            "\"{}{}⟦{}{}\"",
            if start > 0 { "…" } else { "" },
            quoted(&before),
            quoted(&after),
            if end < text.len() { "…" } else { "" },
        )
    };
    format!(
        "{at} differs at character {first} (line {line}): recorded {}, got {} (⟦ marks the first difference)",
        excerpt(&recorded),
        excerpt(&actual)
    )
}

/// Text as a JSON string without its quotes: newlines and quotes visible, one line.
fn quoted(text: &str) -> String {
    let json = Value::String(text.into()).to_string();
    json[1..json.len() - 1].to_string()
}

/// A value shortened for a one-line message.
fn brief(value: &Value) -> String {
    const LIMIT: usize = 200;
    let text = value.to_string();
    if text.chars().count() <= LIMIT {
        text
    } else {
        let head: String = text.chars().take(LIMIT).collect();
        format!("{head}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Redaction;
    use serde_json::json;

    fn difference(recorded: &Value, actual: &Value) -> Option<String> {
        Matcher::default().difference(recorded, actual, false)
    }

    #[test]
    fn a_whole_recording_matches_lists_of_its_length_only() {
        let recorded = json!({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]});
        let longer = json!({"messages": [{"role": "system", "content": "new"}, {"role": "system", "content": "s"}, {"role": "user", "content": "u"}]});
        let whole = |actual: &Value| Matcher::default().difference(&recorded, actual, true);
        assert_eq!(whole(&recorded), None);
        let message = whole(&longer).expect("a request with an extra message differs");
        assert!(
            message.contains("body.messages has 3 items, the recording has 2"),
            "{message}"
        );
        // A hand-written request gives only the newest messages.
        assert_eq!(difference(&recorded, &longer), None);
    }

    #[test]
    fn a_map_matches_on_the_keys_the_recording_names() {
        let recorded = json!({"model": "m"});
        assert_eq!(
            difference(&recorded, &json!({"model": "m", "temperature": 0})),
            None
        );
        assert_eq!(
            difference(&recorded, &json!({"model": "other"})),
            Some("body.model differs at character 0 (line 1): recorded \"⟦m\", got \"⟦other\" (⟦ marks the first difference)".into())
        );
        assert_eq!(
            difference(&recorded, &json!({})),
            Some("body.model is missing (recorded \"m\")".into())
        );
    }

    #[test]
    fn a_list_matches_the_trailing_items() {
        let recorded = json!({"messages": [{"role": "user", "content": "hi"}]});
        let actual = json!({"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]});
        assert_eq!(difference(&recorded, &actual), None);
        let diverged = json!({"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "bye"}]});
        assert!(
            difference(&recorded, &diverged)
                .unwrap()
                .starts_with("body.messages[-1].content differs at character 0")
        );
    }

    #[test]
    fn numbers_compare_numerically() {
        assert_eq!(
            difference(&json!({"temperature": 0}), &json!({"temperature": 0.0})),
            None
        );
    }

    #[test]
    fn a_long_text_shows_where_it_differs_with_context_on_both_sides() {
        // Both texts share far more than the 120 characters a message once showed.
        let shared = "You are a helpful agent. ".repeat(20);
        let recorded = json!({"system": format!("{shared}Be brief and exact in every answer.")});
        let actual = json!({"system": format!("{shared}Be thorough and exact in every answer.")});
        let message = difference(&recorded, &actual).unwrap();
        assert!(
            message.contains("differs at character 503 (line 1)")
                && message.contains("agent. Be ⟦brief and exact in every answer.")
                && message.contains("agent. Be ⟦thorough and exact in every answer."),
            "{message}"
        );
        assert!(message.contains("recorded \"…"), "{message}");
    }

    #[test]
    fn timestamps_dates_and_uuids_are_normalised_by_default() {
        let recorded = json!({"system": "Current Time: 2026-12-01 15:21 (Tuesday) (UTC); run 6f1c2b1e-8a43-4c1e-9d55-0123456789ab on 2026-12-01"});
        let actual = json!({"system": "Current Time: 2027-03-04 08:02 (Thursday) (UTC); run 00000000-1111-4222-8333-444444444444 on 2027-03-04"});
        assert_eq!(difference(&recorded, &actual), None);
        let spelled =
            json!({"c": "Today is Tuesday, December 1, 2026; it is 03:45 PM (15:45:09)."});
        let later = json!({"c": "Today is Friday, March 4, 2027; it is 11:02 AM (11:02:00)."});
        assert_eq!(difference(&spelled, &later), None);
        // An address with a port is not a time.
        assert_eq!(
            Matcher::default().normalise(&json!("at 127.0.0.1:41234")),
            json!("at 127.0.0.1:41234")
        );
        let iso = json!({"c": "at 2026-12-01T15:21:07.123Z"});
        assert_eq!(
            difference(&iso, &json!({"c": "at 2031-01-01T00:00:00+02:00"})),
            None
        );
        // Without the defaults, the time is compared as written.
        let strict = Matcher::new(&ReplayConfig {
            defaults: false,
            ..ReplayConfig::default()
        })
        .unwrap();
        assert!(strict.difference(&recorded, &actual, false).is_some());
    }

    #[test]
    fn configured_redactions_and_ignored_fields_take_part() {
        let matcher = Matcher::new(&ReplayConfig {
            defaults: true,
            redactions: vec![Redaction {
                pattern: r"session-[0-9]+".into(),
                replacement: "session-<n>".into(),
            }],
            ignore_fields: vec!["metadata.trace".into(), "messages.*.id".into()],
        })
        .unwrap();
        let recorded = json!({"user": "u1", "metadata": {"trace": 1}, "messages": [{"id": "a", "content": "in session-17"}]});
        let actual = json!({"user": "u2", "metadata": {"trace": 2}, "messages": [{"id": "b", "content": "in session-99"}]});
        assert_eq!(matcher.difference(&recorded, &actual, false), None);
        assert!(
            Matcher::default()
                .difference(&recorded, &actual, false)
                .is_some()
        );
    }

    #[test]
    fn only_the_strings_the_recording_names_are_seen_and_unequal_ones_redacted() {
        // A request repeats every tool and message at each call; the recording names two
        // strings of it. Only those are seen through the trial's values, and the one equal
        // as written matches without the redactions.
        let tools: Vec<Value> = (0..50)
            .map(|index| json!({"name": format!("tool_{index}"), "description": "at 2026-12-01"}))
            .collect();
        let actual = json!({"model": "m", "tools": tools, "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "at http://127.0.0.1:41234, 2027-01-01"}]});
        let recorded =
            json!({"model": "m", "messages": [{"content": "at {{services_url}}, 2026-12-01"}]});
        // A closure of the signature the comparison asks for (the answer may borrow the text).
        fn seeing<F: Fn(&str) -> Cow<'_, str>>(function: F) -> F {
            function
        }
        let seen = std::cell::RefCell::new(Vec::new());
        let hide = seeing(|text| {
            seen.borrow_mut().push(text.to_string());
            Cow::Owned(text.replace("http://127.0.0.1:41234", "{{services_url}}"))
        });
        let matcher = Matcher::default();
        assert_eq!(
            matcher.difference_seen(&recorded, &actual, false, &hide),
            None
        );
        assert_eq!(
            *seen.borrow(),
            ["m", "at http://127.0.0.1:41234, 2027-01-01"]
        );
        // A difference is still told as the normalised texts differ.
        let other =
            json!({"model": "m", "messages": [{"content": "at http://127.0.0.1:41234, later"}]});
        let message = matcher
            .difference_seen(&recorded, &other, false, &hide)
            .unwrap();
        assert!(
            message.starts_with("body.messages[-1].content differs at character")
                && message.contains("{{services_url}}, ⟦<date>")
                && message.contains("{{services_url}}, ⟦later"),
            "{message}"
        );
    }

    #[test]
    fn a_redaction_that_is_not_a_regular_expression_is_named() {
        let error = Matcher::new(&ReplayConfig {
            redactions: vec![Redaction {
                pattern: "(".into(),
                replacement: String::new(),
            }],
            ..ReplayConfig::default()
        })
        .unwrap_err();
        assert!(
            error.starts_with("llm.replay.redactions[0].pattern"),
            "{error}"
        );
    }
}
