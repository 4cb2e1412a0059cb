//! Forwarding: a live or recording trial's model calls sent to the real provider
//! ([`super::upstream`], which holds the key and retries), the answer passed back byte for
//! byte. A streamed answer (server-sent events) goes to the harness chunk by chunk as it
//! arrives and is kept whole for the log and the cassette, up to `llm.max_answer_bytes`.
//!
//! What cannot be replayed is not recorded: an answer that is not JSON (or still
//! compressed), or one over the size limit, reaches the harness but fails the trial, so no
//! cassette is written from it.

use std::sync::Arc;

use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::Value;
use tokio::sync::mpsc;

use super::call_log::{error_answer, refuse};
use super::cassette::RecordedResponse;
use super::exchange::Exchange;
use super::failure::{FailureKind, GatewayFailure};
use super::routes::{Route, RouteKind};
use super::server::{Gateway, Source};
use super::sse::{self, EventSplitter};
use super::upstream::{DROPPED_RESPONSE_HEADERS, Upstream};
use crate::http::{HttpRequest, HttpResponse, ResponseBody};

impl Gateway {
    /// Sends a call upstream and answers with what came back (502 when nothing usable did);
    /// logs it, and records it for the cassette when `record`.
    pub(super) async fn forward(
        &self,
        upstream: Arc<Upstream>,
        record: bool,
        route: Route,
        request: HttpRequest,
    ) -> HttpResponse {
        let call = { self.lock().next_call() };
        self.forward_call(upstream, record, route, request, call)
            .await
    }

    /// [`Gateway::forward`] for call number `call` (taken already: `record-missing`'s call
    /// the cassette could not answer).
    pub(super) async fn forward_call(
        &self,
        upstream: Arc<Upstream>,
        record: bool,
        route: Route,
        request: HttpRequest,
        call: usize,
    ) -> HttpResponse {
        let request_value = match serde_json::from_slice(&request.body) {
            Ok(value) => value,
            Err(error) if record => {
                let failure = self.failure_at(
                    call,
                    FailureKind::NotJson {
                        message: error.to_string(),
                    },
                );
                return refuse(&mut self.lock(), call, &route, Value::Null, failure);
            }
            Err(_) => Value::String(String::from_utf8_lossy(&request.body).into()),
        };
        let response = match upstream.send(&route, &request.headers, &request.body).await {
            Ok(response) => response,
            Err(error) => {
                let failure = self.failure_at(
                    call,
                    FailureKind::Upstream {
                        message: error.to_string(),
                    },
                );
                return refuse(&mut self.lock(), call, &route, request_value, failure);
            }
        };
        let headers: Vec<(String, String)> = response
            .headers
            .iter()
            .filter(|(name, _)| !DROPPED_RESPONSE_HEADERS.contains(&name.as_str()))
            .cloned()
            .collect();
        let header = |wanted: &str| {
            headers
                .iter()
                .find(|(name, _)| name == wanted)
                .map(|(_, value)| value.clone())
        };
        let streamed =
            header("content-type").is_some_and(|value| value.starts_with("text/event-stream"));
        // The gateway asks for no compression; an answer compressed anyway is not text.
        let encoding = header("content-encoding").filter(|value| value != "identity");
        let (status, retried, body) = (response.status, response.retried, response.body);
        let limit = self.rules.max_answer_bytes;
        let (path, speaker) = (route.path.clone(), route.speaker);
        let exchange = move |body: Value, events: Option<Vec<String>>| Exchange {
            call,
            path: path.clone(),
            speaker,
            request: request_value.clone(),
            response: RecordedResponse {
                status,
                body,
                events,
                retried: retried.clone(),
            },
        };
        let unrecordable =
            |message: String| self.failure_at(call, FailureKind::Unrecordable { message });
        if let Some(encoding) = &encoding {
            self.lock().fail(unrecordable(format!(
                "the provider answered with content-encoding `{encoding}` although none was asked for; a compressed answer cannot be logged or recorded"
            )));
        }
        if streamed {
            let too_large = unrecordable(format!(
                "the streamed answer is over llm.max_answer_bytes ({limit} bytes): it was passed on but not kept"
            ));
            let body = self.pass_stream(body, exchange(Value::Null, None), too_large, record);
            return HttpResponse {
                status,
                headers,
                body,
            };
        }
        let bytes = match http_body_util::Limited::new(body, limit).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(error) => {
                let message = if error.is::<http_body_util::LengthLimitError>() {
                    format!("the answer is over llm.max_answer_bytes ({limit} bytes)")
                } else {
                    format!("reading the answer failed: {error}")
                };
                let failure = self.failure_at(call, FailureKind::Upstream { message });
                let exchange = exchange(Value::Null, None);
                return refuse(&mut self.lock(), call, &route, exchange.request, failure);
            }
        };
        let value = match serde_json::from_slice(&bytes) {
            Ok(value) => value,
            Err(error) => {
                if record && encoding.is_none() {
                    self.lock().fail(unrecordable(format!(
                        "the provider's answer (status {status}) is not JSON ({error}), so it cannot be recorded: {}",
                        String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
                    )));
                }
                Value::String(String::from_utf8_lossy(&bytes).into())
            }
        };
        self.log(&mut self.lock(), exchange(value, None), record);
        HttpResponse {
            status,
            headers,
            body: ResponseBody::Whole(bytes.to_vec()),
        }
    }

    /// Passes a streamed answer on to the harness as it arrives, and (in a task of its own,
    /// which reads the stream to its end even when the harness hung up) logs it as `exchange`
    /// with its events, and records it when `record`; an answer over `llm.max_answer_bytes`
    /// is passed on but not kept (`too_large`), and one that broke off or ended without its
    /// endpoint's terminator fails the trial and is not kept either.
    fn pass_stream(
        &self,
        mut body: Incoming,
        exchange: Exchange,
        too_large: GatewayFailure,
        record: bool,
    ) -> ResponseBody {
        let (sender, receiver) = mpsc::channel(64);
        let gateway = self.clone();
        let limit = self.rules.max_answer_bytes;
        let reader = tokio::spawn(async move {
            let mut splitter = EventSplitter::default();
            let mut size = 0usize;
            let mut broken = None;
            while let Some(frame) = body.frame().await {
                let frame = match frame {
                    Ok(frame) => frame,
                    Err(error) => {
                        broken = Some(error.to_string());
                        break;
                    }
                };
                if let Ok(data) = frame.into_data() {
                    size = size.saturating_add(data.len());
                    if size <= limit {
                        splitter.push(&data);
                    }
                    // The harness may have hung up; the stream is still read to the end so
                    // that the log and the cassette are whole.
                    let _ = sender.send(data).await;
                }
            }
            drop(sender);
            let events = splitter.finish();
            // An incomplete answer must never become a recording: it would replay as a whole
            // (wrong) answer forever. The trial fails as an infrastructure error instead.
            let incomplete = match broken {
                Some(error) => Some(format!(
                    "the streamed answer broke off after {size} bytes ({error})"
                )),
                None => sse::missing_terminator(&exchange.path, &events).map(|terminator| {
                    format!("the streamed answer ended after {size} bytes without {terminator}")
                }),
            };
            let mut log = gateway.lock();
            if size > limit {
                log.fail(too_large);
            } else if let Some(incomplete) = incomplete {
                log.fail(gateway.failure_at(
                    exchange.call,
                    FailureKind::Incomplete {
                        message: incomplete,
                    },
                ));
            }
            let mut exchange = exchange;
            exchange.response.events = Some(events);
            gateway.log(&mut log, exchange, record);
        });
        self.lock().keep_stream(reader);
        ResponseBody::Chunks(receiver)
    }

    /// `GET /v1/models`: in replay, the models of the recording; otherwise the provider's
    /// answer, passed back (not a call: not logged, priced or recorded).
    pub(super) async fn models(&self, route: Route, request: HttpRequest) -> HttpResponse {
        debug_assert_eq!(route.kind, RouteKind::Models);
        let upstream = match &self.source {
            Source::Replay { .. } => return self.replayed_models(&route),
            Source::Upstream { upstream, .. } => Arc::clone(upstream),
        };
        let response = match upstream.send(&route, &request.headers, &[]).await {
            Ok(response) => response,
            Err(error) => return error_answer(route.provider, 502, &error.to_string()),
        };
        let headers = response
            .headers
            .into_iter()
            .filter(|(name, _)| !DROPPED_RESPONSE_HEADERS.contains(&name.as_str()))
            .collect();
        let limit = self.rules.max_answer_bytes;
        match http_body_util::Limited::new(response.body, limit)
            .collect()
            .await
        {
            Ok(collected) => HttpResponse {
                status: response.status,
                headers,
                body: ResponseBody::Whole(collected.to_bytes().to_vec()),
            },
            Err(error) => error_answer(
                route.provider,
                502,
                &format!("reading the model list failed: {error}"),
            ),
        }
    }
}
