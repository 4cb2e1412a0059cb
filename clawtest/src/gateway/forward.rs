//! Forwarding: a live or recording trial's model calls sent to the real provider
//! ([`super::upstream`], which holds the key and retries), the answer passed back byte for
//! byte. A streamed answer (server-sent events) goes to the harness chunk by chunk as it
//! arrives and is kept whole for the log and the cassette.

use std::sync::Arc;

use http_body_util::BodyExt;
use serde_json::Value;
use tokio::sync::mpsc;

use super::call_log::{Exchange, refuse};
use super::cassette::RecordedResponse;
use super::server::{Gateway, GatewayFailure};
use super::sse::EventSplitter;
use super::upstream::{DROPPED_RESPONSE_HEADERS, Upstream};
use crate::http::{HttpRequest, HttpResponse, ResponseBody};

impl Gateway {
    /// Sends a call upstream and answers with what came back (502 when nothing usable did);
    /// logs it, and records it for the cassette when `record`.
    pub(super) async fn forward(
        &self,
        upstream: Arc<Upstream>,
        record: bool,
        request: HttpRequest,
    ) -> HttpResponse {
        let call = {
            let mut state = self.lock();
            state.next_call += 1;
            state.next_call - 1
        };
        let request_value = serde_json::from_slice(&request.body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&request.body).into()));
        let response = match upstream
            .send(&request.path, &request.headers, &request.body)
            .await
        {
            Ok(response) => response,
            Err(error) => {
                let failure = GatewayFailure::Upstream {
                    task_id: self.task_id.clone(),
                    trial: self.trial,
                    call,
                    message: error.to_string(),
                };
                let body = refuse(
                    &mut self.lock(),
                    call,
                    &request.path,
                    request_value,
                    failure,
                );
                return HttpResponse::json(502, &body);
            }
        };
        let headers: Vec<(String, String)> = response
            .headers
            .iter()
            .filter(|(name, _)| !DROPPED_RESPONSE_HEADERS.contains(&name.as_str()))
            .cloned()
            .collect();
        let streamed = headers
            .iter()
            .any(|(name, value)| name == "content-type" && value.starts_with("text/event-stream"));
        let (status, retried, mut body) = (response.status, response.retried, response.body);
        let exchange = move |body: Value, events: Option<Vec<String>>| Exchange {
            call,
            path: request.path.clone(),
            request: request_value.clone(),
            response: RecordedResponse {
                status,
                body,
                events,
                retried: retried.clone(),
            },
        };
        if streamed {
            let (sender, receiver) = mpsc::channel(64);
            let gateway = self.clone();
            let reader = tokio::spawn(async move {
                let mut splitter = EventSplitter::default();
                while let Some(frame) = body.frame().await {
                    let Ok(frame) = frame else { break };
                    if let Ok(data) = frame.into_data() {
                        splitter.push(&data);
                        // The harness may have hung up; the stream is still read to the end
                        // so that the log and the cassette are whole.
                        let _ = sender.send(data).await;
                    }
                }
                drop(sender);
                let events = splitter.finish();
                let mut state = gateway.lock();
                gateway.log(&mut state, exchange(Value::Null, Some(events)), record);
            });
            self.lock().streams.push(reader);
            return HttpResponse {
                status,
                headers,
                body: ResponseBody::Chunks(receiver),
            };
        }
        let bytes = match body.collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(error) => {
                let failure = GatewayFailure::Upstream {
                    task_id: self.task_id.clone(),
                    trial: self.trial,
                    call,
                    message: format!("reading the answer failed: {error}"),
                };
                let exchange = exchange(Value::Null, None);
                let body = refuse(
                    &mut self.lock(),
                    call,
                    &exchange.path,
                    exchange.request,
                    failure,
                );
                return HttpResponse::json(502, &body);
            }
        };
        let value = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
        self.log(&mut self.lock(), exchange(value, None), record);
        HttpResponse {
            status,
            headers,
            body: ResponseBody::Whole(bytes.to_vec()),
        }
    }
}
