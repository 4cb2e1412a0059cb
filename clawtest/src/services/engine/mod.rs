//! The engine: answers one request to a route of a
//! [`ServiceDescription`](super::ServiceDescription) from the service's store
//! ([`super::store`]).
//!
//! Three steps, each a pure function in a module of its own:
//! - [`request`]: [`validate`] the request body the way FastAPI and pydantic v2 (lax mode)
//!   would;
//! - [`operations`]: [`execute`] the route's operation on the collections;
//! - [`mod@render`]: render the response templates (see the template rules in
//!   [`super::description`]) into a value ([`respond`]) or straight into JSON text
//!   ([`respond_text`], what the HTTP layer sends: a list's records go from the store into
//!   the text without being copied).
//!
//! What passes between the steps, an [`Outcome`] and its template [`Vars`], is defined here.

pub(crate) mod operations;
pub(crate) mod render;
pub(crate) mod request;

use std::borrow::Cow;

use serde_json::{Map, Value, json};

use super::time::{self, Instant};

pub(crate) use operations::execute;
pub(crate) use render::{render, respond, respond_text};
pub(crate) use request::validate;

/// What an operation produced: which response template applies and its variables. It may
/// borrow the records a list operation selected from the store (`'s`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Outcome<'s> {
    pub found: bool,
    /// An HTTP status other than 200 (a hook's `HTTPException`).
    pub status: Option<u16>,
    /// A body a hook built whole; it bypasses the response templates.
    pub body: Option<Value>,
    pub vars: Vars<'s>,
}

/// Template variables (see the template rules in [`super::description`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Vars<'s> {
    pub params: Map<String, Value>,
    /// The request's instant, written out only when a template asks for `now` or `today`.
    pub now: Option<Instant>,
    pub id: Option<Value>,
    /// The record the operation found, made or changed: borrowed from the store when it is
    /// still there (an update's), until an answer needs it as a value.
    pub record: Option<Cow<'s, Value>>,
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
        let now = || self.now.map(time::format_python_iso).unwrap_or_default();
        match name {
            "now" => Value::String(now()),
            "today" => Value::String(now().get(..10).unwrap_or_default().to_owned()),
            "params_set" => Value::Object(
                self.params
                    .iter()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            ),
            "id" => self.id.clone().unwrap_or(Value::Null),
            "record" => self.record.as_deref().cloned().unwrap_or(Value::Null),
            "items" => self.items.as_ref().map_or(Value::Null, |items| {
                Value::Array(items.iter().map(|item| item.as_ref().clone()).collect())
            }),
            "count" => self.items.as_ref().map_or(Value::Null, |i| json!(i.len())),
            _ => Value::Null,
        }
    }
}
