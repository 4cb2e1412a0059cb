//! The engine: runs a [`RouteDescription`] against a service's collections.
//!
//! Three steps, each a pure function: [`validate`] the request body the way FastAPI and
//! pydantic v2 (lax mode) would, [`execute`] the route's operation on the collections, and
//! render the response templates (see the template rules in [`super::description`]) into a
//! value ([`respond`]) or straight into JSON text ([`respond_text`], what the HTTP layer
//! sends: a list's records go from the store into the text without being copied).
//! Fixture normalisation ([`fixture_records`]) lives here too, because it is ClawEnvKit's
//! `load_fixtures` rule and independent of which service is loading.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::description::{
    BodyRule, CollectionDescription, IdFormat, Match, Operation, ParamType, ParameterDescription,
    RouteDescription, SetWhen,
};
use super::hooks;
use super::python_json;
use super::time::{self, DAY, Instant};

/// A service's record lists, by collection name.
pub type Collections = BTreeMap<String, Vec<Value>>;

/// A request the route's schema rejected: the 422 body FastAPI would send, and the body
/// as received (for the audit log).
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    pub detail: Value,
    pub received: Value,
}

/// Validates a request body against the route's parameters. On success returns the
/// parameters as pydantic's `model_dump()` would: every declared field, in declaration
/// order, defaults applied, values coerced, undeclared fields dropped.
pub fn validate(
    route: &RouteDescription,
    body: &[u8],
) -> Result<Map<String, Value>, Box<Rejected>> {
    let text_is_empty = body.iter().all(u8::is_ascii_whitespace);
    let parsed = if text_is_empty {
        Value::Null
    } else {
        match serde_json::from_slice::<Value>(body) {
            Ok(v) => v,
            Err(e) => {
                // FastAPI reports CPython's json error (character position, message); fall
                // back to serde_json's when CPython would have accepted the text (NaN) or it
                // is not UTF-8.
                let (position, message) = std::str::from_utf8(body)
                    .ok()
                    .and_then(python_json::decode_error)
                    .unwrap_or_else(|| (byte_offset(body, e.line(), e.column()), e.to_string()));
                let detail = json!([{
                    "type": "json_invalid",
                    "loc": ["body", position],
                    "msg": "JSON decode error",
                    "input": {},
                    "ctx": {"error": message},
                }]);
                return Err(Box::new(Rejected {
                    detail,
                    received: json!({}),
                }));
            }
        }
    };
    let object = match parsed {
        Value::Null if route.body == BodyRule::Optional => match &route.empty_body {
            Some(Value::Object(defaults)) => defaults.clone(),
            _ => Map::new(),
        },
        Value::Null => {
            return Err(Box::new(Rejected {
                detail: json!([{"type": "missing", "loc": ["body"], "msg": "Field required", "input": null}]),
                received: json!({}),
            }));
        }
        Value::Object(map) => map,
        other => {
            return Err(Box::new(Rejected {
                detail: json!([{
                    "type": "model_attributes_type",
                    "loc": ["body"],
                    "msg": "Input should be a valid dictionary or object to extract fields from",
                    "input": other,
                }]),
                received: json!({}),
            }));
        }
    };
    let mut params = Map::new();
    let mut errors = Vec::new();
    for p in &route.parameters {
        match object.get(&p.name) {
            None if p.required => errors.push(json!({
                "type": "missing",
                "loc": ["body", p.name],
                "msg": "Field required",
                "input": Value::Object(object.clone()),
            })),
            None => {
                params.insert(p.name.clone(), p.default.clone().unwrap_or(Value::Null));
            }
            Some(value) => {
                let loc = vec![json!("body"), json!(p.name)];
                if let Some(v) = coerce_param(p, value, loc, &mut errors) {
                    params.insert(p.name.clone(), v);
                }
            }
        }
    }
    if errors.is_empty() {
        Ok(params)
    } else {
        Err(Box::new(Rejected {
            detail: Value::Array(errors),
            received: Value::Object(object),
        }))
    }
}

fn byte_offset(body: &[u8], line: usize, column: usize) -> usize {
    // serde_json reports 1-based line and column; FastAPI reports a character position.
    let mut offset = 0;
    for (i, l) in body.split(|b| *b == b'\n').enumerate() {
        if i + 1 == line {
            return offset + column.saturating_sub(1);
        }
        offset += l.len() + 1;
    }
    body.len()
}

fn coerce_param(
    p: &ParameterDescription,
    value: &Value,
    loc: Vec<Value>,
    errors: &mut Vec<Value>,
) -> Option<Value> {
    if value.is_null() && p.nullable {
        return Some(Value::Null);
    }
    let v = coerce(p.ty, value, &loc, errors)?;
    if p.ty != ParamType::Array {
        return Some(v);
    }
    let (Some(items), Value::Array(elems)) = (p.items, &v) else {
        return Some(v);
    };
    let before = errors.len();
    let mut out = Vec::with_capacity(elems.len());
    for (i, e) in elems.iter().enumerate() {
        let mut l = loc.clone();
        l.push(json!(i));
        if let Some(c) = coerce(items, e, &l, errors) {
            out.push(c);
        }
    }
    (errors.len() == before).then_some(Value::Array(out))
}

/// pydantic v2 lax-mode coercion for one JSON value.
fn coerce(ty: ParamType, value: &Value, loc: &[Value], errors: &mut Vec<Value>) -> Option<Value> {
    let mut fail = |kind: &str, msg: &str| {
        errors.push(json!({"type": kind, "loc": loc, "msg": msg, "input": value}));
        None
    };
    match (ty, value) {
        (ParamType::String, Value::String(_)) => Some(value.clone()),
        (ParamType::String, _) => fail("string_type", "Input should be a valid string"),
        (ParamType::Integer, Value::Bool(b)) => Some(json!(i64::from(*b))),
        (ParamType::Integer, Value::Number(n)) => {
            if n.is_i64() || n.is_u64() {
                Some(value.clone())
            } else {
                match n.as_f64() {
                    Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some(json!(f as i64)),
                    _ => fail(
                        "int_from_float",
                        "Input should be a valid integer, got a number with a fractional part",
                    ),
                }
            }
        }
        (ParamType::Integer, Value::String(s)) => match s.trim().parse::<i64>() {
            Ok(i) => Some(json!(i)),
            Err(_) => fail(
                "int_parsing",
                "Input should be a valid integer, unable to parse string as an integer",
            ),
        },
        (ParamType::Integer, _) => fail("int_type", "Input should be a valid integer"),
        // pydantic's `float` turns an integer into a float: Python prints 200 back as 200.0.
        (ParamType::Number, Value::Number(n)) => {
            Some(n.as_f64().map_or_else(|| value.clone(), |f| json!(f)))
        }
        (ParamType::Number, Value::Bool(b)) => Some(json!(f64::from(u8::from(*b)))),
        (ParamType::Number, Value::String(s)) => match s.trim().parse::<f64>() {
            Ok(f) if f.is_finite() => Some(json!(f)),
            _ => fail(
                "float_parsing",
                "Input should be a valid number, unable to parse string as a number",
            ),
        },
        (ParamType::Number, _) => fail("float_type", "Input should be a valid number"),
        (ParamType::Boolean, Value::Bool(_)) => Some(value.clone()),
        (ParamType::Boolean, Value::Number(n)) => match n.as_f64() {
            Some(0.0) => Some(json!(false)),
            Some(1.0) => Some(json!(true)),
            _ => fail(
                "bool_parsing",
                "Input should be a valid boolean, unable to interpret input",
            ),
        },
        (ParamType::Boolean, Value::String(s)) => match s.to_ascii_lowercase().as_str() {
            "0" | "off" | "f" | "false" | "n" | "no" => Some(json!(false)),
            "1" | "on" | "t" | "true" | "y" | "yes" => Some(json!(true)),
            _ => fail(
                "bool_parsing",
                "Input should be a valid boolean, unable to interpret input",
            ),
        },
        (ParamType::Boolean, _) => fail("bool_type", "Input should be a valid boolean"),
        (ParamType::Array, Value::Array(_)) => Some(value.clone()),
        (ParamType::Array, _) => fail("list_type", "Input should be a valid list"),
        (ParamType::Object, Value::Object(_)) => Some(value.clone()),
        (ParamType::Object, _) => fail("dict_type", "Input should be a valid dictionary"),
    }
}

/// What an operation produced: which response template applies and its variables. It may
/// borrow the records a list operation selected from the store (`'s`).
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome<'s> {
    pub found: bool,
    /// An HTTP status other than 200 (a hook's `HTTPException`).
    pub status: Option<u16>,
    /// A body a hook built whole; it bypasses the response templates.
    pub body: Option<Value>,
    pub vars: Vars<'s>,
}

/// Template variables (see the template rules in [`super::description`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Vars<'s> {
    pub params: Map<String, Value>,
    pub now: String,
    pub id: Option<Value>,
    pub record: Option<Value>,
    /// A list's records: borrowed from the store until an answer needs them as values
    /// ([`respond_text`] never copies them).
    pub items: Option<Vec<Cow<'s, Value>>>,
}

impl Vars<'_> {
    fn get(&self, name: &str) -> Value {
        if let Some(p) = name.strip_prefix("params.") {
            return self.params.get(p).cloned().unwrap_or(Value::Null);
        }
        if let Some(field) = name.strip_prefix("record.") {
            return self
                .record
                .as_ref()
                .and_then(|r| r.get(field))
                .cloned()
                .unwrap_or(Value::Null);
        }
        match name {
            "now" => Value::String(self.now.clone()),
            "today" => Value::String(self.now.get(..10).unwrap_or_default().to_owned()),
            "params_set" => Value::Object(
                self.params
                    .iter()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            ),
            "id" => self.id.clone().unwrap_or(Value::Null),
            "record" => self.record.clone().unwrap_or(Value::Null),
            "items" => self.items.as_ref().map_or(Value::Null, |items| {
                Value::Array(items.iter().map(|item| item.as_ref().clone()).collect())
            }),
            "count" => self.items.as_ref().map_or(Value::Null, |i| json!(i.len())),
            _ => Value::Null,
        }
    }
}

/// Runs a validated request's operation. `now` is the request instant.
pub fn execute<'s>(
    route: &RouteDescription,
    collections_desc: &[CollectionDescription],
    store: &'s mut Collections,
    params: Map<String, Value>,
    now: Instant,
) -> Outcome<'s> {
    let mut vars = Vars {
        params,
        now: time::format_python_iso(now),
        ..Vars::default()
    };
    let id_field = |name: &str| {
        collections_desc
            .iter()
            .find(|c| c.name == name)
            .and_then(|c| c.id_field.clone())
            .unwrap_or_default()
    };
    // `record.get(field, "") == key` on the id field, or on any of `also_match`.
    let position = |records: &[Value], field: &str, also: &[String], key: &Value| {
        let empty = json!("");
        records.iter().position(|r| {
            std::iter::once(field)
                .chain(also.iter().map(String::as_str))
                .any(|f| r.get(f).unwrap_or(&empty) == key)
        })
    };
    let mut status = None;
    let mut body = None;
    let found = match &route.operation {
        Operation::List {
            collection,
            filters,
            limit,
        } => {
            // A list only reads: its outcome borrows the records it selected.
            let store: &'s Collections = store;
            let records = store.get(collection).map(Vec::as_slice).unwrap_or(&[]);
            let mut items: Vec<&Value> = records
                .iter()
                .filter(|r| {
                    filters.iter().all(|f| {
                        let param = vars.params.get(&f.param).unwrap_or(&Value::Null);
                        if param.is_null()
                            || f.any.as_ref() == Some(param)
                            || (f.skip_falsy && !truthy(param))
                        {
                            return true;
                        }
                        std::iter::once(&f.field)
                            .chain(&f.also_fields)
                            .any(|field| field_matches(f.matching, r.get(field), param, now))
                    })
                })
                .collect();
            if let Some(n) = limit
                .as_ref()
                .and_then(|l| vars.params.get(l))
                .and_then(Value::as_i64)
            {
                // Python's `items[:n]`.
                let len = items.len() as i64;
                let end = if n < 0 { (len + n).max(0) } else { n.min(len) };
                items.truncate(end as usize);
            }
            vars.items = Some(items.into_iter().map(Cow::Borrowed).collect());
            true
        }
        Operation::Get {
            collection,
            key,
            also_match,
        } => {
            let key_value = vars.params.get(key).cloned().unwrap_or(Value::Null);
            let records = store.get(collection).map(Vec::as_slice).unwrap_or(&[]);
            match position(records, &id_field(collection), also_match, &key_value) {
                Some(i) => {
                    vars.record = Some(records[i].clone());
                    true
                }
                None => false,
            }
        }
        Operation::Create {
            collection,
            record,
            log_to,
        } => {
            let records = store.entry(collection.clone()).or_default();
            let format = collections_desc
                .iter()
                .find(|c| &c.name == collection)
                .and_then(|c| c.id_format.as_deref())
                .and_then(|f| IdFormat::parse(f).ok());
            vars.id = format.map(|f| Value::String(f.render(records.len() + 1)));
            let new = render(record, &vars);
            records.push(new.clone());
            if let Some(log) = log_to {
                store.entry(log.clone()).or_default().push(new.clone());
            }
            vars.record = Some(new);
            true
        }
        Operation::Update {
            collection,
            key,
            also_match,
            set,
            set_when,
            also,
            log_to,
            log_record,
        } => {
            let key_value = vars.params.get(key).cloned().unwrap_or(Value::Null);
            let field = id_field(collection);
            let records = store.entry(collection.clone()).or_default();
            match position(records, &field, also_match, &key_value) {
                Some(i) => {
                    let extra: Vec<(String, Value)> = also
                        .iter()
                        .map(|(k, t)| (k.clone(), render(t, &vars)))
                        .collect();
                    if let Value::Object(r) = &mut records[i] {
                        for name in set {
                            if let Some(v) = vars.params.get(name)
                                && !v.is_null()
                                && (*set_when == SetWhen::NotNull || truthy(v))
                            {
                                r.insert(name.clone(), v.clone());
                            }
                        }
                        for (k, v) in extra {
                            r.insert(k, v);
                        }
                    }
                    let updated = records[i].clone();
                    vars.record = Some(updated.clone());
                    if let Some(log) = log_to {
                        let entry = match log_record {
                            Some(template) => render(template, &vars),
                            None => updated,
                        };
                        store.entry(log.clone()).or_default().push(entry);
                    }
                    true
                }
                None => false,
            }
        }
        Operation::Delete {
            collection,
            key,
            log_to,
        } => {
            let key_value = vars.params.get(key).cloned().unwrap_or(Value::Null);
            let field = id_field(collection);
            let records = store.entry(collection.clone()).or_default();
            match position(records, &field, &[], &key_value) {
                Some(i) => {
                    let removed = records.remove(i);
                    if let Some(log) = log_to {
                        store.entry(log.clone()).or_default().push(removed.clone());
                    }
                    vars.record = Some(removed);
                    true
                }
                None => false,
            }
        }
        Operation::Hook { hook, collection } => {
            let result = hooks::run(
                hook,
                &hooks::HookInput {
                    params: &vars.params,
                    collection: collection.as_deref(),
                    now,
                },
                store,
            );
            vars.record = result.record;
            vars.items = result
                .items
                .map(|items| items.into_iter().map(Cow::Owned).collect());
            status = result.status;
            body = result.body;
            result.found
        }
    };
    Outcome {
        found,
        status,
        body,
        vars,
    }
}

/// Whether one record field passes a filter against a (non-null) parameter.
fn field_matches(matching: Match, field: Option<&Value>, param: &Value, now: Instant) -> bool {
    let text = |v: Option<&Value>| match v {
        Some(Value::String(s)) => Some(s.clone()),
        None => Some(String::new()),
        Some(_) => None,
    };
    match matching {
        Match::Equals => field.unwrap_or(&json!("")) == param,
        Match::EqualsIgnoreCase => match (text(field), param.as_str()) {
            (Some(f), Some(p)) => f.to_lowercase() == p.to_lowercase(),
            _ => false,
        },
        Match::Contains => match (text(field), param.as_str()) {
            (Some(f), Some(p)) => f.contains(p),
            _ => false,
        },
        Match::ContainsIgnoreCase => match (text(field), param.as_str()) {
            (Some(f), Some(p)) => f.to_lowercase().contains(&p.to_lowercase()),
            _ => false,
        },
        Match::Has => field
            .and_then(Value::as_array)
            .is_some_and(|items| items.contains(param)),
        Match::AtLeast => match (text(field), param.as_str()) {
            (Some(f), Some(p)) => f.as_str() >= p,
            _ => false,
        },
        Match::AtMost => match (text(field), param.as_str()) {
            (Some(f), Some(p)) => f.as_str() <= p,
            _ => false,
        },
        Match::WithinDays => {
            let days = i128::from(param.as_i64().unwrap_or(0));
            let cutoff = now.saturating_sub(days.saturating_mul(DAY));
            match field.and_then(Value::as_str).and_then(time::parse) {
                Some(date) => date >= cutoff,
                None => true,
            }
        }
    }
}

/// The response body for an outcome. It consumes the outcome so that a record or list
/// the template names exactly once moves into the answer instead of being copied: copying
/// the listed records was most of the cost of a list request.
pub fn respond(route: &RouteDescription, outcome: Outcome) -> Value {
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
        "record" if move_record => vars.record.take().unwrap_or(Value::Null),
        "count" => count.clone().unwrap_or(Value::Null),
        _ => vars.get(name),
    })
}

/// [`respond`], written as JSON text into `out`: the same text as serializing its value,
/// without copying the records the outcome borrows (a list's records go from the store
/// straight into the text).
pub fn respond_text(route: &RouteDescription, outcome: Outcome, out: &mut Vec<u8>) {
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
                write_json(out, vars.record.as_ref().unwrap_or(&Value::Null));
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
pub fn render(template: &Value, vars: &Vars) -> Value {
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
            out.push_str(&python_str(&lookup(&tail[2..2 + end])));
            rest = &tail[3 + end..];
        } else {
            out.push('$');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    Value::String(out)
}

/// Python's `str()` of a JSON-decoded value, for interpolation into messages.
fn python_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        other => other.to_string(),
    }
}

/// Python truthiness of a JSON value.
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Why a fixture value does not give records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FixtureProblem {
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
pub fn fixture_records(value: &Value) -> Result<Vec<Value>, FixtureProblem> {
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
pub fn describe(v: &Value) -> String {
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
pub fn prepare_records(c: &CollectionDescription, records: &mut [Value], clock: Instant) {
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
    use super::*;

    fn vars() -> Vars<'static> {
        let mut params = Map::new();
        params.insert("task_id".into(), json!("t9"));
        params.insert("description".into(), Value::Null);
        params.insert("n".into(), json!(3));
        Vars {
            params,
            now: "NOW".into(),
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
            json!({"a": ["NOW", 1]})
        );
    }

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
