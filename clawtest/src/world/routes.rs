//! Request dispatch: which route of which service answers a request, the injected faults
//! that answer instead of it (429, 500; a slow call runs and carries its delay), FastAPI's
//! 404/405/422 answers, and the utility routes that inspect or reset the world (`/health`,
//! `/audit`, `/reset`, `/injected_errors`, `/<svc>/audit`, `/<svc>/reset`, `/<svc>/health`),
//! which are never recorded. Recording the answered call is [`World`]'s (mod.rs).

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::{ServiceResponse, World};
use crate::services::engine;
use crate::services::time::{self, SECOND};
use crate::trajectory::FaultKind;

/// What [`World::answer`] produced: the answer, its body as JSON text when it was written
/// straight to text (`response.body` is then null), the call to record (none for a
/// utility route or a path under no service of the task), and the side list the call added
/// an entry to.
pub(super) struct Answered {
    pub(super) response: ServiceResponse,
    pub(super) text: Option<Arc<[u8]>>,
    pub(super) call: Option<Call>,
    pub(super) logged: Option<Logged>,
}

/// A side list (`log_to`: todo's `updated_tasks`) that a call added its last entry to: the
/// service's index and the collection.
pub(super) struct Logged {
    pub(super) service: usize,
    pub(super) collection: String,
}

impl Answered {
    fn value(response: ServiceResponse, call: Option<Call>) -> Self {
        Answered {
            response,
            text: None,
            call,
            logged: None,
        }
    }
}

/// A call to record once it is answered: the audit entry without its answer.
pub(super) struct Call {
    pub(super) service: String,
    pub(super) action: String,
    pub(super) endpoint: String,
    pub(super) params: Value,
    pub(super) fault: Option<FaultKind>,
}

impl World {
    /// Answers one request without recording it. With `as_text`, a route's answer is
    /// written straight to JSON text (see [`engine::respond_text`]).
    pub(super) fn answer(
        &mut self,
        method: &str,
        path: &str,
        body: &[u8],
        as_text: bool,
    ) -> Answered {
        let path = path.split(['?', '#']).next().unwrap_or("");
        // HTTP sends methods in upper case: a copy only for one that is not.
        let method: std::borrow::Cow<str> = if method.bytes().any(|b| b.is_ascii_lowercase()) {
            method.to_ascii_uppercase().into()
        } else {
            method.into()
        };
        let method = method.as_ref();
        if let Some(resp) = self.utility(method, path) {
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
        if !route.method.name().eq_ignore_ascii_case(method) {
            let mut resp = ServiceResponse::json(405, json!({"detail": "Method Not Allowed"}));
            resp.headers
                .push(("allow".into(), route.method.name().to_owned()));
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
        let mut logged = None;
        match engine::validate(route, body) {
            Err(rejected) => {
                params = rejected.received;
                resp = ServiceResponse::json(rejected.status, json!({"detail": rejected.detail}));
            }
            Ok(validated) => {
                let now = self.clock + i128::from(self.next_seq) * SECOND;
                // Once the audit records no more calls, a call adds nothing to a side list.
                let log = self.audit.len() < self.audit_cap.entries;
                let state = &mut self.services[index];
                let outcome = engine::execute(
                    route,
                    &state.desc.collections,
                    &mut state.current,
                    validated,
                    now,
                    log,
                );
                let status = outcome.status.unwrap_or(200);
                logged = route
                    .operation
                    .log_to()
                    .filter(|_| log && outcome.found)
                    .map(|collection| Logged {
                        service: index,
                        collection: collection.to_owned(),
                    });
                if as_text {
                    let buffer = &mut self.text_buffer;
                    buffer.clear();
                    engine::respond_text(route, &outcome, buffer);
                    text = Some(Arc::from(buffer.as_slice()));
                    resp = ServiceResponse::json(status, Value::Null);
                    // The parameters as validated (an operation only reads them) go on to
                    // the audit.
                    params = Value::Object(outcome.vars.params);
                } else {
                    params = Value::Object(outcome.vars.params.clone());
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
            logged,
        }
    }

    /// Routes that inspect or reset the world; never recorded.
    fn utility(&mut self, method: &str, path: &str) -> Option<ServiceResponse> {
        let get_only = |m: &str| (m != "GET").then(method_not_allowed);
        match path {
            "/health" => return Some(ServiceResponse::json(200, json!({"status": "ok"}))),
            "/audit" => {
                return Some(get_only(method).unwrap_or_else(|| {
                    // Bounded: a harness asking again and again, reading nothing, must not
                    // make the host hold many copies of a large audit.
                    let mut room = self.audit_cap.answer_bytes;
                    let entries: Vec<Value> = self
                        .audit
                        .iter()
                        .map(|entry| serde_json::to_value(entry).unwrap_or(Value::Null))
                        .take_while(|entry| {
                            let size = entry.to_string().len();
                            let fits = size <= room;
                            room = room.saturating_sub(size);
                            fits
                        })
                        .collect();
                    let mut body = json!({"total": self.audit.len()});
                    if entries.len() < self.audit.len() {
                        body["truncated"] = json!(true);
                    }
                    body["entries"] = Value::Array(entries);
                    ServiceResponse::json(200, body)
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
    /// logs a summary (`text_length`) instead of the text. Likewise every
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
