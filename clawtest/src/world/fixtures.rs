//! Fixture seeding: how a task's `fixtures` reach its services' collections, as in
//! ClawEnvKit's entrypoint (see [`World::new`](super::World::new)), and the errors that say
//! which fixture key has the wrong shape.

use serde_json::{Map, Value};

use super::{ServiceState, WorldError};
use crate::services::store::{self, FixtureProblem};
use crate::services::time::Instant;

/// Seeds every service's `initial` collections from the task's fixtures.
pub(super) fn seed_fixtures(
    states: &mut [ServiceState],
    fixtures: &Value,
    clock: Instant,
) -> Result<(), WorldError> {
    // (service index, collection name, fixture key, value), in task order.
    let mut feeds: Vec<(usize, String, String, Value)> = Vec::new();
    match fixtures {
        Value::Null => {}
        Value::Array(_) => {
            for (i, s) in states.iter().enumerate() {
                if let Some(c) = s.desc.collections.iter().find(|c| c.fixture_fallback) {
                    feeds.push((i, c.name.clone(), "fixtures".into(), fixtures.clone()));
                }
            }
        }
        Value::Object(map) => {
            let mut unclaimed = Map::new();
            for (key, value) in map {
                let mut claimed = false;
                for (i, s) in states.iter().enumerate() {
                    if &s.desc.name == key
                        && s.desc.fixture_map
                        && let Value::Object(parts) = value
                    {
                        // ClawEnvKit's `load_fixtures(raw=True)` (web): each key of the
                        // service's map feeds its own collection.
                        for (part, records) in parts {
                            for c in s.desc.collections.iter() {
                                if c.fixture_keys.contains(part) {
                                    feeds.push((
                                        i,
                                        c.name.clone(),
                                        format!("{key}.{part}"),
                                        records.clone(),
                                    ));
                                }
                            }
                        }
                        claimed = true;
                        continue;
                    }
                    let targets: Vec<&str> = if &s.desc.name == key {
                        s.desc
                            .collections
                            .iter()
                            .find(|c| c.fixture_fallback)
                            .or_else(|| {
                                s.desc
                                    .collections
                                    .iter()
                                    .find(|c| !c.fixture_keys.is_empty())
                            })
                            .map(|c| vec![c.name.as_str()])
                            .unwrap_or_default()
                    } else if states.iter().any(|o| &o.desc.name == key) {
                        vec![]
                    } else {
                        s.desc
                            .collections
                            .iter()
                            .filter(|c| c.fixture_keys.contains(key))
                            .map(|c| c.name.as_str())
                            .collect()
                    };
                    for c in targets {
                        feeds.push((i, c.to_owned(), key.clone(), value.clone()));
                        claimed = true;
                    }
                }
                if !claimed {
                    unclaimed.insert(key.clone(), value.clone());
                }
            }
            let fallback = match unclaimed.len() {
                0 => None,
                1 => unclaimed.values().next().cloned(),
                _ => unclaimed.values().find(|v| v.is_array()).cloned(),
            };
            if let Some(fallback) = fallback
                && store::fixture_records(&fallback).is_ok()
            {
                for (i, s) in states.iter().enumerate() {
                    if feeds.iter().any(|f| f.0 == i) {
                        continue;
                    }
                    if let Some(c) = s.desc.collections.iter().find(|c| c.fixture_fallback) {
                        feeds.push((i, c.name.clone(), "fixtures".into(), fallback.clone()));
                    }
                }
            }
        }
        other => {
            return Err(WorldError::FixturesShape {
                found: store::describe(other),
            });
        }
    }
    let feeds_seen: Vec<usize> = feeds.iter().map(|f| f.0).collect();
    for (i, collection, key, value) in feeds {
        let service = states[i].desc.name.clone();
        let records = store::fixture_records(&value).map_err(|p| match p {
            FixtureProblem::NoList { found } => WorldError::FixtureShape {
                key: key.clone(),
                service: service.clone(),
                found,
            },
            FixtureProblem::NotARecord { index, found } => WorldError::FixtureRecord {
                key: key.clone(),
                service: service.clone(),
                index,
                found,
            },
        })?;
        states[i]
            .initial
            .entry(collection)
            .or_default()
            .extend(records);
    }
    for (i, s) in states.iter_mut().enumerate() {
        // ClawEnvKit's spotify uses its built-in library only when it has no fixture file.
        let seeded = feeds_seen.contains(&i);
        for c in &s.desc.collections {
            let records = s.initial.entry(c.name.clone()).or_default();
            if !seeded && records.is_empty() && !c.defaults.is_empty() {
                records.extend(c.defaults.iter().cloned());
            }
            store::prepare_records(c, records, clock);
        }
    }
    Ok(())
}
