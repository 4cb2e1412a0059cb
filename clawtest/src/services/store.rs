//! A service's in-memory store: its record lists by collection name ([`Collections`]), and
//! how task fixtures become those records: ClawEnvKit's `load_fixtures` rule
//! ([`fixture_records`], the same for every service) and a collection's load-time rules
//! ([`prepare_records`]: ids copied, dates rebased against the trial clock).
//!
//! The engine's operations and the hooks read and write a store; the per-trial state that
//! keeps each service's store (initial and current) is the world's.

use std::collections::BTreeMap;

use serde_json::Value;

use super::description::CollectionDescription;
use super::time::{self, DAY, Instant};

/// A service's record lists, by collection name.
pub(crate) type Collections = BTreeMap<String, Vec<Value>>;

/// Why a fixture value does not give records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FixtureProblem {
    /// The value holds no list of records; `found` describes it.
    NoList { found: String },
    /// Element `index` is not an object.
    NotARecord { index: usize, found: String },
}

/// ClawEnvKit's fixture rule for one task.yaml fixture value (the entrypoint's unwrap,
/// then `load_fixtures`): a list is the records; a map with one key is unwrapped (a
/// non-list inside becomes a one-element list); a map with several keys gives its first
/// list value. Unlike ClawEnvKit, a value with no list, or a list of non-objects, is an
/// error rather than silently no records.
pub(crate) fn fixture_records(value: &Value) -> Result<Vec<Value>, FixtureProblem> {
    let list = match value {
        Value::Array(a) => a.clone(),
        Value::Object(o) if o.len() == 1 => match o.values().next() {
            Some(Value::Array(a)) => a.clone(),
            // `{tasks: {tasks: [...]}}` is unwrapped twice by ClawEnvKit (entrypoint, loader).
            Some(Value::Object(inner)) if inner.len() == 1 => {
                return fixture_records(&Value::Object(inner.clone()));
            }
            Some(other) => vec![other.clone()],
            None => vec![],
        },
        Value::Object(o) => match o.values().find(|v| v.is_array()) {
            Some(Value::Array(a)) => a.clone(),
            _ => {
                let keys: Vec<&str> = o.keys().map(String::as_str).collect();
                return Err(FixtureProblem::NoList {
                    found: format!("a map with keys {} and no list", keys.join(", ")),
                });
            }
        },
        Value::Null => vec![],
        other => {
            return Err(FixtureProblem::NoList {
                found: describe(other),
            });
        }
    };
    if let Some((index, bad)) = list.iter().enumerate().find(|(_, v)| !v.is_object()) {
        return Err(FixtureProblem::NotARecord {
            index,
            found: describe(bad),
        });
    }
    Ok(list)
}

/// "a string", "a number", … for error messages.
pub(crate) fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "a boolean".into(),
        Value::Number(_) => "a number".into(),
        Value::String(_) => "a string".into(),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "a map".into(),
    }
}

/// Applies a collection's load-time rules to its seeded records: `id` copied into the id
/// field, and dates rebased against `clock`.
pub(crate) fn prepare_records(c: &CollectionDescription, records: &mut [Value], clock: Instant) {
    if let (true, Some(field)) = (c.copy_id, &c.id_field) {
        for r in records.iter_mut() {
            if let Value::Object(o) = r
                && !o.contains_key(field)
                && let Some(id) = o.get("id").cloned()
            {
                o.insert(field.clone(), id);
            }
        }
    }
    if let Some(rebase) = &c.rebase_dates {
        let date_of = |r: &Value| {
            r.get(&rebase.field)
                .and_then(Value::as_str)
                .and_then(time::parse)
        };
        let dates = || records.iter().filter_map(date_of);
        let delta = if let Some(days_ago) = rebase.newest_days_ago {
            let Some(newest) = dates().max() else {
                return;
            };
            clock - i128::from(days_ago) * DAY - newest
        } else {
            let Some(earliest) = dates().min() else {
                return;
            };
            // Calendar: the day `clock + N days`, at the earliest event's hour and minute.
            let ahead = clock + i128::from(rebase.earliest_days_ahead.unwrap_or(1)) * DAY;
            let target_day = ahead - ahead.rem_euclid(DAY);
            let minute_of_day = earliest.rem_euclid(DAY) - earliest.rem_euclid(60 * time::SECOND);
            target_day + minute_of_day - earliest
        };
        for r in records.iter_mut() {
            for field in std::iter::once(&rebase.field).chain(&rebase.also_fields) {
                let date = r.get(field).and_then(Value::as_str).and_then(time::parse);
                if let (Some(date), Value::Object(o)) = (date, &mut *r) {
                    o.insert(field.clone(), Value::String(time::format_z(date + delta)));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn fixture_shapes_follow_load_fixtures() {
        let rec = json!({"id": 1});
        assert_eq!(fixture_records(&json!([rec])).unwrap(), vec![rec.clone()]);
        assert_eq!(
            fixture_records(&json!({"tasks": [rec]})).unwrap(),
            vec![rec.clone()]
        );
        // The entrypoint unwraps a one-key map, then load_fixtures unwraps again.
        assert_eq!(
            fixture_records(&json!({"wrapper": {"tasks": [rec]}})).unwrap(),
            vec![rec.clone()]
        );
        assert_eq!(
            fixture_records(&json!({"meta": "x", "tasks": [rec], "more": []})).unwrap(),
            vec![rec.clone()]
        );
        assert!(matches!(
            fixture_records(&json!({"a": 1, "b": 2})),
            Err(FixtureProblem::NoList { .. })
        ));
        assert_eq!(
            fixture_records(&json!([rec, "x"])),
            Err(FixtureProblem::NotARecord {
                index: 1,
                found: "a string".into()
            })
        );
    }
}
