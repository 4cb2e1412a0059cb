//! The generic operations (list, get, create, update, delete, hook) on a service's store:
//! what each does to the collections and which template variables it leaves for the answer.

use std::borrow::Cow;

use serde_json::{Map, Value, json};

use super::render::render;
use super::{Outcome, Vars};
use crate::services::description::{
    CollectionDescription, Filter, IdFormat, Match, Operation, RouteDescription, SetWhen,
};
use crate::services::hooks;
use crate::services::python::{self, truthy};
use crate::services::store::Collections;
use crate::services::time::{self, DAY, Instant};

/// Runs a validated request's operation. `now` is the request instant; `log` false leaves
/// the side lists (`log_to`) as they are (the audit records no more calls).
pub(crate) fn execute<'s>(
    route: &RouteDescription,
    collections_desc: &[CollectionDescription],
    store: &'s mut Collections,
    params: Map<String, Value>,
    now: Instant,
    log: bool,
) -> Outcome<'s> {
    let mut vars = Vars {
        params,
        now: Some(now),
        ..Vars::default()
    };
    let description = |name: &str| collections_desc.iter().find(|c| c.name == name);
    let id_field = |name: &str| {
        description(name)
            .and_then(|c| c.id_field.clone())
            .unwrap_or_default()
    };
    let found = match &route.operation {
        Operation::List {
            collection,
            filters,
            limit,
            omit_fields,
        } => {
            // A list only reads: its outcome borrows the records it selected.
            let store: &'s Collections = store;
            let records = store.get(collection).map(Vec::as_slice).unwrap_or(&[]);
            vars.items = Some(list(
                records,
                filters,
                limit.as_deref(),
                omit_fields,
                &vars.params,
                now,
            ));
            true
        }
        Operation::Get {
            collection,
            key,
            also_match,
        } => {
            // A get only reads: its outcome borrows the record it found.
            let store: &'s Collections = store;
            let records = store.get(collection).map(Vec::as_slice).unwrap_or(&[]);
            let found = keyed(
                records,
                &id_field(collection),
                also_match,
                &vars.params,
                key,
            );
            vars.record = found.map(|i| Cow::Borrowed(&records[i]));
            found.is_some()
        }
        Operation::Create {
            collection,
            record,
            log_to,
        } => {
            let format = description(collection).and_then(|c| c.id_format.as_ref());
            create(
                store,
                collection,
                format,
                record,
                side_list(log_to, log),
                &mut vars,
            );
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
            let field = id_field(collection);
            let records = store.entry(collection.clone()).or_default();
            match keyed(records, &field, also_match, &vars.params, key) {
                Some(i) => {
                    update(&mut records[i], set, *set_when, also, &vars);
                    if let Some(log) = side_list(log_to, log) {
                        let entry = match log_record {
                            Some(template) => {
                                vars.record = Some(Cow::Owned(records[i].clone()));
                                render(template, &vars)
                            }
                            None => records[i].clone(),
                        };
                        store.entry(log.to_owned()).or_default().push(entry);
                    }
                    // The answer borrows the updated record from the store.
                    let store: &'s Collections = store;
                    vars.record = store
                        .get(collection)
                        .and_then(|records| records.get(i))
                        .map(Cow::Borrowed);
                    true
                }
                None => false,
            }
        }
        Operation::Delete {
            collection,
            key,
            log_to,
        } => delete(
            store,
            collection,
            &id_field(collection),
            key,
            side_list(log_to, log),
            &mut vars,
        ),
        Operation::Hook { hook, collection } => {
            return run_hook(hook, collection.as_deref(), store, vars, now);
        }
    };
    Outcome {
        found,
        status: None,
        body: None,
        vars,
    }
}

/// The side list a call appends to, unless `log` is false.
fn side_list(log_to: &Option<String>, log: bool) -> Option<&str> {
    log_to.as_deref().filter(|_| log)
}

/// `hook`: the named behaviour decides everything, its status and whole body included.
fn run_hook<'s>(
    hook: &str,
    collection: Option<&str>,
    store: &mut Collections,
    mut vars: Vars<'s>,
    now: Instant,
) -> Outcome<'s> {
    let result = hooks::run(
        hook,
        &hooks::HookInput {
            params: &vars.params,
            collection,
            now,
        },
        store,
    );
    vars.record = result.record.map(Cow::Owned);
    vars.items = result
        .items
        .map(|items| items.into_iter().map(Cow::Owned).collect());
    Outcome {
        found: result.found,
        status: result.status,
        body: result.body,
        vars,
    }
}

/// The position of the record whose id field (or one of `also`) equals the `key` parameter:
/// `record.get(field, "") == key`, as the Python services compare.
fn keyed(
    records: &[Value],
    field: &str,
    also: &[String],
    params: &Map<String, Value>,
    key: &str,
) -> Option<usize> {
    let key = params.get(key).unwrap_or(&Value::Null);
    let empty = json!("");
    records.iter().position(|r| {
        std::iter::once(field)
            .chain(also.iter().map(String::as_str))
            .any(|f| r.get(f).unwrap_or(&empty) == key)
    })
}

/// `list`: the records every filter lets through, at most `limit`, without `omit_fields`.
fn list<'s>(
    records: &'s [Value],
    filters: &[Filter],
    limit: Option<&str>,
    omit_fields: &[String],
    params: &Map<String, Value>,
    now: Instant,
) -> Vec<Cow<'s, Value>> {
    let mut items: Vec<&Value> = records
        .iter()
        .filter(|r| {
            filters.iter().all(|f| {
                let param = params.get(&f.param).unwrap_or(&Value::Null);
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
    if let Some(n) = limit.and_then(|l| params.get(l)).and_then(Value::as_i64) {
        python::truncate(&mut items, n);
    }
    items
        .into_iter()
        .map(|r| match r {
            Value::Object(o) if omit_fields.iter().any(|f| o.contains_key(f)) => {
                Cow::Owned(Value::Object(
                    o.iter()
                        .filter(|(k, _)| !omit_fields.contains(k))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                ))
            }
            _ => Cow::Borrowed(r),
        })
        .collect()
}

/// `create`: a record from the template, its id from `format` (number of records + 1), a copy
/// in `log_to`.
fn create(
    store: &mut Collections,
    collection: &str,
    format: Option<&IdFormat>,
    record: &Value,
    log_to: Option<&str>,
    vars: &mut Vars<'_>,
) {
    let records = store.entry(collection.to_owned()).or_default();
    vars.id = format.map(|f| Value::String(f.render(records.len() + 1)));
    let new = render(record, vars);
    records.push(new.clone());
    if let Some(log) = log_to {
        store.entry(log.to_owned()).or_default().push(new.clone());
    }
    vars.record = Some(Cow::Owned(new));
}

/// `delete`: the keyed record goes (to `log_to`, if named); false when none has the key.
fn delete(
    store: &mut Collections,
    collection: &str,
    field: &str,
    key: &str,
    log_to: Option<&str>,
    vars: &mut Vars<'_>,
) -> bool {
    let records = store.entry(collection.to_owned()).or_default();
    let Some(i) = keyed(records, field, &[], &vars.params, key) else {
        return false;
    };
    let removed = records.remove(i);
    if let Some(log) = log_to {
        store
            .entry(log.to_owned())
            .or_default()
            .push(removed.clone());
    }
    vars.record = Some(Cow::Owned(removed));
    true
}

/// `update` of one record: the `set` parameters given (per `set_when`), then `also`'s
/// templates.
fn update(
    record: &mut Value,
    set: &[String],
    set_when: SetWhen,
    also: &Map<String, Value>,
    vars: &Vars<'_>,
) {
    let extra: Vec<(String, Value)> = also
        .iter()
        .map(|(k, t)| (k.clone(), render(t, vars)))
        .collect();
    if let Value::Object(r) = record {
        for name in set {
            if let Some(v) = vars.params.get(name)
                && !v.is_null()
                && (set_when == SetWhen::NotNull || truthy(v))
            {
                r.insert(name.clone(), v.clone());
            }
        }
        for (k, v) in extra {
            r.insert(k, v);
        }
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
