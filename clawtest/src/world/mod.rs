//! Per-trial state: the stores of every service a task uses and the audit log.
//!
//! A [`World`] is built from the catalogue, the task's services, fixtures and tools, and
//! answers requests through [`World::handle`] — a pure in-memory call; [`crate::serve`]
//! puts it on a socket. Everything is deterministic: the clock is fixed per trial (the
//! request with sequence number n happens at `clock + n seconds`, and that instant is both
//! the audit `at` and the handler's "now"), ids come from collection sizes, and the fault
//! injector ([`FaultPlan`], uniform or in bursts) draws from a generator seeded per task
//! and trial. An injected fault is an audit entry like any call: 429 or 500 without
//! reaching the service, or a slow call that runs and carries the delay the HTTP layer
//! waits.
//!
//! # Which requests are recorded
//!
//! Every request to a route of a service the task uses is recorded once, when answered:
//! 2xx, "not found" (HTTP 200 with `{"error": ..}`, as ClawEnvKit), 422 validation
//! errors, 405 (wrong method) and 404 for an unknown route under the service (action: the
//! endpoint path, unless a task tool names it). ClawEnvKit logs only what reached its
//! handler; clawtest records what the agent *did*. Utility routes (`/health`, `/audit`,
//! `/reset`, `/injected_errors`, `/<svc>/audit`, `/<svc>/reset`, `/<svc>/health`) and
//! paths under no service of the task are not recorded.
//!
//! # Where things are
//!
//! This file: [`World`], its options and errors, and recording answered calls. The fault
//! plan and injector are in `faults.rs`, fixture seeding in `fixtures.rs`, request dispatch
//! and the utility routes in `routes.rs`. The audit entries themselves are data of the
//! trajectory ([`crate::trajectory::AuditEntry`]).

mod faults;
mod fixtures;
mod routes;

use std::collections::HashMap;
use std::sync::Arc;

use hyper::body::Bytes;
use serde_json::Value;

use crate::services::store::Collections;
use crate::services::time::{self, Instant, SECOND};
use crate::services::{Catalogue, ServiceDescription, ToolBinding};
use crate::trajectory::audit::json_text;
use crate::trajectory::{AuditEntry, RecordedBody};

pub use faults::FaultPlan;
use faults::Injector;
use fixtures::seed_fixtures;
use routes::{Answered, Call, Logged};

/// The default trial clock.
const DEFAULT_CLOCK: &str = "2026-01-02T09:00:00Z";

/// Options for one world.
#[derive(Debug, Clone, PartialEq)]
pub struct WorldOptions {
    /// The trial's fixed start instant, RFC 3339.
    pub clock: String,
    /// The error injector's plan (none by default).
    pub faults: FaultPlan,
    /// The most audit entries recorded (`limits.audit_entries`); later calls are answered
    /// but not recorded.
    pub audit_entries: usize,
    /// The most bytes of parameters and answers the audit holds (`limits.audit_bytes`).
    pub audit_bytes: usize,
    /// The most bytes of entries one `GET /audit` answer carries (`limits.audit_answer_bytes`).
    pub audit_answer_bytes: usize,
}

impl Default for WorldOptions {
    fn default() -> Self {
        let limits = crate::config::LimitsConfig::default();
        WorldOptions {
            clock: DEFAULT_CLOCK.to_owned(),
            faults: FaultPlan::default(),
            audit_entries: limits.audit_entries,
            audit_bytes: limits.audit_bytes,
            audit_answer_bytes: limits.audit_answer_bytes,
        }
    }
}

/// What a subscriber to a World's audit hears ([`World::subscribe`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Observed {
    /// An entry, as it is recorded.
    Entry(Box<AuditEntry>),
    /// The first call the audit's caps dropped: from now on calls are answered but not
    /// recorded, so a subscriber that logs them must say so (the note says past what).
    CapReached(String),
}

/// The audit's caps and what they have dropped so far.
#[derive(Debug, Clone, Default)]
struct AuditCap {
    entries: usize,
    bytes: usize,
    answer_bytes: usize,
    held_bytes: usize,
    dropped: u64,
    /// The subscriber was told the cap bit (again after a reset empties the audit).
    announced: bool,
}

/// An HTTP answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceResponse {
    /// The HTTP status.
    pub status: u16,
    /// The JSON body.
    pub body: Value,
    /// Headers beyond `content-type` (`retry-after` on a 429, `allow` on a 405).
    pub headers: Vec<(String, String)>,
    /// How long the HTTP layer waits before answering (a slow fault).
    pub delay: Option<std::time::Duration>,
}

impl ServiceResponse {
    /// An answer with `status` and `body`, no extra headers and no delay.
    pub(crate) fn json(status: u16, body: Value) -> Self {
        ServiceResponse {
            status,
            body,
            headers: vec![],
            delay: None,
        }
    }
}

/// An HTTP answer with its body serialized ([`World::handle_serialized`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SerializedResponse {
    /// The HTTP status.
    pub status: u16,
    /// The body, JSON text (shared with the audit entry, not copied).
    pub body: Bytes,
    /// Headers beyond `content-type` (`retry-after` on a 429, `allow` on a 405).
    pub headers: Vec<(String, String)>,
    /// How long the HTTP layer waits before answering (a slow fault).
    pub delay: Option<std::time::Duration>,
}

/// Why a world cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum WorldError {
    /// The task names a service the catalogue does not have.
    #[error("unknown service `{name}`; the catalogue has: {known}")]
    UnknownService {
        /// The name the task gave.
        name: String,
        /// The catalogue's service names, comma-separated.
        known: String,
    },
    /// A fixture value holds no list of records.
    #[error(
        "fixture `{key}` (for service `{service}`): expected a list of records, or a map with one key holding them; found {found}"
    )]
    FixtureShape {
        /// The fixture key (`fixtures` for a top-level list or a fallback value).
        key: String,
        /// The service it feeds.
        service: String,
        /// What the value is instead ("a string", "a map with keys a, b and no list").
        found: String,
    },
    /// An element of a fixture's list is not a record.
    #[error(
        "fixture `{key}` (for service `{service}`): item {index} should be a record (a map); found {found}"
    )]
    FixtureRecord {
        /// The fixture key (`fixtures` for a top-level list or a fallback value).
        key: String,
        /// The service it feeds.
        service: String,
        /// The element's 0-based position in the list.
        index: usize,
        /// What the element is instead ("a string", "a number").
        found: String,
    },
    /// The task's `fixtures` is neither a map, a list nor absent.
    #[error("fixtures: expected a map of fixture keys (or a list of records); found {found}")]
    FixturesShape {
        /// What it is instead ("a string", "a number").
        found: String,
    },
    /// The trial clock ([`WorldOptions::clock`]) is not an RFC 3339 date and time.
    #[error("clock `{clock}` is not an RFC 3339 instant (like {DEFAULT_CLOCK})")]
    BadClock {
        /// The clock as given.
        clock: String,
    },
    /// Two of the task's services serve routes under the same first path segment.
    #[error(
        "services `{first}` and `{second}` both serve `/{prefix}/…`; a task can use only one of them"
    )]
    PrefixClash {
        /// The service listed first in the task.
        first: String,
        /// The service listed later.
        second: String,
        /// The path segment both serve.
        prefix: String,
    },
}

#[derive(Debug, Clone)]
struct ServiceState {
    /// Shared, so answering a request borrows its route without copying it.
    desc: std::sync::Arc<ServiceDescription>,
    initial: Collections,
    current: Collections,
}

/// The state of one trial. `Send`, so it can sit behind a mutex shared with a server.
#[derive(Debug, Clone)]
pub struct World {
    services: Vec<ServiceState>,
    /// endpoint → tool name (the first task tool naming the endpoint).
    bindings: HashMap<String, String>,
    clock: Instant,
    faults: FaultPlan,
    injector: Injector,
    audit: Vec<AuditEntry>,
    audit_cap: AuditCap,
    next_seq: u64,
    /// Receives a copy of every audit entry as it is recorded (`cargo clawtest serve`).
    observer: Option<std::sync::mpsc::Sender<Observed>>,
    /// Where answers are written as JSON text, kept so its room is reused.
    text_buffer: Vec<u8>,
}

impl World {
    /// Builds the world for a task. `services` are the names the task uses; `fixtures` is
    /// the task's `fixtures` value (a map of fixture keys, a list, or null); `tools` are
    /// the task's tools.
    ///
    /// Fixture keys reach services as in ClawEnvKit's entrypoint: a key equal to a service
    /// name feeds that service; otherwise each service collection listing the key in
    /// `fixture_keys` gets it (`articles` feeds both rss and kb). Several keys feeding one
    /// collection are concatenated in task order (ClawEnvKit keeps the last one). A service
    /// that no key reaches falls back to the *unclaimed* keys: the value of the only one,
    /// or the first list among several (ClawEnvKit falls back to all keys, so a todo task
    /// could see gmail's inbox as tasks). A top-level list seeds every service's fallback
    /// collection.
    pub fn new(
        catalogue: &Catalogue,
        services: &[String],
        fixtures: &Value,
        tools: &[ToolBinding],
        options: WorldOptions,
    ) -> Result<World, WorldError> {
        let clock = time::parse(&options.clock)
            .filter(|_| options.clock.contains('T'))
            .ok_or_else(|| WorldError::BadClock {
                clock: options.clock.clone(),
            })?;
        let mut states = Vec::new();
        for name in services {
            if states.iter().any(|s: &ServiceState| &s.desc.name == name) {
                continue;
            }
            let desc = catalogue
                .get(name)
                .ok_or_else(|| WorldError::UnknownService {
                    name: name.clone(),
                    known: catalogue.names().collect::<Vec<_>>().join(", "),
                })?;
            if let Some(other) = states.iter().find(|s| s.desc.prefix() == desc.prefix()) {
                return Err(WorldError::PrefixClash {
                    first: other.desc.name.clone(),
                    second: desc.name.clone(),
                    prefix: desc.prefix().to_owned(),
                });
            }
            states.push(ServiceState {
                desc: std::sync::Arc::new(desc.clone()),
                initial: Collections::new(),
                current: Collections::new(),
            });
        }
        seed_fixtures(&mut states, fixtures, clock)?;
        for s in &mut states {
            s.current = s.initial.clone();
        }
        let mut bindings = HashMap::new();
        for t in tools {
            bindings
                .entry(t.endpoint.clone())
                .or_insert_with(|| t.name.clone());
        }
        Ok(World {
            services: states,
            bindings,
            clock,
            injector: Injector::new(&options.faults),
            faults: options.faults,
            audit: Vec::new(),
            audit_cap: AuditCap {
                entries: options.audit_entries,
                bytes: options.audit_bytes,
                answer_bytes: options.audit_answer_bytes,
                ..AuditCap::default()
            },
            next_seq: 1,
            observer: None,
            text_buffer: Vec::new(),
        })
    }

    /// The fault plan (rate, seed, mode), for the trajectory.
    pub fn fault_plan(&self) -> &FaultPlan {
        &self.faults
    }

    /// A channel that receives every audit entry from now on, as it is recorded, and the
    /// moment the audit's caps first drop a call.
    pub(crate) fn subscribe(&mut self) -> std::sync::mpsc::Receiver<Observed> {
        let (sender, receiver) = std::sync::mpsc::channel();
        self.observer = Some(sender);
        receiver
    }

    /// The services of this world, in task order.
    pub(crate) fn services(&self) -> impl Iterator<Item = &ServiceDescription> {
        self.services.iter().map(|s| s.desc.as_ref())
    }

    /// The audit log, in order.
    pub fn audit(&self) -> &[AuditEntry] {
        &self.audit
    }

    /// When the audit's caps dropped calls: a note saying how many (for `limits_reached`).
    pub(crate) fn audit_cap_note(&self) -> Option<String> {
        let cap = &self.audit_cap;
        (cap.dropped > 0).then(|| {
            format!(
                "audit: {} call(s) answered but not recorded past {} entries or {} bytes (limits.audit_entries, limits.audit_bytes)",
                cap.dropped, cap.entries, cap.bytes
            )
        })
    }

    /// Back to the fixtures; audit cleared, sequence and fault generator restarted.
    pub fn reset(&mut self) {
        for s in &mut self.services {
            s.current = s.initial.clone();
        }
        self.audit.clear();
        self.audit_cap.held_bytes = 0;
        self.audit_cap.announced = false;
        self.next_seq = 1;
        self.injector = Injector::new(&self.faults);
    }

    /// A service's current records in one collection (for tests and reports).
    pub fn records(&self, service: &str, collection: &str) -> Option<&[Value]> {
        let s = self.services.iter().find(|s| s.desc.name == service)?;
        s.current.get(collection).map(Vec::as_slice)
    }

    /// Answers one request. Never panics.
    pub fn handle(&mut self, method: &str, path: &str, body: &[u8]) -> ServiceResponse {
        let Answered {
            response,
            call,
            logged,
            ..
        } = self.answer(method, path, body, false);
        if let Some(call) = call {
            let text = json_text(&response.body);
            let recorded = self.record(call, response.status, response.delay, text);
            self.keep_logged(recorded, logged);
        }
        response
    }

    /// [`World::handle`] with the answer's body as JSON text: what the HTTP layer sends.
    /// The same answer and audit entry; the text is written once and shared by both.
    pub fn handle_serialized(
        &mut self,
        method: &str,
        path: &str,
        body: &[u8],
    ) -> SerializedResponse {
        let Answered {
            response,
            text,
            call,
            logged,
        } = self.answer(method, path, body, true);
        let text = text.unwrap_or_else(|| json_text(&response.body));
        if let Some(call) = call {
            let recorded = self.record(call, response.status, response.delay, Arc::clone(&text));
            self.keep_logged(recorded, logged);
        }
        SerializedResponse {
            status: response.status,
            // The HTTP edge: the audit's text becomes the answer's bytes without a copy.
            body: Bytes::from_owner(text),
            headers: response.headers,
            delay: response.delay,
        }
    }

    /// A call's entry in a side list (`logged`) goes with its audit entry: when the audit's
    /// caps dropped the call (`recorded` false), the entry is taken back, so that a harness
    /// calling in a loop grows neither (todo's `updated_tasks` gains one record per update).
    fn keep_logged(&mut self, recorded: bool, logged: Option<Logged>) {
        if recorded {
            return;
        }
        if let Some(Logged {
            service,
            collection,
        }) = logged
            && let Some(list) = self
                .services
                .get_mut(service)
                .and_then(|state| state.current.get_mut(&collection))
        {
            list.pop();
        }
    }

    /// Records `call`, answered with `status` and the JSON text `response`; false when the
    /// audit's caps dropped it.
    fn record(
        &mut self,
        call: Call,
        status: u16,
        delay: Option<std::time::Duration>,
        response: Arc<[u8]>,
    ) -> bool {
        // Bounded: a harness calling in a loop must not grow the host's memory without end.
        let cap = &mut self.audit_cap;
        let full = self.audit.len() >= cap.entries || {
            let size = response.len() + json_length(&call.params);
            let fits = cap.held_bytes.saturating_add(size) <= cap.bytes;
            if fits {
                cap.held_bytes += size;
            }
            !fits
        };
        if full {
            cap.dropped += 1;
            if !cap.announced {
                cap.announced = true;
                let note = self.audit_cap_note().unwrap_or_default();
                self.observe(Observed::CapReached(note));
            }
            return false;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let entry = AuditEntry {
            seq,
            service: call.service,
            action: call.action,
            endpoint: call.endpoint,
            params: call.params,
            status,
            response: RecordedBody::from_text(response),
            fault: call.fault,
            delay_ms: delay.map(|d| d.as_millis() as u64),
            at: time::format_z(self.clock + i128::from(seq) * SECOND),
        };
        if self.observer.is_some() {
            self.observe(Observed::Entry(Box::new(entry.clone())));
        }
        self.audit.push(entry);
        true
    }

    /// Tells the subscriber, if one still listens.
    fn observe(&mut self, observed: Observed) {
        if let Some(observer) = &self.observer
            && observer.send(observed).is_err()
        {
            self.observer = None;
        }
    }
}

/// The length of `value` as compact JSON text, counted without writing it.
fn json_length(value: &Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

#[cfg(test)]
mod tests;
