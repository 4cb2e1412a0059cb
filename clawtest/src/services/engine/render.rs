//! Rendering an answer: an operation's [`Outcome`] through the route's response templates
//! (the template rules are in [`crate::services::description`]), as a value or straight
//! into JSON text.

use std::borrow::Cow;

use serde_json::{Value, json};

use super::{Outcome, Vars};
use crate::services::description::RouteDescription;
use crate::services::python::{self, truthy};

/// The response body for an outcome. It consumes the outcome so that a record or list
/// the template names exactly once moves into the answer instead of being copied: copying
/// the listed records was most of the cost of a list request.
pub(crate) fn respond(route: &RouteDescription, outcome: Outcome) -> Value {
    if let Some(body) = outcome.body {
        return body;
    }
    let template = if outcome.found {
        &route.response
    } else {
        match &route.not_found {
            Some(t) => t,
            None => return json!({"error": "Not found"}),
        }
    };
    let mut vars = outcome.vars;
    // Counted over the whole template (any `${record.…}` counts for `record`), so a moved
    // value is never needed again; `count` is taken before `items` can move.
    let move_items = references(template, "items") == 1;
    let move_record = references(template, "record") == 1;
    let count = vars.items.as_ref().map(|items| json!(items.len()));
    render_with(template, &mut |name| match name {
        "items" if move_items => vars.items.take().map_or(Value::Null, |items| {
            Value::Array(items.into_iter().map(Cow::into_owned).collect())
        }),
        "record" if move_record => vars.record.take().map_or(Value::Null, Cow::into_owned),
        "count" => count.clone().unwrap_or(Value::Null),
        _ => vars.get(name),
    })
}

/// [`respond`], written as JSON text into `out`: the same text as serializing its value,
/// without copying the records the outcome borrows (a list's records go from the store
/// straight into the text). The outcome is only read: its parameters go on to the audit.
pub(crate) fn respond_text(route: &RouteDescription, outcome: &Outcome, out: &mut Vec<u8>) {
    if let Some(body) = &outcome.body {
        write_json(out, body);
        return;
    }
    let template = if outcome.found {
        &route.response
    } else {
        match &route.not_found {
            Some(t) => t,
            None => return write_json(out, &json!({"error": "Not found"})),
        }
    };
    write_rendered(template, &outcome.vars, out);
}

/// Writes `render(template, vars)` as compact JSON, as serde_json writes a value.
fn write_rendered(template: &Value, vars: &Vars, out: &mut Vec<u8>) {
    match template {
        Value::String(s) => match whole_reference(s) {
            Some("items") if vars.items.is_some() => {
                out.push(b'[');
                for (index, item) in vars.items.iter().flatten().enumerate() {
                    if index > 0 {
                        out.push(b',');
                    }
                    write_json(out, item);
                }
                out.push(b']');
            }
            Some("record") if vars.record.is_some() => {
                write_json(out, vars.record.as_deref().unwrap_or(&Value::Null));
            }
            _ => write_json(out, &render_str(s, &mut |name| vars.get(name))),
        },
        Value::Array(elements) => {
            out.push(b'[');
            for (index, element) in elements.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_rendered(element, vars, out);
            }
            out.push(b']');
        }
        // `$default` and `$or` choose by the rendered values: render them whole.
        Value::Object(o)
            if o.len() == 1 && (o.contains_key("$default") || o.contains_key("$or")) =>
        {
            write_json(out, &render(template, vars));
        }
        Value::Object(o) => {
            out.push(b'{');
            for (index, (key, value)) in o.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_json(out, key);
                out.push(b':');
                write_rendered(value, vars, out);
            }
            out.push(b'}');
        }
        other => write_json(out, other),
    }
}

/// Appends `value` as compact JSON.
fn write_json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    // Writing a JSON value or string into memory cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
}

/// The variable name of a template string that is one whole `${name}` reference.
fn whole_reference(s: &str) -> Option<&str> {
    s.strip_prefix("${")
        .and_then(|r| r.strip_suffix('}'))
        .filter(|name| !name.contains(['{', '}', '$']))
}

/// How many `${name}` or `${name.…}` references `template` holds. An escaped `$${name}` is
/// counted too: counting too many only costs a copy.
fn references(template: &Value, name: &str) -> usize {
    match template {
        Value::String(s) => s
            .match_indices("${")
            .filter(|(at, _)| {
                let rest = &s[at + 2..];
                rest.strip_prefix(name)
                    .is_some_and(|tail| tail.starts_with('}') || tail.starts_with('.'))
            })
            .count(),
        Value::Array(a) => a.iter().map(|v| references(v, name)).sum(),
        Value::Object(o) => o.values().map(|v| references(v, name)).sum(),
        _ => 0,
    }
}

/// Renders a template value.
pub(crate) fn render(template: &Value, vars: &Vars) -> Value {
    render_with(template, &mut |name| vars.get(name))
}

/// Renders a template value, looking each variable up with `lookup`.
fn render_with(template: &Value, lookup: &mut dyn FnMut(&str) -> Value) -> Value {
    match template {
        Value::String(s) => render_str(s, lookup),
        Value::Array(a) => Value::Array(a.iter().map(|v| render_with(v, lookup)).collect()),
        Value::Object(o) => {
            if let (1, Some(Value::Array(alts))) = (o.len(), o.get("$default")) {
                return alts
                    .iter()
                    .map(|v| render_with(v, lookup))
                    .find(|v| !v.is_null())
                    .unwrap_or(Value::Null);
            }
            if let (1, Some(Value::Array(alts))) = (o.len(), o.get("$or")) {
                let rendered: Vec<Value> = alts.iter().map(|v| render_with(v, lookup)).collect();
                return rendered
                    .iter()
                    .find(|v| truthy(v))
                    .or(rendered.last())
                    .cloned()
                    .unwrap_or(Value::Null);
            }
            Value::Object(
                o.iter()
                    .map(|(k, v)| (k.clone(), render_with(v, lookup)))
                    .collect(),
            )
        }
        other => other.clone(),
    }
}

fn render_str(s: &str, lookup: &mut dyn FnMut(&str) -> Value) -> Value {
    if let Some(name) = whole_reference(s) {
        return lookup(name);
    }
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(t) = tail.strip_prefix("$${") {
            out.push_str("${");
            rest = t;
        } else if let Some(end) = tail.strip_prefix("${").and_then(|t| t.find('}')) {
            out.push_str(&python::str_of(&lookup(&tail[2..2 + end])));
            rest = &tail[3 + end..];
        } else {
            out.push('$');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    Value::String(out)
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, json};

    use super::*;

    fn vars() -> Vars<'static> {
        let mut params = Map::new();
        params.insert("task_id".into(), json!("t9"));
        params.insert("description".into(), Value::Null);
        params.insert("n".into(), json!(3));
        Vars {
            params,
            now: crate::services::time::parse("2026-01-02T09:00:00Z"),
            ..Vars::default()
        }
    }

    #[test]
    fn templates_substitute_interpolate_and_or() {
        let v = vars();
        assert_eq!(render(&json!("${params.n}"), &v), json!(3));
        assert_eq!(
            render(&json!("Task ${params.task_id} not found"), &v),
            json!("Task t9 not found")
        );
        assert_eq!(render(&json!("$${x} costs $5"), &v), json!("${x} costs $5"));
        assert_eq!(
            render(&json!({"$or": ["${params.description}", ""]}), &v),
            json!("")
        );
        assert_eq!(
            render(&json!({"a": ["${now}", 1]}), &v),
            json!({"a": ["2026-01-02T09:00:00+00:00", 1]})
        );
    }
}
