//! The shapes of a description's fields, checked with their place named: a mapping with
//! known keys, a bounded list or text, a name. `spec.rs` and `picture.rs` read with them.

use serde_json::{Map, Value};

use super::SpecError;

pub(super) fn object<'a>(
    value: &'a Value,
    field: &str,
) -> Result<&'a Map<String, Value>, SpecError> {
    value
        .as_object()
        .ok_or_else(|| SpecError::new(field, format!("must be a mapping, not {}", shape(value))))
}

pub(super) fn known_keys(
    map: &Map<String, Value>,
    field: &str,
    known: &[&str],
) -> Result<(), SpecError> {
    match map.keys().find(|key| !known.contains(&key.as_str())) {
        None => Ok(()),
        Some(key) => Err(SpecError::new(
            format!("{field}.{key}"),
            format!(
                "unknown field; {}",
                crate::spelling::suggestion(key, known, "the fields are")
            ),
        )),
    }
}

pub(super) fn shape(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

pub(super) fn bounded_text(value: &Value, field: &str, limit: usize) -> Result<String, SpecError> {
    let Value::String(text) = value else {
        return Err(SpecError::new(
            field,
            format!("must be text, not {}", shape(value)),
        ));
    };
    if text.len() > limit {
        return Err(SpecError::new(
            field,
            format!("{} bytes; at most {limit}", text.len()),
        ));
    }
    Ok(text.clone())
}

pub(super) fn list<'a>(
    value: Option<&'a Value>,
    field: &str,
    limit: usize,
    what: &str,
) -> Result<&'a [Value], SpecError> {
    match value {
        Some(Value::Array(items)) if items.len() <= limit => Ok(items),
        Some(Value::Array(items)) => Err(SpecError::new(
            field,
            format!("{} {what}; at most {limit}", items.len()),
        )),
        Some(other) => Err(SpecError::new(
            field,
            format!("must be a list of {what}, not {}", shape(other)),
        )),
        None => Err(SpecError::new(field, format!("missing: give the {what}"))),
    }
}

pub(super) fn name(value: &Value, field: &str) -> Result<String, SpecError> {
    match value {
        Value::String(name)
            if !name.is_empty()
                && name.len() <= 64
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit()) =>
        {
            Ok(name.clone())
        }
        other => Err(SpecError::new(
            field,
            format!(
                "`{}` is not a name: letters, digits and `_`, not starting with a digit, at most 64",
                display(other)
            ),
        )),
    }
}

pub(super) fn display(value: &Value) -> String {
    match value {
        Value::String(text) => text.chars().take(64).collect(),
        other => other.to_string().chars().take(64).collect(),
    }
}
