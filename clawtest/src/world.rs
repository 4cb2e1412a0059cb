//! Per-trial state: the stores of every service a task uses and the audit log.
//!
//! A [`World`] is built from the catalogue, the task's services, fixtures and tools, and
//! answers requests through [`World::handle`] — a pure in-memory call; [`crate::services::http`]
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

use std::collections::HashMap;
use std::sync::Arc;

use hyper::body::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::services::engine::{self, Collections, FixtureProblem};
use crate::services::time::{self, Instant, SECOND};
use crate::services::{Catalogue, ServiceDescription, ToolBinding};
use crate::spec::InjectionMode;
use crate::trajectory::audit::json_text;
use crate::trajectory::{AuditEntry, FaultKind, RecordedBody};

/// The default trial clock.
pub const DEFAULT_CLOCK: &str = "2026-01-02T09:00:00Z";

/// Options for one world.
#[derive(Debug, Clone, PartialEq)]
pub struct WorldOptions {
    /// The trial's fixed start instant, RFC 3339.
    pub clock: String,
    /// The error injector's plan (none by default).
    pub faults: FaultPlan,
}

impl Default for WorldOptions {
    fn default() -> Self {
        WorldOptions {
            clock: DEFAULT_CLOCK.to_owned(),
            faults: FaultPlan::default(),
        }
    }
}

/// The error injector's plan: each POST to a service route is a fault with probability
/// `rate` (ClawEnvKit's mix: 35 % rate limit 429 with `Retry-After`, 35 % server error
/// 500, 30 % slow), drawn from a generator seeded with `seed`, so a trial's faults depend
/// only on the plan and the order of calls. `Slow` calls run normally; the HTTP layer
/// delays the answer by the drawn `delay_ms`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultPlan {
    pub rate: f64,
    pub seed: u64,
    pub mode: InjectionMode,
    /// The range a slow call's delay is drawn from, in milliseconds (ClawEnvKit: 2–4 s).
    pub slow_ms: (u64, u64),
}

impl Default for FaultPlan {
    /// No faults.
    fn default() -> Self {
        FaultPlan {
            rate: 0.0,
            seed: 0,
            mode: InjectionMode::Uniform,
            slow_ms: (2000, 4000),
        }
    }
}

/// The mean length of a burst of faults.
pub const BURST_LENGTH: f64 = 4.0;

/// ClawEnvKit's default fault rate (`ERROR_RATE=0.25` in its runners).
pub const DEFAULT_FAULT_RATE: f64 = 0.25;

impl FaultPlan {
    /// The plan of trial `trial` of task `task_id`: the seed is a stable hash of the task
    /// id and trial index mixed with the task's `seed` (0 when none), so every trial of a
    /// task has its own faults and rerunning a trial repeats them exactly.
    pub fn for_trial(
        task_id: &str,
        trial: u32,
        rate: f64,
        seed: Option<u64>,
        mode: InjectionMode,
    ) -> FaultPlan {
        let task_hash = task_id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        let mixed = task_hash ^ splitmix(u64::from(trial)) ^ splitmix(!seed.unwrap_or(0));
        FaultPlan {
            rate: if rate.is_finite() {
                rate.clamp(0.0, 1.0)
            } else {
                0.0
            },
            seed: splitmix(mixed),
            mode,
            ..FaultPlan::default()
        }
    }
}

/// One splitmix64 step from `x` (a good 64-bit mixer).
fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The injector's running state: the generator and, in burst mode, the current burst.
#[derive(Debug, Clone, PartialEq)]
struct Injector {
    rng: u64,
    burst: Option<FaultKind>,
}

impl Injector {
    fn new(plan: &FaultPlan) -> Self {
        Injector {
            rng: plan.seed,
            burst: None,
        }
    }

    /// A uniform draw in [0, 1).
    fn next(&mut self) -> f64 {
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        (splitmix(self.rng.wrapping_sub(0x9E37_79B9_7F4A_7C15)) >> 11) as f64 / (1u64 << 53) as f64
    }

    fn kind(&mut self) -> FaultKind {
        let kind = self.next();
        if kind < 0.35 {
            FaultKind::RateLimited
        } else if kind < 0.70 {
            FaultKind::ServerError
        } else {
            FaultKind::Slow
        }
    }

    fn draw(&mut self, plan: &FaultPlan) -> Option<FaultKind> {
        if plan.rate <= 0.0 {
            return None;
        }
        match plan.mode {
            InjectionMode::Uniform => (self.next() < plan.rate).then(|| self.kind()),
            InjectionMode::Burst => {
                let stay = if plan.rate >= 1.0 {
                    true
                } else {
                    // Stationary fault fraction enter / (enter + exit) = rate.
                    let exit = (1.0 / BURST_LENGTH).min((1.0 - plan.rate) / plan.rate);
                    let enter = plan.rate * exit / (1.0 - plan.rate);
                    let draw = self.next();
                    if self.burst.is_some() {
                        draw >= exit
                    } else {
                        draw < enter
                    }
                };
                match (stay, self.burst) {
                    (true, Some(kind)) => Some(kind),
                    (true, None) => {
                        let kind = self.kind();
                        self.burst = Some(kind);
                        Some(kind)
                    }
                    (false, _) => {
                        self.burst = None;
                        None
                    }
                }
            }
        }
    }

    /// A slow call's delay, in milliseconds.
    fn delay_ms(&mut self, plan: &FaultPlan) -> u64 {
        let (low, high) = (
            plan.slow_ms.0.min(plan.slow_ms.1),
            plan.slow_ms.0.max(plan.slow_ms.1),
        );
        low + ((high - low) as f64 * self.next()) as u64
    }
}

/// An HTTP answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceResponse {
    pub status: u16,
    pub body: Value,
    pub headers: Vec<(String, String)>,
    /// How long the HTTP layer waits before answering (a slow fault).
    pub delay: Option<std::time::Duration>,
}

impl ServiceResponse {
    pub fn json(status: u16, body: Value) -> Self {
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
    pub status: u16,
    /// The body, JSON text (shared with the audit entry, not copied).
    pub body: Bytes,
    pub headers: Vec<(String, String)>,
    /// How long the HTTP layer waits before answering (a slow fault).
    pub delay: Option<std::time::Duration>,
}

/// What [`World::answer`] produced: the answer, its body as JSON text when it was written
/// straight to text (`response.body` is then null), and the call to record (none for a
/// utility route or a path under no service of the task).
struct Answered {
    response: ServiceResponse,
    text: Option<Arc<[u8]>>,
    call: Option<Call>,
}

impl Answered {
    fn value(response: ServiceResponse, call: Option<Call>) -> Self {
        Answered {
            response,
            text: None,
            call,
        }
    }
}

/// A call to record once it is answered: the audit entry without its answer.
struct Call {
    service: String,
    action: String,
    endpoint: String,
    params: Value,
    fault: Option<FaultKind>,
}

/// Why a world cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum WorldError {
    #[error("unknown service `{name}`; the catalogue has: {known}")]
    UnknownService { name: String, known: String },
    #[error(
        "fixture `{key}` (for service `{service}`): expected a list of records, or a map with one key holding them; found {found}"
    )]
    FixtureShape {
        key: String,
        service: String,
        found: String,
    },
    #[error(
        "fixture `{key}` (for service `{service}`): item {index} should be a record (a map); found {found}"
    )]
    FixtureRecord {
        key: String,
        service: String,
        index: usize,
        found: String,
    },
    #[error("fixtures: expected a map of fixture keys (or a list of records); found {found}")]
    FixturesShape { found: String },
    #[error("clock `{clock}` is not an RFC 3339 instant (like {DEFAULT_CLOCK})")]
    BadClock { clock: String },
    #[error(
        "services `{first}` and `{second}` both serve `/{prefix}/…`; a task can use only one of them"
    )]
    PrefixClash {
        first: String,
        second: String,
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
    next_seq: u64,
    /// Receives a copy of every audit entry as it is recorded (`cargo clawtest serve`).
    observer: Option<std::sync::mpsc::Sender<AuditEntry>>,
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
            next_seq: 1,
            observer: None,
            text_buffer: Vec::new(),
        })
    }

    /// The fault plan (rate, seed, mode), for the trajectory.
    pub fn fault_plan(&self) -> &FaultPlan {
        &self.faults
    }

    /// A channel that receives every audit entry from now on, as it is recorded.
    pub fn subscribe(&mut self) -> std::sync::mpsc::Receiver<AuditEntry> {
        let (sender, receiver) = std::sync::mpsc::channel();
        self.observer = Some(sender);
        receiver
    }

    /// The services of this world, in task order.
    pub fn services(&self) -> impl Iterator<Item = &ServiceDescription> {
        self.services.iter().map(|s| s.desc.as_ref())
    }

    /// The audit log, in order.
    pub fn audit(&self) -> &[AuditEntry] {
        &self.audit
    }

    /// Back to the fixtures; audit cleared, sequence and fault generator restarted.
    pub fn reset(&mut self) {
        for s in &mut self.services {
            s.current = s.initial.clone();
        }
        self.audit.clear();
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
        let Answered { response, call, .. } = self.answer(method, path, body, false);
        if let Some(call) = call {
            let text = json_text(&response.body);
            self.record(call, response.status, response.delay, text);
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
        } = self.answer(method, path, body, true);
        let text = text.unwrap_or_else(|| json_text(&response.body));
        if let Some(call) = call {
            self.record(call, response.status, response.delay, Arc::clone(&text));
        }
        SerializedResponse {
            status: response.status,
            // The HTTP edge: the audit's text becomes the answer's bytes without a copy.
            body: Bytes::from_owner(text),
            headers: response.headers,
            delay: response.delay,
        }
    }

    /// Answers one request without recording it. With `as_text`, a route's answer is
    /// written straight to JSON text (see [`engine::respond_text`]).
    fn answer(&mut self, method: &str, path: &str, body: &[u8], as_text: bool) -> Answered {
        let path = path.split(['?', '#']).next().unwrap_or("");
        let method = method.to_ascii_uppercase();
        if let Some(resp) = self.utility(&method, path) {
            return Answered::value(resp, None);
        }
        let prefix = path.trim_start_matches('/').split('/').next().unwrap_or("");
        let Some(index) = self.services.iter().position(|s| s.desc.prefix() == prefix) else {
            return Answered::value(not_found(), None);
        };
        let bound = self.bindings.get(path).cloned();
        let desc = std::sync::Arc::clone(&self.services[index].desc);
        let call = |action: String, params: Value, fault: Option<FaultKind>| {
            Some(Call {
                service: desc.name.clone(),
                action,
                endpoint: path.to_owned(),
                params,
                fault,
            })
        };
        let Some(route) = desc.route(path) else {
            let action = bound.unwrap_or_else(|| path.to_owned());
            // FastAPI's `detail`, plus what an agent (or its developer) needs to recover: the
            // routes this service does have.
            let routes: Vec<String> = desc
                .routes()
                .iter()
                .map(|route| format!("{} {}", route.method, route.endpoint))
                .collect();
            let resp = ServiceResponse::json(
                404,
                json!({"detail": "Not Found", "error": format!("no route {path} in service {}", desc.name), "routes": routes}),
            );
            return Answered::value(resp, call(action, json!({}), None));
        };
        let action = bound.unwrap_or_else(|| route.action.clone());
        let received = || match serde_json::from_slice::<Value>(body) {
            Ok(v @ Value::Object(_)) => v,
            _ => json!({}),
        };
        if !route.method.eq_ignore_ascii_case(&method) {
            let mut resp = ServiceResponse::json(405, json!({"detail": "Method Not Allowed"}));
            resp.headers.push(("allow".into(), route.method.clone()));
            return Answered::value(resp, call(action, received(), None));
        }
        // ClawEnvKit injects on POST only; its exemptions (/audit, /reset, /health) are
        // utility routes here and never reach this point.
        let fault = if method == "POST" {
            self.injector.draw(&self.faults)
        } else {
            None
        };
        match fault {
            Some(FaultKind::RateLimited) => {
                let mut resp = ServiceResponse::json(
                    429,
                    json!({
                        "error": "rate_limit_exceeded",
                        "message": "Too many requests. Please retry after a short delay.",
                        "retry_after_seconds": 2,
                    }),
                );
                resp.headers.push(("retry-after".into(), "2".into()));
                return Answered::value(resp, call(action, received(), fault));
            }
            Some(FaultKind::ServerError) => {
                let resp = ServiceResponse::json(
                    500,
                    json!({
                        "error": "internal_server_error",
                        "message": "An unexpected error occurred. Please try again.",
                    }),
                );
                return Answered::value(resp, call(action, received(), fault));
            }
            Some(FaultKind::Slow) | None => {}
        }
        let mut resp;
        let params;
        let mut text = None;
        match engine::validate(route, body) {
            Err(rejected) => {
                params = rejected.received;
                resp = ServiceResponse::json(422, json!({"detail": rejected.detail}));
            }
            Ok(validated) => {
                params = Value::Object(validated.clone());
                let now = self.clock + i128::from(self.next_seq) * SECOND;
                let state = &mut self.services[index];
                let outcome = engine::execute(
                    route,
                    &state.desc.collections,
                    &mut state.current,
                    validated,
                    now,
                );
                let status = outcome.status.unwrap_or(200);
                if as_text {
                    let buffer = &mut self.text_buffer;
                    buffer.clear();
                    engine::respond_text(route, outcome, buffer);
                    text = Some(Arc::from(buffer.as_slice()));
                    resp = ServiceResponse::json(status, Value::Null);
                } else {
                    resp = ServiceResponse::json(status, engine::respond(route, outcome));
                }
            }
        }
        if fault == Some(FaultKind::Slow) {
            let ms = self.injector.delay_ms(&self.faults);
            resp.delay = Some(std::time::Duration::from_millis(ms));
        }
        Answered {
            response: resp,
            text,
            call: call(action, params, fault),
        }
    }

    /// Records `call`, answered with `status` and the JSON text `response`.
    fn record(
        &mut self,
        call: Call,
        status: u16,
        delay: Option<std::time::Duration>,
        response: Arc<[u8]>,
    ) {
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
        if let Some(observer) = &self.observer
            && observer.send(entry.clone()).is_err()
        {
            self.observer = None;
        }
        self.audit.push(entry);
    }

    /// Routes that inspect or reset the world; never recorded.
    fn utility(&mut self, method: &str, path: &str) -> Option<ServiceResponse> {
        let get_only = |m: &str| (m != "GET").then(method_not_allowed);
        match path {
            "/health" => return Some(ServiceResponse::json(200, json!({"status": "ok"}))),
            "/audit" => {
                return Some(get_only(method).unwrap_or_else(|| {
                    ServiceResponse::json(
                        200,
                        json!({"entries": self.audit, "total": self.audit.len()}),
                    )
                }));
            }
            "/injected_errors" => {
                // ClawEnvKit's shape (endpoint, status, error_type, unix timestamp,
                // delay_s), plus the audit's seq, service and action.
                let errors: Vec<Value> = self
                    .audit
                    .iter()
                    .filter_map(|e| {
                        let error_type = match e.fault? {
                            FaultKind::RateLimited => "rate_limit",
                            FaultKind::ServerError => "server_error",
                            FaultKind::Slow => "slow",
                        };
                        let unix = time::parse(&e.at).unwrap_or_default() / SECOND;
                        let mut error = json!({
                            "endpoint": e.endpoint, "status": e.status, "error_type": error_type,
                            "timestamp": unix as f64, "seq": e.seq, "service": e.service,
                            "action": e.action,
                        });
                        if let Some(ms) = e.delay_ms {
                            error["delay_s"] = json!(ms as f64 / 1000.0);
                        }
                        Some(error)
                    })
                    .collect();
                return Some(get_only(method).unwrap_or_else(|| {
                    ServiceResponse::json(200, json!({"errors": errors, "total": errors.len()}))
                }));
            }
            "/reset" => {
                self.reset();
                return Some(ServiceResponse::json(200, json!({"status": "reset"})));
            }
            _ => {}
        }
        let (prefix, tail) = path.trim_start_matches('/').split_once('/')?;
        let index = self
            .services
            .iter()
            .position(|s| s.desc.prefix() == prefix)?;
        let svc = self.services[index].desc.name.clone();
        match tail {
            "audit" => Some(
                get_only(method)
                    .unwrap_or_else(|| ServiceResponse::json(200, self.service_audit(index))),
            ),
            "reset" if method == "POST" => {
                let state = &mut self.services[index];
                state.current = state.initial.clone();
                self.audit.retain(|e| e.service != svc);
                self.next_seq = self.audit.last().map_or(1, |e| e.seq + 1);
                Some(ServiceResponse::json(200, json!({"status": "reset"})))
            }
            "reset" => Some(method_not_allowed()),
            "health" => {
                let template = self.services[index].desc.health.as_ref()?;
                Some(get_only(method).unwrap_or_else(|| {
                    let state = &self.services[index];
                    let first = state.desc.collections.first().map(|c| c.name.as_str());
                    let vars = engine::Vars {
                        items: Some(
                            first
                                .and_then(|name| state.current.get(name))
                                .map(|records| {
                                    records.iter().map(std::borrow::Cow::Borrowed).collect()
                                })
                                .unwrap_or_default(),
                        ),
                        ..engine::Vars::default()
                    };
                    ServiceResponse::json(200, engine::render(template, &vars))
                }))
            }
            _ => None,
        }
    }

    /// ClawEnvKit's `GET /<svc>/audit`: `calls` (requests that reached the handler, i.e.
    /// answered 200, in ClawEnvKit's raw format) plus the service's side lists.
    ///
    /// Every service gets ClawEnvKit's common call entry (endpoint, request_body,
    /// response_body, timestamp), the shape ClawEnvKit's harness converts into grading
    /// entries. Deliberately so: ClawEnvKit's ocr and caption add an `action` key, documents
    /// logs a summary (`text_length`) instead of the text, and spotify logs `request` and
    /// `response` without a timestamp, which its own converter cannot read. Likewise every
    /// `POST /<svc>/reset` answers `{"status": "reset"}` (spotify's answers
    /// `{"reset": true}`). The parity fixtures record these differences.
    fn service_audit(&self, index: usize) -> Value {
        let state = &self.services[index];
        let calls: Vec<Value> = self
            .audit
            .iter()
            .filter(|e| e.service == state.desc.name && e.status == 200)
            .map(|e| {
                let at = time::parse(&e.at)
                    .map(time::format_python_iso)
                    .unwrap_or_default();
                json!({
                    "endpoint": e.endpoint,
                    "request_body": e.params,
                    "response_body": e.response,
                    "timestamp": at,
                })
            })
            .collect();
        let mut out = Map::new();
        out.insert("calls".into(), Value::Array(calls));
        for list in &state.desc.audit_lists {
            let records = state.current.get(list).cloned().unwrap_or_default();
            out.insert(list.clone(), Value::Array(records));
        }
        Value::Object(out)
    }
}

fn not_found() -> ServiceResponse {
    ServiceResponse::json(404, json!({"detail": "Not Found"}))
}

fn method_not_allowed() -> ServiceResponse {
    ServiceResponse::json(405, json!({"detail": "Method Not Allowed"}))
}

/// Seeds every service's `initial` collections from the task's fixtures.
fn seed_fixtures(
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
                && engine::fixture_records(&fallback).is_ok()
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
                found: engine::describe(other),
            });
        }
    }
    for (i, collection, key, value) in feeds {
        let service = states[i].desc.name.clone();
        let records = engine::fixture_records(&value).map_err(|p| match p {
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
    for s in states.iter_mut() {
        for c in &s.desc.collections {
            let records = s.initial.entry(c.name.clone()).or_default();
            if records.is_empty() && !c.defaults.is_empty() {
                records.extend(c.defaults.iter().cloned());
            }
            engine::prepare_records(c, records, clock);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn world(services: &[&str], fixtures: Value, tools: &[ToolBinding]) -> World {
        let services: Vec<String> = services.iter().map(|s| s.to_string()).collect();
        World::new(
            &Catalogue::builtin(),
            &services,
            &fixtures,
            tools,
            WorldOptions::default(),
        )
        .expect("world builds")
    }

    fn post(w: &mut World, path: &str, body: Value) -> ServiceResponse {
        w.handle("POST", path, body.to_string().as_bytes())
    }

    fn todo_fixtures() -> Value {
        json!({"tasks": [
            {"id": "t1", "title": "Write report", "status": "pending", "priority": "high"},
            {"task_id": "t2", "title": "Book flights", "status": "completed", "priority": "low"},
        ]})
    }

    #[test]
    fn todo_fixtures_load_in_every_accepted_shape_and_copy_id() {
        let records = todo_fixtures()["tasks"].clone();
        for fixtures in [
            todo_fixtures(),
            json!({"tasks": {"tasks": records}}),
            json!({"todo": records}),
            json!({"tasks": {"meta": "ignored", "items": records}}),
            records.clone(),
        ] {
            let w = world(&["todo"], fixtures.clone(), &[]);
            let tasks = w.records("todo", "tasks").unwrap();
            assert_eq!(tasks.len(), 2, "{fixtures}");
            assert_eq!(tasks[0]["task_id"], "t1", "id copied into task_id");
            assert_eq!(tasks[1]["task_id"], "t2");
        }
    }

    #[test]
    fn list_tasks_filters_by_status_and_records_model_dump_params() {
        let mut w = world(&["todo"], todo_fixtures(), &[]);
        let all = w.handle("POST", "/todo/tasks", b"");
        assert_eq!(all.status, 200);
        assert_eq!(all.body["total"], 2);
        assert_eq!(all.body["tasks"][0]["title"], "Write report");
        let done = post(
            &mut w,
            "/todo/tasks",
            json!({"status": "completed", "extra": 1}),
        );
        assert_eq!(done.body["total"], 1);
        assert_eq!(done.body["tasks"][0]["task_id"], "t2");
        assert_eq!(w.audit()[0].params, json!({"status": "all"}));
        assert_eq!(w.audit()[1].params, json!({"status": "completed"}));
        assert_eq!(w.audit()[1].action, "list_tasks");
    }

    #[test]
    fn create_task_matches_clawenvkit_record_and_ids_are_len_plus_one() {
        let mut w = world(&["todo"], todo_fixtures(), &[]);
        let created = post(&mut w, "/todo/tasks/create", json!({"title": "Call Bob"}));
        assert_eq!(
            created.body,
            json!({"status": "created", "task": {
                "task_id": "todo_003", "title": "Call Bob", "description": "", "status": "pending",
                "priority": "medium", "due_date": null, "tags": [],
                "created_at": "2026-01-02T09:00:01+00:00",
            }})
        );
        assert_eq!(
            w.audit()[0].params,
            json!({"title": "Call Bob", "description": null, "priority": "medium", "due_date": null})
        );
        // ClawEnvKit's id is len+1, so a delete makes the next id repeat: deterministic.
        post(&mut w, "/todo/tasks/delete", json!({"task_id": "t1"}));
        let again = post(
            &mut w,
            "/todo/tasks/create",
            json!({"title": "x", "priority": "low"}),
        );
        assert_eq!(again.body["task"]["task_id"], "todo_003");
        assert_eq!(again.body["task"]["priority"], "low");
    }

    #[test]
    fn update_and_delete_change_the_store_and_side_lists() {
        let mut w = world(&["todo"], todo_fixtures(), &[]);
        let upd = post(
            &mut w,
            "/todo/tasks/update",
            json!({"task_id": "t1", "status": "completed", "tags": ["q1"]}),
        );
        assert_eq!(upd.body["status"], "updated");
        assert_eq!(upd.body["task"]["status"], "completed");
        assert_eq!(
            upd.body["task"]["priority"], "high",
            "null fields are left alone"
        );
        assert_eq!(upd.body["task"]["tags"], json!(["q1"]));
        let missing = post(&mut w, "/todo/tasks/update", json!({"task_id": "nope"}));
        assert_eq!(
            (missing.status, missing.body.clone()),
            (200, json!({"error": "Task nope not found"}))
        );
        let del = post(&mut w, "/todo/tasks/delete", json!({"task_id": "t2"}));
        assert_eq!(del.body["status"], "deleted");
        assert_eq!(del.body["task"]["title"], "Book flights");
        let list = post(&mut w, "/todo/tasks", json!({}));
        assert_eq!(list.body["total"], 1);
        let audit = w.handle("GET", "/todo/audit", b"");
        assert_eq!(audit.body["calls"].as_array().unwrap().len(), 4);
        assert_eq!(audit.body["calls"][0]["endpoint"], "/todo/tasks/update");
        assert_eq!(
            audit.body["calls"][0]["timestamp"],
            "2026-01-02T09:00:01+00:00"
        );
        assert_eq!(audit.body["deleted"][0]["task_id"], "t2");
        assert_eq!(audit.body["updated_tasks"].as_array().unwrap().len(), 1);
        assert_eq!(w.audit().len(), 4, "utility routes are not recorded");
    }

    fn inbox() -> Value {
        json!({"inbox": [
            {"id": "m1", "from": "a@x.com", "subject": "Newest", "date": "2026-02-27T10:00:00Z"},
            {"id": "m2", "from": "b@x.com", "subject": "Three days older", "date": "2026-02-24T10:00:00Z"},
            {"id": "m3", "from": "c@x.com", "subject": "Ten days older", "date": "2026-02-17T10:00:00+00:00"},
        ]})
    }

    #[test]
    fn gmail_rebases_dates_and_lists_by_recency() {
        let mut w = world(&["gmail"], inbox(), &[]);
        let emails = w.records("gmail", "emails").unwrap();
        assert_eq!(
            emails[0]["date"], "2026-01-01T09:00:00Z",
            "newest is clock − 1 day"
        );
        assert_eq!(emails[2]["date"], "2025-12-22T09:00:00Z");
        let list = w.handle("POST", "/gmail/messages", b"{}");
        assert_eq!(list.body["total"], 2, "default days_back = 7");
        assert_eq!(
            w.audit()[0].params,
            json!({"days_back": 7, "max_results": 20})
        );
        let wide = post(
            &mut w,
            "/gmail/messages",
            json!({"days_back": "30", "max_results": 2}),
        );
        assert_eq!(wide.body["total"], 2, "max_results cuts after filtering");
        let python_slice = post(
            &mut w,
            "/gmail/messages",
            json!({"days_back": 30, "max_results": -1}),
        );
        assert_eq!(python_slice.body["total"], 2);
        let got = post(&mut w, "/gmail/messages/get", json!({"message_id": "m2"}));
        assert_eq!(got.body["subject"], "Three days older");
        let missing = post(&mut w, "/gmail/messages/get", json!({"message_id": "zz"}));
        assert_eq!(missing.body, json!({"error": "Message zz not found"}));
    }

    #[test]
    fn gmail_send_and_draft_append_to_outboxes() {
        let mut w = world(&["gmail"], inbox(), &[]);
        let sent = post(
            &mut w,
            "/gmail/send",
            json!({"to": "bob@x.com", "subject": "Hi", "body": "Hello"}),
        );
        assert_eq!(
            sent.body,
            json!({"status": "sent", "message": {
                "to": "bob@x.com", "subject": "Hi", "body": "Hello",
                "timestamp": "2026-01-02T09:00:01+00:00",
            }})
        );
        let draft = post(
            &mut w,
            "/gmail/drafts/save",
            json!({"to": "a@x.com", "subject": "Re", "body": "Later", "reply_to_message_id": "m1"}),
        );
        assert_eq!(draft.body["status"], "draft_saved");
        assert_eq!(draft.body["draft"]["reply_to_message_id"], "m1");
        let audit = w.handle("GET", "/gmail/audit", b"");
        assert_eq!(audit.body["sent_messages"][0]["to"], "bob@x.com");
        assert_eq!(audit.body["drafts"][0]["subject"], "Re");
        assert_eq!(w.audit()[0].action, "send_email");
        assert_eq!(w.audit()[1].action, "create_draft");
    }

    #[test]
    fn audit_uses_bound_tool_names_and_is_sequenced_on_the_clock() {
        let tools = [ToolBinding {
            name: "mark_done".into(),
            service: "todo".into(),
            endpoint: "/todo/tasks/update".into(),
            method: "POST".into(),
        }];
        let mut w = world(
            &["todo", "gmail"],
            json!({"tasks": [], "inbox": []}),
            &tools,
        );
        post(&mut w, "/todo/tasks/update", json!({"task_id": "t1"}));
        post(&mut w, "/todo/tasks", json!({}));
        post(
            &mut w,
            "/gmail/send",
            json!({"to": "a", "subject": "s", "body": "b"}),
        );
        let a = w.audit();
        assert_eq!(
            a.iter()
                .map(|e| (e.seq, e.action.as_str(), e.service.as_str()))
                .collect::<Vec<_>>(),
            [
                (1, "mark_done", "todo"),
                (2, "list_tasks", "todo"),
                (3, "send_email", "gmail")
            ]
        );
        assert_eq!(a[2].at, "2026-01-02T09:00:03Z");
        assert_eq!(a[0].fault, None);
    }

    #[test]
    fn rejected_and_unknown_requests_are_recorded_like_fastapi_answers_them() {
        let mut w = world(&["todo"], todo_fixtures(), &[]);
        let missing = post(&mut w, "/todo/tasks/create", json!({"priority": "high"}));
        assert_eq!(missing.status, 422);
        assert_eq!(missing.body["detail"][0]["type"], "missing");
        assert_eq!(missing.body["detail"][0]["loc"], json!(["body", "title"]));
        let wrong_type = post(
            &mut w,
            "/todo/tasks/update",
            json!({"task_id": 5, "tags": ["a", 1]}),
        );
        assert_eq!(wrong_type.status, 422);
        let locs: Vec<&Value> = wrong_type.body["detail"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| &e["loc"])
            .collect();
        assert_eq!(
            locs,
            [&json!(["body", "task_id"]), &json!(["body", "tags", 1])]
        );
        let bad_json = w.handle("POST", "/todo/tasks/create", b"{\"title\": ");
        assert_eq!(bad_json.status, 422);
        assert_eq!(bad_json.body["detail"][0]["type"], "json_invalid");
        let no_body = w.handle("POST", "/todo/tasks/delete", b"");
        assert_eq!(no_body.status, 422);
        let unknown = post(&mut w, "/todo/tasks/archive", json!({}));
        assert_eq!(
            (unknown.status, &unknown.body["detail"]),
            (404, &json!("Not Found"))
        );
        let get = w.handle("GET", "/todo/tasks", b"");
        assert_eq!(get.status, 405);
        let elsewhere = post(&mut w, "/gmail/send", json!({}));
        assert_eq!(elsewhere.status, 404, "gmail is not part of this task");
        w.handle("GET", "/health", b"");
        w.handle("GET", "/audit", b"");
        let statuses: Vec<(u16, &str)> = w
            .audit()
            .iter()
            .map(|e| (e.status, e.action.as_str()))
            .collect();
        assert_eq!(
            statuses,
            [
                (422, "create_task"),
                (422, "update_task"),
                (422, "create_task"),
                (422, "delete_task"),
                (404, "/todo/tasks/archive"),
                (405, "list_tasks"),
            ]
        );
        assert_eq!(
            w.audit()[0].params,
            json!({"priority": "high"}),
            "rejected: body as received"
        );
    }

    #[test]
    fn reset_restores_fixtures_and_clears_the_audit() {
        let mut w = world(&["todo"], todo_fixtures(), &[]);
        let before = w.records("todo", "tasks").unwrap().to_vec();
        post(&mut w, "/todo/tasks/delete", json!({"task_id": "t1"}));
        post(&mut w, "/todo/tasks/create", json!({"title": "n"}));
        w.reset();
        assert_eq!(w.records("todo", "tasks").unwrap(), before.as_slice());
        assert!(w.audit().is_empty());
        post(&mut w, "/todo/tasks", json!({}));
        assert_eq!(w.audit()[0].seq, 1);
        // Over HTTP, /reset does the same and is itself not recorded.
        let r = w.handle("POST", "/reset", b"");
        assert_eq!(r.body, json!({"status": "reset"}));
        assert!(w.audit().is_empty());
    }

    #[test]
    fn fixture_routing_concatenates_and_falls_back_to_unclaimed_keys() {
        let w = world(
            &["gmail", "todo"],
            json!({"inbox": [{"id": "a", "date": "2026-01-01T00:00:00Z"}], "drafts": [{"id": "b"}], "tasks": [{"id": "t"}]}),
            &[],
        );
        assert_eq!(w.records("gmail", "emails").unwrap().len(), 2);
        assert_eq!(w.records("todo", "tasks").unwrap().len(), 1);
        // An odd key name still seeds a single-service task (ClawEnvKit's fixtures.json fallback).
        let w = world(&["todo"], json!({"todos": [{"id": "t"}]}), &[]);
        assert_eq!(w.records("todo", "tasks").unwrap()[0]["task_id"], "t");
        // …but a key claimed by another service never does.
        let w = world(&["gmail", "todo"], json!({"inbox": [{"id": "a"}]}), &[]);
        assert_eq!(w.records("todo", "tasks").unwrap().len(), 0);
    }

    #[test]
    fn wrong_fixture_shapes_and_unknown_services_are_errors_that_say_where() {
        let services = vec!["todo".to_string()];
        let build = |f: Value| {
            World::new(
                &Catalogue::builtin(),
                &services,
                &f,
                &[],
                WorldOptions::default(),
            )
        };
        let err = build(json!({"tasks": {"a": 1, "b": 2}})).unwrap_err();
        assert!(
            matches!(&err, WorldError::FixtureShape { key, service, .. } if key == "tasks" && service == "todo")
        );
        assert!(err.to_string().contains("fixture `tasks`"), "{err}");
        let err = build(json!({"tasks": [{"id": 1}, "oops"]})).unwrap_err();
        assert!(
            matches!(&err, WorldError::FixtureRecord { key, index: 1, .. } if key == "tasks"),
            "{err}"
        );
        assert!(matches!(
            build(json!("x")),
            Err(WorldError::FixturesShape { .. })
        ));
        let err = World::new(
            &Catalogue::builtin(),
            &["slack".to_string()],
            &Value::Null,
            &[],
            WorldOptions::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("unknown service `slack`"), "{err}");
    }

    #[test]
    fn seeded_faults_are_reproducible_and_audited() {
        let options = WorldOptions {
            faults: FaultPlan {
                rate: 0.5,
                seed: 7,
                ..FaultPlan::default()
            },
            ..WorldOptions::default()
        };
        let run = || {
            let mut w = World::new(
                &Catalogue::builtin(),
                &["todo".into()],
                &todo_fixtures(),
                &[],
                options.clone(),
            )
            .unwrap();
            for _ in 0..20 {
                post(&mut w, "/todo/tasks", json!({}));
            }
            w.audit().to_vec()
        };
        let (a, b) = (run(), run());
        assert_eq!(a, b);
        assert!(a.iter().any(|e| e.status == 429 || e.status == 500));
        assert!(a.iter().all(|e| e.fault.is_some() || e.status == 200));
    }

    /// A body for `route` that sets every parameter: strings are the id of the first
    /// record of any collection (so gets, updates and deletes find something).
    fn full_body(route: &crate::services::RouteDescription, id: &str) -> Value {
        use crate::services::ParamType;
        let value = |ty: ParamType| match ty {
            ParamType::String => json!(id),
            ParamType::Integer => json!(30),
            ParamType::Number => json!(2.5),
            ParamType::Boolean => json!(true),
            ParamType::Array => json!([id]),
            ParamType::Object => json!({"k": id}),
        };
        Value::Object(
            route
                .parameters
                .iter()
                .map(|p| (p.name.clone(), value(p.ty)))
                .collect(),
        )
    }

    #[test]
    fn answers_written_as_text_equal_the_answers_as_values_serialized() {
        let catalogue = Catalogue::builtin();
        let fixtures = json!({
            "tasks": todo_fixtures()["tasks"].clone(),
            "inbox": inbox()["inbox"].clone(),
        });
        let mut answered = Vec::new();
        for service in catalogue.names() {
            let services = [service];
            let mut by_value = world(&services, fixtures.clone(), &[]);
            let mut by_text = by_value.clone();
            let id = by_value.services[0]
                .current
                .values()
                .flatten()
                .find_map(|r| r.as_object()?.values().find_map(Value::as_str))
                .unwrap_or("x")
                .to_owned();
            let routes = by_value.services[0].desc.routes().to_vec();
            // Each route twice with every parameter set (the second after the first has
            // changed the store), then with an empty object and no body at all.
            for route in &routes {
                let full = full_body(route, &id).to_string();
                for body in [full.as_str(), full.as_str(), "{}", ""] {
                    let value = by_value.handle(&route.method, &route.endpoint, body.as_bytes());
                    let text =
                        by_text.handle_serialized(&route.method, &route.endpoint, body.as_bytes());
                    assert_eq!(
                        (text.status, String::from_utf8_lossy(&text.body)),
                        (value.status, value.body.to_string().into()),
                        "{} {} with {body}",
                        route.method,
                        route.endpoint
                    );
                    assert_eq!((&text.headers, text.delay), (&value.headers, value.delay));
                }
            }
            assert_eq!(by_text.audit(), by_value.audit(), "{service}");
            if by_value.audit().iter().any(|e| e.status == 200) {
                answered.push(service);
            }
        }
        // The comparison covers real answers, not only validation errors.
        assert!(answered.len() >= 15, "answered with 200: {answered:?}");
    }

    #[test]
    fn world_is_send() {
        fn assert_send<T: Send>() {}
        assert_send::<World>();
    }
}
