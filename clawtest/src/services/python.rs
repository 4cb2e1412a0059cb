//! Python's semantics for the JSON values ClawEnvKit's handlers compute with: truthiness
//! (`if value:`, `a or b`), `str()` for interpolation into messages, and `items[:n]`.
//! The engine and the hooks share them, so a service answers as its Python original does.

use serde_json::Value;

/// Python truthiness of a JSON value.
pub(crate) fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Python's `str()` of a JSON-decoded value, for interpolation into messages.
pub(crate) fn str_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        other => other.to_string(),
    }
}

/// Python's `items[:n]`: a negative `n` drops that many from the end.
pub(crate) fn truncate<T>(items: &mut Vec<T>, n: i64) {
    let len = items.len() as i64;
    let end = if n < 0 { (len + n).max(0) } else { n.min(len) };
    items.truncate(end as usize);
}
