//! Differential tests against ClawEnvKit's mock services, driven by the recorded fixtures
//! in `tests/fixtures/parity/<service>.json` (format and provenance: the README there).
//!
//! Each fixture file is one test case: a World is built from the file's services, fixtures
//! and clock, the requests are sent in order through [`World::handle`], and every answer
//! must have the recorded status and body (ClawEnvKit's, with the file's annotations
//! applied). A failure names the file, the request index and the JSON pointer of the first
//! difference. A file must call every route of its service, and one more case checks that
//! every built-in service has a fixture file, so coverage cannot drop silently.
//!
//! `harness = false` (libtest-mimic): the cases come from the files, not from the code.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clawtest::services::{Catalogue, ToolBinding};
use clawtest::world::{World, WorldOptions};
use libtest_mimic::{Arguments, Failed, Trial};
use serde::Deserialize;
use serde_json::{Map, Value, json};

fn main() {
    let args = Arguments::from_args();
    let directory = fixture_directory();
    let mut trials = vec![Trial::test("every_builtin_service_has_a_fixture", {
        let directory = directory.clone();
        move || every_service_has_a_fixture(&directory)
    })];
    for path in fixture_files(&directory) {
        let name = stem(&path);
        for format in FixtureFormat::ALL
            .into_iter()
            .filter(|f| applies(&path, *f))
        {
            let label = match format {
                FixtureFormat::AsRecorded => format!("parity::{name}"),
                other => format!("parity::{name}::{}", other.name()),
            };
            let path = path.clone();
            trials.push(Trial::test(label, move || {
                run_fixture(&path, Coverage::EveryRoute, format)
            }));
        }
    }
    // More sequences for one service each (fixture shapes that change the answers:
    // `id` copies, spotify's fixture library, web's fixture keys); any file name.
    for path in fixture_files(&directory.join("cases")) {
        let name = stem(&path);
        trials.push(Trial::test(format!("parity::cases::{name}"), move || {
            run_fixture(&path, Coverage::Some, FixtureFormat::AsRecorded)
        }));
    }
    libtest_mimic::run(&args, trials).exit();
}

/// Whether `format` applies to the file's fixtures (a file that does not read is run, to
/// fail with its error).
fn applies(path: &Path, format: FixtureFormat) -> bool {
    let value: Option<Value> = std::fs::read_to_string(path)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok());
    let Some(value) = value else {
        return format == FixtureFormat::AsRecorded;
    };
    let service = value["service"].as_str().unwrap_or("");
    format.apply(service, &value["fixtures"]).is_some()
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Whether a file must call every route of its service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Coverage {
    EveryRoute,
    Some,
}

/// The shapes ClawEnvKit's entrypoint and `load_fixtures` accept for one service's
/// records, all giving the same records and so the same answers. A file whose fixtures
/// are one key holding a list (`{tasks: [...]}`, the recorded shape) is run in each; other
/// files only as recorded (their other shapes are in `cases/`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FixtureFormat {
    /// `{tasks: [...]}`: a resource key (or the service's name) holding the list.
    AsRecorded,
    /// `[...]`: task.yaml `fixtures` a bare list (the entrypoint writes it to
    /// `/tmp/fixtures.json`, every service's fallback).
    List,
    /// `{todo: {tasks: [...]}}`: keyed by the service, a single-key dict (unwrapped).
    SingleKeyDict,
    /// `{todo: {about: "...", tasks: [...], later: [...]}}`: keyed by the service, a
    /// multi-key dict (written as is; `load_fixtures` takes its first list).
    MultiKeyDict,
}

impl FixtureFormat {
    const ALL: [FixtureFormat; 4] = [
        FixtureFormat::AsRecorded,
        FixtureFormat::List,
        FixtureFormat::SingleKeyDict,
        FixtureFormat::MultiKeyDict,
    ];

    fn name(self) -> &'static str {
        match self {
            FixtureFormat::AsRecorded => "as_recorded",
            FixtureFormat::List => "list",
            FixtureFormat::SingleKeyDict => "single_key_dict",
            FixtureFormat::MultiKeyDict => "multi_key_dict",
        }
    }

    /// The fixtures in this shape, or None when the file's fixtures are not one key
    /// holding a list of one service (then only `AsRecorded` applies).
    fn apply(self, service: &str, fixtures: &Value) -> Option<Value> {
        if self == FixtureFormat::AsRecorded {
            return Some(fixtures.clone());
        }
        let map = fixtures.as_object().filter(|m| m.len() == 1)?;
        let (key, records) = map.iter().next()?;
        records.as_array()?;
        Some(match self {
            FixtureFormat::AsRecorded => unreachable!("handled above"),
            FixtureFormat::List => records.clone(),
            FixtureFormat::SingleKeyDict => json!({ service: { key.as_str(): records } }),
            FixtureFormat::MultiKeyDict => json!({ service: {
                "about": "a note before the records",
                key.as_str(): records,
                "later": [{"ignored": true}],
            }}),
        })
    }
}

fn fixture_directory() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/parity")
}

/// The `*.json` files of the fixture directory, sorted.
fn fixture_files(directory: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(directory)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

fn every_service_has_a_fixture(directory: &Path) -> Result<(), Failed> {
    let catalogue = Catalogue::builtin();
    let services: BTreeSet<String> = catalogue.names().map(str::to_owned).collect();
    let files: BTreeSet<String> = fixture_files(directory)
        .iter()
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    let missing: Vec<&String> = services.difference(&files).collect();
    let unknown: Vec<&String> = files.difference(&services).collect();
    if missing.is_empty() && unknown.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{}: fixture files must match the built-in services one to one; missing: {missing:?}; \
         not a built-in service: {unknown:?}",
        directory.display()
    )
    .into())
}

/// One fixture file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Fixture {
    /// The service this file covers; must equal the file name.
    service: String,
    /// What the sequence shows, and how the expected bodies were derived.
    #[allow(dead_code)]
    about: String,
    /// The ClawEnvKit source files read, with the commit of the version read.
    #[allow(dead_code)]
    sources: Vec<Source>,
    /// The services of the World (the task's services).
    services: Vec<String>,
    /// The trial clock; request n (counting recorded requests) happens at clock + n s.
    clock: String,
    /// The task's fixtures, in ClawEnvKit's fixture format.
    #[serde(default)]
    fixtures: Value,
    #[serde(default)]
    tools: Vec<ToolBinding>,
    requests: Vec<Request>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Source {
    #[allow(dead_code)]
    path: String,
    #[allow(dead_code)]
    commit: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Request {
    /// What this request checks.
    note: String,
    #[serde(default = "post")]
    method: String,
    path: String,
    /// The JSON body; absent means an empty body.
    #[serde(default, deserialize_with = "present")]
    body: Option<Value>,
    /// A body sent as is (malformed JSON); exclusive with `body`.
    #[serde(default)]
    raw_body: Option<String>,
    status: u16,
    /// ClawEnvKit's response body.
    expected: Value,
    /// Values ClawEnvKit draws afresh on each run (`datetime.now()`, `uuid4()`) that
    /// clawtest fixes through the trial clock or numbered ids: compared exactly.
    #[serde(default)]
    pinned: Vec<Annotation>,
    /// Values left out of the comparison (present on both sides, any value).
    #[serde(default)]
    ignore: Vec<Annotation>,
    /// Arrays compared as multisets (ClawEnvKit builds them from a Python `set`).
    #[serde(default)]
    unordered: Vec<Annotation>,
    /// Deliberate differences: clawtest answers `clawtest` at `pointer` (or nothing there
    /// when `clawtest` is absent) where ClawEnvKit answers what `expected` says.
    #[serde(default)]
    deviations: Vec<Deviation>,
}

fn post() -> String {
    "POST".to_owned()
}

/// Distinguishes an absent field (None) from an explicit `null` (Some(Null)).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Annotation {
    pointer: String,
    /// Why, naming what ClawEnvKit does there.
    why: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Deviation {
    pointer: String,
    #[serde(default, deserialize_with = "present")]
    clawtest: Option<Value>,
    reason: String,
}

fn run_fixture(path: &Path, coverage: Coverage, format: FixtureFormat) -> Result<(), Failed> {
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{file}: {e}"))?;
    let mut fixture: Fixture =
        serde_json::from_str(&text).map_err(|e| format!("{file}: not a parity fixture: {e}"))?;
    let catalogue = Catalogue::builtin();
    if coverage == Coverage::EveryRoute {
        if Some(fixture.service.as_str()) != path.file_stem().and_then(|s| s.to_str()) {
            return Err(format!("{file}: `service` is `{}`", fixture.service).into());
        }
        // Every route of the service is exercised, so coverage cannot drop within a file.
        if let Some(description) = catalogue.get(&fixture.service) {
            let uncalled: Vec<&str> = description
                .routes()
                .iter()
                .map(|route| route.endpoint.as_str())
                .filter(|endpoint| !fixture.requests.iter().any(|r| r.path == *endpoint))
                .collect();
            if !uncalled.is_empty() {
                return Err(format!("{file}: no request calls {uncalled:?}").into());
            }
        }
    } else if catalogue.get(&fixture.service).is_none() {
        return Err(format!("{file}: `{}` is not a built-in service", fixture.service).into());
    }
    match format.apply(&fixture.service, &fixture.fixtures) {
        Some(fixtures) => fixture.fixtures = fixtures,
        None => return Err(format!("{file}: the {} shape does not apply", format.name()).into()),
    }
    let mut world = World::new(
        &catalogue,
        &fixture.services,
        &fixture.fixtures,
        &fixture.tools,
        WorldOptions {
            clock: fixture.clock.clone(),
            ..WorldOptions::default()
        },
    )
    .map_err(|e| format!("{file}: the World does not build: {e}"))?;
    for (index, request) in fixture.requests.iter().enumerate() {
        let here = format!(
            "{file} request {index} ({} {} — {})",
            request.method, request.path, request.note
        );
        check_request(&mut world, request).map_err(|problem| format!("{here}: {problem}"))?;
    }
    Ok(())
}

fn check_request(world: &mut World, request: &Request) -> Result<(), String> {
    let body = match (&request.body, &request.raw_body) {
        (Some(_), Some(_)) => return Err("give `body` or `raw_body`, not both".into()),
        (Some(value), None) => value.to_string().into_bytes(),
        (None, Some(raw)) => raw.clone().into_bytes(),
        (None, None) => Vec::new(),
    };
    let mut expected = request.expected.clone();
    for deviation in &request.deviations {
        if deviation.reason.trim().is_empty() {
            return Err(format!(
                "deviation at {} gives no reason",
                deviation.pointer
            ));
        }
        patch(
            &mut expected,
            &deviation.pointer,
            deviation.clawtest.clone(),
        )
        .map_err(|e| format!("deviation: {e}"))?;
    }
    let annotations = request
        .pinned
        .iter()
        .chain(&request.ignore)
        .chain(&request.unordered);
    for annotation in annotations {
        if annotation.why.trim().is_empty() {
            return Err(format!(
                "annotation at {} gives no reason",
                annotation.pointer
            ));
        }
        if expected.pointer(&annotation.pointer).is_none() {
            return Err(format!(
                "annotation pointer {} is not in the expected body",
                annotation.pointer
            ));
        }
    }
    let answer = world.handle(&request.method, &request.path, &body);
    let mut actual = answer.body;
    for annotation in &request.ignore {
        if actual.pointer(&annotation.pointer).is_none() {
            return Err(format!(
                "the answer has nothing at {} (ignored, but must be present)\nanswer: {}",
                annotation.pointer,
                pretty(&actual)
            ));
        }
        patch(&mut expected, &annotation.pointer, Some(Value::Null))?;
        patch(&mut actual, &annotation.pointer, Some(Value::Null))?;
    }
    for annotation in &request.unordered {
        for side in [&mut expected, &mut actual] {
            if let Some(Value::Array(items)) = side.pointer_mut(&annotation.pointer) {
                items.sort_by_cached_key(|v| v.to_string());
            }
        }
    }
    if answer.status != request.status {
        return Err(format!(
            "status {} instead of {}\nanswer: {}",
            answer.status,
            request.status,
            pretty(&actual)
        ));
    }
    if let Some((pointer, what)) = first_difference(&expected, &actual, String::new()) {
        let pointer = if pointer.is_empty() { "/" } else { &pointer };
        return Err(format!(
            "body differs at {pointer}: {what}\nanswer: {}",
            pretty(&actual)
        ));
    }
    Ok(())
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// Sets the value at `pointer` (adding a key to an object, or replacing an array
/// element, or the whole value for the pointer ""), or removes it when `value` is None.
fn patch(target: &mut Value, pointer: &str, value: Option<Value>) -> Result<(), String> {
    if pointer.is_empty() {
        *target = value.ok_or("the whole body cannot be removed")?;
        return Ok(());
    }
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        return Err(format!("`{pointer}` is not a JSON pointer"));
    };
    let key = last.replace("~1", "/").replace("~0", "~");
    let Some(container) = target.pointer_mut(parent) else {
        return Err(format!("nothing at {parent} (for {pointer})"));
    };
    match (container, value) {
        (Value::Object(map), Some(v)) => {
            map.insert(key, v);
        }
        (Value::Object(map), None) => {
            map.shift_remove(&key)
                .ok_or_else(|| format!("nothing to remove at {pointer}"))?;
        }
        (Value::Array(items), value) => {
            let index: usize = key
                .parse()
                .map_err(|_| format!("{pointer}: `{key}` is not an array index"))?;
            if index >= items.len() {
                return Err(format!("{pointer}: index out of range"));
            }
            match value {
                Some(v) => items[index] = v,
                None => {
                    items.remove(index);
                }
            }
        }
        _ => return Err(format!("{parent} is neither an object nor an array")),
    }
    Ok(())
}

/// The JSON pointer and a description of the first difference between two values, in
/// document order. An integer never equals a float (`100` is not `100.0`: Python prints
/// them differently) and object keys compare in order (ClawEnvKit's dicts keep insertion
/// order).
fn first_difference(expected: &Value, actual: &Value, at: String) -> Option<(String, String)> {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (key, value) in e {
                let here = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
                match a.get(key) {
                    None => return Some((here, format!("missing; expected {value}"))),
                    Some(other) => {
                        if let Some(found) = first_difference(value, other, here) {
                            return Some(found);
                        }
                    }
                }
            }
            if let Some(extra) = a.keys().find(|k| !e.contains_key(*k)) {
                let here = format!("{at}/{}", extra.replace('~', "~0").replace('/', "~1"));
                return Some((here, format!("unexpected key with {}", a[extra])));
            }
            key_order(e, a).map(|what| (at, what))
        }
        (Value::Array(e), Value::Array(a)) => {
            for (index, (x, y)) in e.iter().zip(a).enumerate() {
                if let Some(found) = first_difference(x, y, format!("{at}/{index}")) {
                    return Some(found);
                }
            }
            (e.len() != a.len()).then(|| (at, format!("{} items instead of {}", a.len(), e.len())))
        }
        // serde_json keeps integers and floats apart: 200 is not 200.0, as in Python's output.
        (e, a) if e == a => None,
        (e, a) => Some((at, format!("expected {e}, got {a}"))),
    }
}

fn key_order(expected: &Map<String, Value>, actual: &Map<String, Value>) -> Option<String> {
    let e: Vec<&String> = expected.keys().collect();
    let a: Vec<&String> = actual.keys().collect();
    (e != a).then(|| format!("keys in order {a:?}, expected {e:?}"))
}
