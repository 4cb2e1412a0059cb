//! Request validation: a route's request body checked and coerced the way FastAPI and
//! pydantic v2 (lax mode) would, with FastAPI's 422 body (and CPython's JSON decode error)
//! when it is refused, or its 400 when CPython could not parse the body at all (nesting
//! past its recursion limit).

use serde_json::{Map, Value, json};

use crate::services::description::{BodyRule, ParamType, ParameterDescription, RouteDescription};
use crate::services::python_json::{self, Decoded};

/// A request the route's schema rejected: FastAPI's status (422, or 400 for a body it could
/// not parse) and `detail`, and the body as received (for the audit log).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct InvalidRequest {
    pub status: u16,
    pub detail: Value,
    pub received: Value,
}

impl InvalidRequest {
    fn unprocessable(detail: Value, received: Value) -> Box<Self> {
        Box::new(Self {
            status: 422,
            detail,
            received,
        })
    }
}

/// Validates a request body against the route's parameters. On success returns the
/// parameters as pydantic's `model_dump()` would: every declared field, in declaration
/// order, defaults applied, values coerced, undeclared fields dropped.
pub(crate) fn validate(
    route: &RouteDescription,
    body: &[u8],
) -> Result<Map<String, Value>, Box<InvalidRequest>> {
    let text_is_empty = body.iter().all(u8::is_ascii_whitespace);
    let parsed = if text_is_empty {
        Value::Null
    } else {
        match serde_json::from_slice::<Value>(body) {
            Ok(v) => v,
            Err(e) => return Err(undecodable(body, &e)),
        }
    };
    let object = match parsed {
        Value::Null if route.body == BodyRule::Optional => match &route.empty_body {
            Some(Value::Object(defaults)) => defaults.clone(),
            _ => Map::new(),
        },
        Value::Null => {
            return Err(InvalidRequest::unprocessable(
                json!([{"type": "missing", "loc": ["body"], "msg": "Field required", "input": null}]),
                json!({}),
            ));
        }
        Value::Object(map) => map,
        other => {
            return Err(InvalidRequest::unprocessable(
                json!([{
                    "type": "model_attributes_type",
                    "loc": ["body"],
                    "msg": "Input should be a valid dictionary or object to extract fields from",
                    "input": other,
                }]),
                json!({}),
            ));
        }
    };
    // Each declared field's value moves from the body into the parameters (with its key,
    // when the body spelled it): no copy on the way. A refused request is rare: its error
    // quotes the body as received, read again.
    let mut object = object;
    let mut params = Map::new();
    let mut errors = Vec::new();
    for p in &route.parameters {
        match object.remove_entry(&p.name) {
            None if p.required => errors.push(json!({
                "type": "missing",
                "loc": ["body", p.name],
                "msg": "Field required",
                "input": Value::Null,
            })),
            None => {
                params.insert(p.name.clone(), p.default.clone().unwrap_or(Value::Null));
            }
            Some((name, value)) => {
                let loc = vec![json!("body"), json!(p.name)];
                if let Some(v) = coerce_param(p, value, loc, &mut errors) {
                    params.insert(name, v);
                }
            }
        }
    }
    if errors.is_empty() {
        return Ok(params);
    }
    let received = as_received(body, route);
    for error in &mut errors {
        if error["type"] == "missing" {
            error["input"] = received.clone();
        }
    }
    Err(InvalidRequest::unprocessable(
        Value::Array(errors),
        received,
    ))
}

/// The body of a refused request as FastAPI quotes it: the object sent (the defaults of an
/// optional body when none was).
fn as_received(body: &[u8], route: &RouteDescription) -> Value {
    match serde_json::from_slice::<Value>(body) {
        Ok(object @ Value::Object(_)) => object,
        _ => match &route.empty_body {
            Some(defaults @ Value::Object(_)) => defaults.clone(),
            _ => Value::Object(Map::new()),
        },
    }
}

/// FastAPI's answer to a body serde_json could not parse. CPython's decode error (character
/// position, message) where CPython finds one; serde_json's where CPython would have accepted
/// the text (NaN) or it is not UTF-8. A body nested past CPython's recursion limit is
/// FastAPI's 400; so is one nested past serde_json's 128 levels that CPython would read (a
/// deliberate difference: no agent sends such a body, and reading it would need a parser
/// without serde_json's stack guard).
fn undecodable(body: &[u8], error: &serde_json::Error) -> Box<InvalidRequest> {
    let decoded = std::str::from_utf8(body).map(python_json::decode);
    let (position, message) = match decoded {
        Ok(Decoded::Invalid(position, message)) => (position, message),
        Ok(Decoded::TooDeep) => return unparsable(),
        Ok(Decoded::Accepted) if error.to_string().starts_with("recursion limit exceeded") => {
            return unparsable();
        }
        Ok(Decoded::Accepted) | Err(_) => (
            byte_offset(body, error.line(), error.column()),
            error.to_string(),
        ),
    };
    let detail = json!([{
        "type": "json_invalid",
        "loc": ["body", position],
        "msg": "JSON decode error",
        "input": {},
        "ctx": {"error": message},
    }]);
    InvalidRequest::unprocessable(detail, json!({}))
}

/// FastAPI's 400 when reading the body raised something other than a decode error.
fn unparsable() -> Box<InvalidRequest> {
    Box::new(InvalidRequest {
        status: 400,
        detail: json!("There was an error parsing the body"),
        received: json!({}),
    })
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
    value: Value,
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
        if let Some(c) = coerce(items, e.clone(), &l, errors) {
            out.push(c);
        }
    }
    (errors.len() == before).then_some(Value::Array(out))
}

/// pydantic v2 lax-mode coercion for one JSON value.
fn coerce(ty: ParamType, value: Value, loc: &[Value], errors: &mut Vec<Value>) -> Option<Value> {
    // A value of the declared type passes as it is, moved.
    let passes = matches!(
        (ty, &value),
        (ParamType::String, Value::String(_))
            | (ParamType::Boolean, Value::Bool(_))
            | (ParamType::Array, Value::Array(_))
            | (ParamType::Object, Value::Object(_))
    ) || matches!((ty, &value), (ParamType::Integer, Value::Number(n)) if n.is_i64() || n.is_u64());
    if passes {
        return Some(value);
    }
    let value = &value;
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
