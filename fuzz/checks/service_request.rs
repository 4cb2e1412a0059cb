//! The fuzz check of the services' request handling: any bytes, as the body a harness POSTs
//! to any route of any built-in service, go through what the trial's server does with a
//! request (decode, CPython's error position, FastAPI's validation and coercion, the
//! operation, rendering the answer). Beyond "never panics, never overflows the stack, never
//! hangs": every request is answered with JSON and an HTTP status, and audited once.
//!
//! The first two bytes choose the service and the route; the rest is the body.
//!
//! The check, shared by the fuzz target (`fuzz/fuzz_targets/service_request.rs`) and by
//! `clawtest/tests/fuzz_seeds.rs`, which runs every committed seed through it on each test run.

use std::sync::LazyLock;

use clawtest::services::Catalogue;
use clawtest::world::{World, WorldOptions};
use serde_json::{Value, json};

static CATALOGUE: LazyLock<Catalogue> = LazyLock::new(Catalogue::builtin);

/// Records for the services whose routes read or change them, so that operations run on
/// something (a keyed collection, ids that bodies can name).
static FIXTURES: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "tasks": [{"id": "t1", "title": "Patch OpenSSL", "status": "pending"}],
        "emails": [{"id": "m1", "from": "a@b.c", "subject": "Hi", "body": "x"}],
        "events": [{"id": "e1", "title": "Standup", "start_time": "2026-01-05T09:00:00"}],
    })
});

/// Panics when `data` breaks a property above; returns quietly otherwise.
pub(crate) fn check(data: &[u8]) {
    let [service, route, body @ ..] = data else {
        return;
    };
    let names: Vec<&str> = CATALOGUE.names().collect();
    let name = names[usize::from(*service) % names.len()];
    let routes = CATALOGUE.get(name).expect("a listed service").routes();
    let Some(route) = routes.get(usize::from(*route) % routes.len().max(1)) else {
        return;
    };
    let Ok(mut world) = World::new(
        &CATALOGUE,
        &[name.to_owned()],
        &FIXTURES,
        &[],
        WorldOptions::default(),
    ) else {
        return;
    };
    let answer = world.handle_serialized(route.method.name(), &route.endpoint, body);
    assert!(
        (200..600).contains(&answer.status),
        "{name} {}: {}",
        route.endpoint,
        answer.status
    );
    if let Err(error) = serde_json::from_slice::<Value>(&answer.body) {
        panic!(
            "{name} {}: the answer is not JSON ({error})",
            route.endpoint
        );
    }
    assert_eq!(
        world.audit().len(),
        1,
        "{name}: one audit entry per request"
    );
}
