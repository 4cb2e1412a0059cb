//! The service description format: a mock service as data.
//!
//! A [`ServiceDescription`] says everything the engine needs to serve a service: its
//! collections (in-memory record lists, seeded from fixtures), and its routes, each with
//! a request-parameter schema, one [`Operation`] on a collection, and response templates.
//! The built-in catalogue (`catalogue/*.yaml`) and task-local services use this same
//! format, so a generated service is data too.
//!
//! ```yaml
//! name: todo
//! description: Task/todo manager
//! collections:
//!   - name: tasks
//!     id_field: task_id
//!     id_format: "todo_{n:03}"     # n = number of records + 1 (ClawEnvKit's rule); width <= 32
//!     copy_id: true                # fixture records' `id` is copied into `task_id`
//!     fixture_keys: [tasks]        # task.yaml fixture keys feeding this collection
//!   - name: deleted                # a side list, shown by GET /todo/audit
//! audit_lists: [deleted]
//! routes:
//!   - endpoint: /todo/tasks/create
//!     action: create_task
//!     description: Create a task
//!     parameters:
//!       - {name: title, type: string, required: true}
//!       - {name: priority, type: string, default: medium}
//!     operation: {kind: create, collection: tasks,
//!                 record: {task_id: "${id}", title: "${params.title}", created_at: "${now}"}}
//!     response: {status: created, task: "${record}"}
//! ```
//!
//! # Templates
//!
//! `record`, `response` and `not_found` are JSON values in which strings are templates:
//!
//! - a string that is exactly one `${var}` is replaced by the variable's JSON value;
//! - `${var}` inside a longer string is interpolated as text (strings without quotes);
//! - `$${` writes a literal `${`;
//! - an object `{"$or": [a, b, …]}` is the first *truthy* alternative (Python's `or`:
//!   null, false, 0, "", [] and {} are falsy), else the last;
//! - an object `{"$default": [a, b, …]}` is the first non-null alternative (Python's
//!   `record.get(key, default)`).
//!
//! Variables: `params.NAME` (the validated request parameter, defaults applied),
//! `params_set` (the parameters that are not null: pydantic's `exclude_none`), `id` (the
//! new record's id), `now` (the request instant, Python `isoformat()` style), `today`
//! (its `YYYY-MM-DD`), `record` (the created, updated, deleted or fetched record) and
//! `record.FIELD`, `items` and `count` (a list operation's result).
//!
//! # Operations
//!
//! `list` (filters: `equals`, `equals_ignore_case`, `contains`, `contains_ignore_case`,
//! `has`, `at_least`, `at_most`, `within_days`; then `limit`; `omit_fields` hides fields from
//! the listed records), `get` (by the id field, or
//! also by the `also_match` fields), `create` (an id from
//! `id_format`, or none for an outbox), `update`, `delete`, and `hook` — a named Rust
//! function of clawtest's hooks table (`services/hooks/`) for the few routes that need
//! logic (text search with ClawEnvKit's tokenizers, calendar date windows, spotify
//! playback). Routes are matched on the service's `prefix` (default: its name).

use crate::method::Method;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One mock service, as data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServiceDescription {
    /// The service name; also the first path segment of its routes (`/todo/...`) unless
    /// `prefix` says otherwise.
    pub name: String,
    /// The first path segment of the routes when it is not the name: `web_real` serves
    /// `/web/...` like `web`, so the two cannot be in one task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// One line for humans and for generated tool lists.
    #[serde(default)]
    pub description: String,
    /// The record lists the service keeps, in declaration order.
    #[serde(default)]
    pub collections: Vec<CollectionDescription>,
    /// Whether a fixture given under the service's own name as a map feeds each collection
    /// from its own key (ClawEnvKit's `load_fixtures(raw=True)`: web's `{search_results,
    /// pages}`), rather than the first list in it feeding the main collection.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fixture_map: bool,
    /// Collections shown next to `calls` by `GET /<svc>/audit` (ClawEnvKit's side lists).
    #[serde(default)]
    pub audit_lists: Vec<String>,
    /// The body of `GET /<svc>/health`, for the services where ClawEnvKit has that route
    /// (web, ocr, caption, documents); without it the path is an unknown route, as there.
    /// A template whose `${count}` is the number of records in the first collection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<Value>,
    /// The routes, in declaration order.
    #[serde(default)]
    pub routes: Vec<RouteDescription>,
}

impl ServiceDescription {
    /// The first path segment of this service's routes.
    pub(crate) fn prefix(&self) -> &str {
        self.prefix.as_deref().unwrap_or(&self.name)
    }

    /// All routes, in declaration order.
    pub fn routes(&self) -> &[RouteDescription] {
        &self.routes
    }

    /// The route answering `endpoint` (a path like `/todo/tasks/create`), if any.
    pub(crate) fn route(&self, endpoint: &str) -> Option<&RouteDescription> {
        self.routes.iter().find(|r| r.endpoint == endpoint)
    }

    /// The collection named `name`, if any.
    pub(crate) fn collection(&self, name: &str) -> Option<&CollectionDescription> {
        self.collections.iter().find(|c| c.name == name)
    }

    /// Checks internal consistency: routes under `/<name>/`, operations naming declared
    /// collections and parameters. Returns the first problem found. Hook names are checked
    /// against the hooks table by `catalogue::check`, which calls this first.
    pub(crate) fn check(&self) -> Result<(), String> {
        let prefix = format!("/{}/", self.prefix());
        for list in &self.audit_lists {
            if self.collection(list).is_none() {
                return Err(format!("audit_lists names unknown collection `{list}`"));
            }
        }
        for c in &self.collections {
            if let Some(rebase) = &c.rebase_dates
                && rebase.newest_days_ago.is_some() == rebase.earliest_days_ahead.is_some()
            {
                return Err(format!(
                    "collection `{}`: rebase_dates needs exactly one of newest_days_ago and earliest_days_ahead",
                    c.name
                ));
            }
        }
        for r in &self.routes {
            let here = |msg: String| format!("route {}: {msg}", r.endpoint);
            if !r.endpoint.starts_with(&prefix) {
                return Err(here(format!("endpoint must start with `{prefix}`")));
            }
            let (collection, key, extra) = match &r.operation {
                Operation::List {
                    collection,
                    filters,
                    limit,
                    ..
                } => (
                    collection,
                    None,
                    filters
                        .iter()
                        .map(|f| &f.param)
                        .chain(limit.iter())
                        .collect::<Vec<_>>(),
                ),
                Operation::Get {
                    collection, key, ..
                } => (collection, Some(key), vec![]),
                Operation::Create {
                    collection, log_to, ..
                } => {
                    if let Some(log) = log_to
                        && self.collection(log).is_none()
                    {
                        return Err(here(format!("log_to names unknown collection `{log}`")));
                    }
                    (collection, None, vec![])
                }
                // Whether the hook exists is the catalogue's check: the hooks table is above
                // the description format, which knows hooks only by name.
                Operation::Hook { collection, .. } => match collection {
                    Some(c) => (c, None, vec![]),
                    None => continue,
                },
                Operation::Update {
                    collection,
                    key,
                    set,
                    log_to,
                    ..
                } => {
                    if let Some(log) = log_to
                        && self.collection(log).is_none()
                    {
                        return Err(here(format!("log_to names unknown collection `{log}`")));
                    }
                    (collection, Some(key), set.iter().collect())
                }
                Operation::Delete {
                    collection,
                    key,
                    log_to,
                } => {
                    if let Some(log) = log_to
                        && self.collection(log).is_none()
                    {
                        return Err(here(format!("log_to names unknown collection `{log}`")));
                    }
                    (collection, Some(key), vec![])
                }
            };
            let Some(c) = self.collection(collection) else {
                return Err(here(format!("unknown collection `{collection}`")));
            };
            if key.is_some() && c.id_field.is_none() {
                return Err(here(format!("collection `{collection}` has no id_field")));
            }
            for p in key.into_iter().chain(extra) {
                if !r.parameters.iter().any(|q| &q.name == p) {
                    return Err(here(format!("operation names undeclared parameter `{p}`")));
                }
            }
        }
        Ok(())
    }
}

/// A record list kept by a service.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CollectionDescription {
    /// The collection's name, as operations, `log_to` and `audit_lists` refer to it.
    pub name: String,
    /// The field that identifies a record (`task_id`, `message_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_field: Option<String>,
    /// How created records get their id: literal text with one `{n}` or `{n:0W}`
    /// (zero-padded to width W), where n = number of records in the collection + 1.
    // Read once, with the description: a bad one is an error where it is written. (A comment,
    // not documentation: the doc text is the committed JSON Schema's.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub id_format: Option<IdFormat>,
    /// Copy a fixture record's `id` into `id_field` when `id_field` is absent.
    #[serde(default)]
    pub copy_id: bool,
    /// The task.yaml fixture keys that seed this collection (the service name always does).
    #[serde(default)]
    pub fixture_keys: Vec<String>,
    /// Seed from the task's fixtures as a whole when no fixture key names this service
    /// (ClawEnvKit's `/tmp/fixtures.json` fallback). At most one collection per service.
    #[serde(default)]
    pub fixture_fallback: bool,
    /// Shift date fields at load so the fixtures' dates sit at a fixed distance from the
    /// clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebase_dates: Option<RebaseDates>,
    /// The records when no fixture feeds the service at all (spotify's built-in library).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub defaults: Vec<Value>,
}

/// ClawEnvKit's date rules: fixture dates are absolute and go stale, so every record's
/// `field` (and `also_fields`) is shifted by one delta. Exactly one anchor is given:
///
/// - `newest_days_ago` (gmail): the newest `field` lands at `clock − N days`;
/// - `earliest_days_ahead` (calendar): the earliest `field` lands on `clock + N days`, at
///   its own hour and minute (seconds zeroed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RebaseDates {
    /// The date field whose newest or earliest value sets the delta.
    pub field: String,
    /// More date fields shifted by the same delta (they do not set it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also_fields: Vec<String>,
    /// The newest `field` lands this many days before the clock (gmail).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub newest_days_ago: Option<i64>,
    /// The earliest `field` lands this many days after the clock (calendar).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub earliest_days_ahead: Option<i64>,
}

/// Whether a route takes a JSON body and whether it may be absent.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum BodyRule {
    /// FastAPI `req: Model` — an absent body is a 422.
    #[default]
    Required,
    /// FastAPI `req: Model | None = None` — an absent or `null` body means all defaults.
    Optional,
}

/// One HTTP route of a service.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouteDescription {
    /// The path, e.g. `/todo/tasks/create`.
    pub endpoint: String,
    /// The HTTP method; ClawEnvKit's service routes are all POST.
    #[serde(default)]
    pub method: Method,
    /// The canonical action name recorded in the audit log (ClawEnvKit's `actions`).
    pub action: String,
    /// One line, used for generated tool descriptions.
    #[serde(default)]
    pub description: String,
    /// Whether the request body may be absent (default: required).
    #[serde(default)]
    pub body: BodyRule,
    /// With `body: optional`, the body assumed when none is sent (calendar's
    /// `ListEventsRequest(date="2026-03-02")`); default `{}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub empty_body: Option<Value>,
    /// The request body's fields, in declaration order (the order of the audit `params`).
    #[serde(default)]
    pub parameters: Vec<ParameterDescription>,
    /// What the route does to its collection.
    pub operation: Operation,
    /// The response when the operation succeeds (a template).
    pub response: Value,
    /// The response when a keyed operation finds no record (a template; HTTP 200, as
    /// ClawEnvKit answers "not found").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_found: Option<Value>,
}

impl RouteDescription {
    /// The names of the body's parameters, in declaration order.
    pub(crate) fn parameter_names(&self) -> Vec<&str> {
        self.parameters
            .iter()
            .map(|parameter| parameter.name.as_str())
            .collect()
    }

    /// The request body as a JSON Schema object, for OpenAI-style `tools.json`:
    /// `{"type":"object","properties":{..},"required":[..]}`.
    pub(crate) fn parameters_schema(&self) -> Value {
        let mut properties = serde_json::Map::new();
        let mut required = Vec::new();
        for p in &self.parameters {
            properties.insert(p.name.clone(), p.json_schema());
            if p.required {
                required.push(Value::String(p.name.clone()));
            }
        }
        serde_json::json!({"type": "object", "properties": properties, "required": required})
    }
}

/// One request-body field (JSON-Schema-ish).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ParameterDescription {
    /// The field's key in the JSON body; also the name templates read (`params.NAME`).
    pub name: String,
    /// The JSON type the value must have, after pydantic's lax coercion (`type`).
    #[serde(rename = "type")]
    pub ty: ParamType,
    /// Element type when `type: array`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<ParamType>,
    /// One line for the generated tool's parameter schema.
    #[serde(default)]
    pub description: String,
    /// Absent → 422 `missing`.
    #[serde(default)]
    pub required: bool,
    /// `null` is accepted (Python `X | None`).
    #[serde(default)]
    pub nullable: bool,
    /// The value when absent and not required; `null` when not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
}

impl ParameterDescription {
    fn json_schema(&self) -> Value {
        let mut schema = serde_json::Map::new();
        schema.insert("type".into(), Value::String(self.ty.as_str().into()));
        if let Some(items) = self.items {
            schema.insert("items".into(), serde_json::json!({"type": items.as_str()}));
        }
        if !self.description.is_empty() {
            schema.insert(
                "description".into(),
                Value::String(self.description.clone()),
            );
        }
        if let Some(default) = &self.default {
            schema.insert("default".into(), default.clone());
        }
        Value::Object(schema)
    }
}

/// The JSON types a parameter can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ParamType {
    /// A JSON string; nothing else is turned into one.
    String,
    /// A whole number; also `true`/`false`, whole floats and numeric strings, as pydantic's
    /// lax mode converts them.
    Integer,
    /// Any number, kept as a float (`200` reads as `200.0`); also booleans and numeric
    /// strings.
    Number,
    /// `true` or `false`; also 0 and 1, and strings such as `"yes"`, `"off"`, `"t"`.
    Boolean,
    /// A JSON list (its elements typed by `items`, when given).
    Array,
    /// A JSON map.
    Object,
}

impl ParamType {
    /// The JSON Schema name of the type (`"string"`, `"integer"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ParamType::String => "string",
            ParamType::Integer => "integer",
            ParamType::Number => "number",
            ParamType::Boolean => "boolean",
            ParamType::Array => "array",
            ParamType::Object => "object",
        }
    }
}

/// What a route does to its collection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Operation {
    /// Records passing every filter, in collection order, then cut to `limit`
    /// (Python slice semantics: a negative limit drops from the end).
    List {
        /// The collection listed.
        collection: String,
        /// The filters a record must all pass; none lists every record.
        #[serde(default)]
        filters: Vec<Filter>,
        /// The parameter holding the maximum number of results.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<String>,
        /// Fields left out of every listed record (config's list view hides secrets
        /// that only `get` shows).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        omit_fields: Vec<String>,
    },
    /// The first record whose id field (or one of `also_match`) equals parameter `key`.
    Get {
        /// The collection searched.
        collection: String,
        /// The parameter holding the id looked for.
        key: String,
        /// More record fields compared with the key (config's `or intg.get("id") == …`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        also_match: Vec<String>,
    },
    /// Appends the `record` template (with a fresh id when the collection has an
    /// `id_format`). With no id, this is "append to an outbox" (gmail send). A copy is
    /// appended to `log_to` too (calendar's `created_events`).
    Create {
        /// The collection appended to.
        collection: String,
        /// The new record (a template; `${id}` is the fresh id).
        record: Value,
        /// A side collection that also gets a copy of the new record.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        log_to: Option<String>,
    },
    /// On the first record whose id (or one of `also_match`) equals parameter `key`: sets
    /// each parameter in `set`
    /// (when not null, or when truthy with `set_when: truthy`), then each field of `also`
    /// (templates, e.g. helpdesk close's `status: closed`). Appends to `log_to` the
    /// `log_record` template, or a copy of the updated record.
    Update {
        /// The collection holding the record.
        collection: String,
        /// The parameter holding the id of the record to update.
        key: String,
        /// More record fields compared with the key.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        also_match: Vec<String>,
        /// The parameters copied into the record's field of the same name.
        #[serde(default)]
        set: Vec<String>,
        /// When a parameter in `set` is written (default: when not null).
        #[serde(default)]
        set_when: SetWhen,
        /// Fields written after `set`, by name (templates).
        #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
        also: serde_json::Map<String, Value>,
        /// A side collection that gets an entry for the update.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        log_to: Option<String>,
        /// The entry appended to `log_to` (a template); default: the updated record.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        log_record: Option<Value>,
    },
    /// Removes the first record whose id equals parameter `key`, appending it to `log_to`.
    Delete {
        /// The collection holding the record.
        collection: String,
        /// The parameter holding the id of the record to remove.
        key: String,
        /// A side collection the removed record is appended to (todo's `deleted`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        log_to: Option<String>,
    },
    /// A named Rust hook (clawtest's `services/hooks/`) for the few routes that need logic: text
    /// search, date windows, derived views. It reads the parameters and the service's
    /// collections and sets `record`, `items` or an HTTP status; the response templates
    /// still shape the envelope.
    Hook {
        /// The hook's name: one of the names the hooks table lists.
        hook: String,
        /// The collection the hook works on, when it uses one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        collection: Option<String>,
    },
}

impl Operation {
    /// The side collection a successful call appends an entry to (`log_to`).
    pub(crate) fn log_to(&self) -> Option<&str> {
        match self {
            Operation::Create { log_to, .. }
            | Operation::Update { log_to, .. }
            | Operation::Delete { log_to, .. } => log_to.as_deref(),
            Operation::List { .. } | Operation::Get { .. } | Operation::Hook { .. } => None,
        }
    }
}

/// When an update writes a parameter.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum SetWhen {
    /// `if req.x is not None` (most services).
    #[default]
    NotNull,
    /// `if req.x:` (config).
    Truthy,
}

/// A list filter on one parameter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Filter {
    /// The request parameter compared; a null parameter disables the filter.
    pub param: String,
    /// The record field compared with it.
    pub field: String,
    /// More record fields; the filter passes when any of `field` and these matches
    /// (spotify's query over title, artist and album).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also_fields: Vec<String>,
    /// How the two compare (`match`).
    #[serde(rename = "match")]
    pub matching: Match,
    /// A parameter value that disables the filter (todo's `status: "all"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub any: Option<Value>,
    /// A falsy parameter ("", 0, false) disables the filter too (Python `if req.x and …`);
    /// null always does.
    #[serde(default)]
    pub skip_falsy: bool,
}

/// How a filter compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Match {
    /// `record.get(field, "") == param`.
    Equals,
    /// Both strings, equal ignoring case.
    EqualsIgnoreCase,
    /// The parameter is a substring of the record's field (`req.query in c["name"]`).
    Contains,
    /// The same, ignoring case.
    ContainsIgnoreCase,
    /// The record's field (a list) holds the parameter (`req.tag in j["tags"]`).
    Has,
    /// String comparison `record.get(field, "") >= param` (ISO dates compare as text).
    AtLeast,
    /// String comparison `record.get(field, "") <= param`.
    AtMost,
    /// The record's date field is no earlier than `now − param days`. Records whose date
    /// does not parse are kept (ClawEnvKit would fail to start instead).
    WithinDays,
}

/// A parsed `id_format`: `prefix{n:0W}suffix`, written back as it was read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct IdFormat {
    /// The format as written.
    text: String,
    prefix: String,
    width: usize,
    suffix: String,
}

/// The widest `{n:0W}` an `id_format` may ask for: an id of more digits is no id a service
/// would hand out, and a width past 65,535 is one Rust's formatting cannot pad to.
pub const MAX_ID_WIDTH: usize = 32;

impl IdFormat {
    /// Reads an `id_format`; the error says what a valid one looks like.
    pub(crate) fn parse(format: &str) -> Result<IdFormat, BadIdFormat> {
        let bad = || BadIdFormat::Shape {
            format: format.to_owned(),
        };
        let start = format.find('{').ok_or_else(bad)?;
        let end = start + format[start..].find('}').ok_or_else(bad)?;
        let inner = &format[start + 1..end];
        let width = match inner.strip_prefix("n") {
            Some("") => 0,
            Some(spec) => spec
                .strip_prefix(":0")
                .and_then(|w| w.parse().ok())
                .ok_or_else(bad)?,
            None => return Err(bad()),
        };
        if width > MAX_ID_WIDTH {
            return Err(BadIdFormat::TooWide {
                format: format.to_owned(),
                width,
            });
        }
        let suffix = &format[end + 1..];
        if suffix.contains('{') {
            return Err(bad());
        }
        Ok(IdFormat {
            text: format.to_owned(),
            prefix: format[..start].to_owned(),
            width,
            suffix: suffix.to_owned(),
        })
    }

    /// The id of record number `n`.
    pub(crate) fn render(&self, n: usize) -> String {
        format!("{}{:0w$}{}", self.prefix, n, self.suffix, w = self.width)
    }
}

/// Why an `id_format` cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadIdFormat {
    /// Not one `{n}` or `{n:0W}`.
    #[error("id_format `{format}` must contain one `{{n}}` or `{{n:0W}}`")]
    Shape {
        /// The format as written.
        format: String,
    },
    /// A width past [`MAX_ID_WIDTH`].
    #[error(
        "id_format `{format}` pads ids to {width} digits, more than the {MAX_ID_WIDTH} an id may have: write a width of at most {MAX_ID_WIDTH}"
    )]
    TooWide {
        /// The format as written.
        format: String,
        /// The width it asks for.
        width: usize,
    },
}

impl TryFrom<String> for IdFormat {
    type Error = BadIdFormat;

    fn try_from(format: String) -> Result<Self, Self::Error> {
        IdFormat::parse(&format)
    }
}

impl From<IdFormat> for String {
    fn from(format: IdFormat) -> Self {
        format.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_format_pads_like_python() {
        let f = IdFormat::parse("todo_{n:03}").unwrap();
        assert_eq!(f.render(7), "todo_007");
        assert_eq!(f.render(1234), "todo_1234");
        assert_eq!(IdFormat::parse("x{n}y").unwrap().render(5), "x5y");
        assert!(IdFormat::parse("todo").is_err());
        assert!(IdFormat::parse("{m}").is_err());
        let widest = format!("x{{n:0{MAX_ID_WIDTH}}}");
        assert_eq!(IdFormat::parse(&widest).unwrap().render(1).len(), 33);
        assert_eq!(
            IdFormat::parse("x{n:070000}"),
            Err(BadIdFormat::TooWide {
                format: "x{n:070000}".into(),
                width: 70_000
            })
        );
    }

    #[test]
    fn an_id_format_is_read_once_with_its_description_and_written_back_as_it_was() {
        let collection = |format: &str| {
            serde_json::from_value::<CollectionDescription>(
                serde_json::json!({"name": "tasks", "id_field": "task_id", "id_format": format}),
            )
        };
        let read = collection("todo_{n:00}").unwrap();
        assert_eq!(read.id_format.as_ref().unwrap().render(4), "todo_4");
        assert_eq!(
            serde_json::to_value(&read).unwrap()["id_format"],
            "todo_{n:00}"
        );
        let error = collection("todo_{m}").unwrap_err().to_string();
        assert!(
            error.contains("id_format `todo_{m}` must contain one `{n}` or `{n:0W}`"),
            "{error}"
        );
    }
}
