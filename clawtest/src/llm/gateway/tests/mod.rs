//! The gateway over real loopback HTTP: the scripted model server (or a mirror that shows
//! what reached it) as upstream, a recording gateway in front of it, then a replaying
//! gateway from what was recorded. This file: recording, replaying and their failures;
//! `fidelity.rs`: what reaches the provider, and the limits; `record_missing.rs`: a replay that
//! turns to the provider at the first call its cassette cannot answer.

mod fidelity;
mod record_missing;

use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use std::sync::Mutex;

use serde_json::{Value, json};

use super::cassette::{
    Cassette, Interaction, RecordedRequest, RecordedResponse, TrialRecording, VERSION,
};
use super::failure::{FailureKind, GatewayFailure};
use super::scripted::{Script, ScriptedModel};
use super::{Endpoint, Gateway, RetryPolicy, Rules, TrialValues, Upstream};
use crate::http::{Handler, HttpRequest, HttpResponse, Reply, ResponseBody};
use crate::llm::client::{Chat, Message};
use crate::trajectory::Speaker;

/// A served handler, stopped when dropped.
pub(super) struct Served {
    pub(super) url: String,
    _stop: oneshot::Sender<()>,
}

pub(super) async fn serve(handler: Arc<dyn Handler>) -> Served {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(crate::http::serve(listener, handler, async {
        let _ = stopped.await;
    }));
    Served { url, _stop: stop }
}

pub(super) fn scripted() -> ScriptedModel {
    ScriptedModel::new(
        Script::parse(
            "turns:\n  - tool_calls:\n      - name: list_tasks\n        arguments: {}\n  - text: Three tasks are open and none is late\n",
        )
        .unwrap(),
    )
}

pub(super) fn upstream(url: &str) -> Arc<Upstream> {
    let endpoint = Endpoint {
        base_url: url.into(),
        api_key: Some("real-key".into()),
    };
    Arc::new(
        Upstream::new(
            Some(endpoint.clone()),
            Some(endpoint),
            RetryPolicy {
                retries: 2,
                backoff: Duration::from_millis(1),
            },
        )
        .unwrap(),
    )
}

/// Posts `body` and returns the status and the body's data frames as they arrived.
pub(super) async fn post(url: &str, path: &str, body: &str) -> (u16, Vec<String>) {
    let (status, _, frames) = send(url, "POST", path, &[], body).await;
    (status, frames)
}

/// Sends one request with `headers`; returns the status, the answer's headers and its data
/// frames as they arrived.
pub(super) async fn send(
    url: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<(String, String)>, Vec<String>) {
    let client: Client<HttpConnector, Full<Bytes>> =
        Client::builder(TokioExecutor::new()).build(HttpConnector::new());
    let mut request = hyper::Request::builder()
        .method(method)
        .uri(format!("{url}{path}"))
        .header("content-type", "application/json")
        .header("authorization", "Bearer clawtest-dummy-key");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let response = client.request(request).await.unwrap();
    let status = response.status().as_u16();
    let answer_headers = response
        .headers()
        .iter()
        .map(|(name, value)| {
            (
                name.to_string(),
                value.to_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let mut body = response.into_body();
    let mut frames = Vec::new();
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.unwrap().into_data() {
            frames.push(String::from_utf8_lossy(&data).into_owned());
        }
    }
    (status, answer_headers, frames)
}

/// An upstream that answers every request with what reached it (path, method, headers) as
/// a chat completion's JSON, or with `answer` when one is set; it keeps every request.
#[derive(Default)]
pub(super) struct Mirror {
    pub(super) seen: Mutex<Vec<HttpRequest>>,
    pub(super) answer: Option<fn() -> HttpResponse>,
}

impl Handler for Mirror {
    fn handle(&self, request: HttpRequest) -> Reply<'_> {
        Box::pin(async move {
            self.seen.lock().unwrap().push(request.clone());
            if let Some(answer) = self.answer {
                return answer();
            }
            let headers: serde_json::Map<String, Value> = request
                .headers
                .iter()
                .map(|(name, value)| (name.clone(), json!(value)))
                .collect();
            HttpResponse::json(
                200,
                &json!({"path": request.path, "method": request.method, "headers": headers,
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}),
            )
        })
    }
}

pub(super) fn body_of(frames: &[String]) -> Value {
    serde_json::from_str(&frames.concat()).unwrap_or(Value::Null)
}

pub(super) fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
}

pub(super) fn one_trial(interactions: Vec<Interaction>) -> Cassette {
    Cassette {
        version: VERSION,
        task_id: "t".into(),
        faults: None,
        trials: vec![TrialRecording { interactions }],
    }
}

pub(super) fn interaction(path: &str, request: Value, answer: Value) -> Interaction {
    Interaction {
        request: RecordedRequest {
            path: path.into(),
            body: request,
            whole: false,
        },
        response: RecordedResponse {
            status: 200,
            body: answer,
            events: None,
            retried: Vec::new(),
        },
        round: None,
        speaker: Speaker::Harness,
    }
}

fn events(frames: &[String]) -> Vec<String> {
    frames
        .concat()
        .split_inclusive("\n\n")
        .map(str::to_string)
        .collect()
}

pub(super) const FIRST: &str = r#"{"model":"claude-x","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"Review the tasks"}]}"#;
pub(super) const SECOND: &str = r#"{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Review the tasks"},{"role":"assistant","content":null},{"role":"tool","content":"[]"}]}"#;

#[tokio::test]
async fn a_recorded_stream_replays_the_same_events_and_whole_answers_the_same_bytes() {
    let model = serve(Arc::new(scripted())).await;
    let recording = Gateway::upstream("t", 0, upstream(&model.url), true);
    let recorder = serve(Arc::new(recording.clone())).await;

    let (status, live_stream) = post(&recorder.url, "/v1/messages", FIRST).await;
    assert_eq!(status, 200);
    let (_, live_whole) = post(&recorder.url, "/v1/chat/completions", SECOND).await;
    recording.settle().await;
    assert_eq!(recording.failure(), None);
    let calls = recording.calls();
    assert_eq!(calls.len(), 2);
    assert!(calls[0].events.is_some() && calls[0].input_tokens > 0);
    assert!(calls[1].output_tokens > 0);

    let cassette = Cassette {
        version: VERSION,
        task_id: "t".into(),
        faults: None,
        trials: vec![recording.recording()],
    };
    let folder = tempfile::tempdir().unwrap();
    cassette.save(folder.path()).unwrap();
    let cassette = Cassette::load(folder.path(), "t").unwrap();
    let replaying = Gateway::replay(&Arc::new(cassette), 0);
    let replayer = serve(Arc::new(replaying.clone())).await;
    let (status, replayed_stream) = post(&replayer.url, "/v1/messages", FIRST).await;
    assert_eq!(status, 200);
    let (_, replayed_whole) = post(&replayer.url, "/v1/chat/completions", SECOND).await;
    assert_eq!(replaying.failure(), None);

    assert!(events(&live_stream).len() > 4);
    assert_eq!(events(&replayed_stream), events(&live_stream));
    let value =
        |frames: &[String]| serde_json::from_str::<serde_json::Value>(&frames.concat()).unwrap();
    assert_eq!(value(&replayed_whole), value(&live_whole));
    assert_eq!(replaying.calls()[1].input_tokens, calls[1].input_tokens);
}

#[tokio::test]
async fn upstream_429_and_5xx_are_retried_and_recorded_as_such() {
    let model = serve(Arc::new(scripted().failing_first(&[429, 503]))).await;
    let gateway = Gateway::upstream("t", 0, upstream(&model.url), true);
    let served = serve(Arc::new(gateway.clone())).await;
    let (status, _) = post(&served.url, "/v1/chat/completions", SECOND).await;
    assert_eq!(status, 200);
    assert_eq!(gateway.calls()[0].retried, vec![429, 503]);
    assert_eq!(
        gateway.recording().interactions[0].response.retried,
        vec![429, 503]
    );
}

#[tokio::test]
async fn an_unreachable_upstream_is_a_failure_naming_the_call() {
    // A port that was free a moment ago: nothing listens there.
    let url = {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let gateway = Gateway::upstream("t", 1, upstream(&url), false);
    let served = serve(Arc::new(gateway.clone())).await;
    let (status, headers, _) = send(&served.url, "POST", "/v1/chat/completions", &[], SECOND).await;
    // The gateway has retried already: the SDK is told not to retry again.
    assert_eq!(
        (status, header(&headers, "x-should-retry")),
        (502, Some("false"))
    );
    let failure = gateway.failure().unwrap().to_string();
    assert!(
        failure.starts_with("task `t` trial 1 call 0: openai at")
            && failure.contains("3 attempt(s)"),
        "{failure}"
    );
}

#[tokio::test]
async fn a_divergence_is_a_400_the_sdks_do_not_retry_in_each_providers_error_shape() {
    let cassette = one_trial(vec![interaction(
        "/v1/chat/completions",
        json!({"messages": [{"role": "user", "content": "recorded"}]}),
        json!({"choices": []}),
    )]);
    let replaying = Gateway::replay(&Arc::new(cassette), 0);
    let served = serve(Arc::new(replaying.clone())).await;
    let (status, headers, frames) = send(
        &served.url,
        "POST",
        "/v1/chat/completions",
        &[],
        r#"{"messages":[{"role":"user","content":"different"}]}"#,
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(header(&headers, "x-should-retry"), Some("false"));
    let body = body_of(&frames);
    assert_eq!(body["error"]["type"], "invalid_request_error", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("diverges"),
        "{body}"
    );
    // Anthropic's SDK reads {"type": "error", "error": {...}}.
    let (status, headers, frames) = send(
        &served.url,
        "POST",
        "/v1/messages",
        &[],
        r#"{"messages":[]}"#,
    )
    .await;
    assert_eq!(
        (status, header(&headers, "x-should-retry")),
        (400, Some("false"))
    );
    let body = body_of(&frames);
    assert_eq!(body["type"], "error", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("call 0"),
        "the first failure is kept: {body}"
    );
    assert!(matches!(
        replaying.failure(),
        Some(GatewayFailure {
            call: 0,
            kind: FailureKind::Divergence { .. },
            ..
        })
    ));
}

#[tokio::test]
async fn a_streaming_client_replayed_from_a_whole_recording_gets_the_answer_as_events() {
    let cassette = one_trial(vec![
        interaction(
            "/v1/chat/completions",
            json!({"messages": [{"role": "user", "content": "hi"}]}),
            json!({"id": "c", "model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello there"}, "finish_reason": "stop"}]}),
        ),
        interaction(
            "/v1/messages",
            json!({}),
            json!({"id": "m", "type": "message", "role": "assistant", "model": "c", "content": [{"type": "text", "text": "Bye"}], "stop_reason": "end_turn", "stop_sequence": null, "usage": {"input_tokens": 1, "output_tokens": 1}}),
        ),
    ]);
    let gateway = Gateway::replay(&Arc::new(cassette), 0);
    let served = serve(Arc::new(gateway.clone())).await;
    let (status, headers, frames) = send(
        &served.url,
        "POST",
        "/v1/chat/completions",
        &[],
        r#"{"stream":true,"messages":[{"role":"user","content":"hi"}]}"#,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "content-type"), Some("text/event-stream"));
    let stream = frames.concat();
    assert!(
        stream.contains(r#""content":"Hello there""#) && stream.ends_with("data: [DONE]\n\n"),
        "{stream}"
    );
    let (_, _, frames) = send(
        &served.url,
        "POST",
        "/v1/messages",
        &[],
        r#"{"stream":true}"#,
    )
    .await;
    assert!(frames.concat().contains(r#""text":"Bye""#), "{frames:?}");
    assert_eq!(gateway.failure(), None);
}

#[tokio::test]
async fn a_recording_holds_placeholders_where_the_trial_had_its_own_values() {
    let model = serve(Arc::new(scripted())).await;
    let values = || TrialValues::default().with_url("services_url", "http://127.0.0.1:4321");
    let recording = Gateway::upstream("t", 0, upstream(&model.url), true).with_values(values());
    let recorder = serve(Arc::new(recording.clone())).await;
    let ask = |url: &str| {
        format!(
            r#"{{"model":"m","messages":[{{"role":"system","content":"tools at {url}"}},{{"role":"user","content":"go"}}]}}"#
        )
    };
    post(
        &recorder.url,
        "/v1/chat/completions",
        &ask("http://127.0.0.1:4321"),
    )
    .await;
    let recorded = recording.recording();
    assert_eq!(
        recorded.interactions[0].request.body["messages"][0]["content"],
        "tools at {{services_url}}"
    );
    assert_eq!(
        recording.calls()[0].request["messages"][0]["content"],
        "tools at http://127.0.0.1:4321",
        "the log keeps what was sent"
    );
    assert!(recorded.interactions[0].request.whole);
    // A recording is the whole request: one with a message put before the recorded ones
    // diverges (a hand-written cassette's lists match the newest items).
    let longer = Gateway::replay(&Arc::new(one_trial(recorded.interactions.clone())), 0)
        .with_values(TrialValues::default().with_url("services_url", "http://127.0.0.1:9999"));
    let longer_server = serve(Arc::new(longer.clone())).await;
    let (status, _) = post(
        &longer_server.url,
        "/v1/chat/completions",
        r#"{"model":"m","messages":[{"role":"system","content":"new"},{"role":"system","content":"tools at http://127.0.0.1:9999"},{"role":"user","content":"go"}]}"#,
    )
    .await;
    assert!((400..500).contains(&status), "{status}");
    assert!(
        longer.failure().is_some_and(
            |failure| format!("{failure:?}").contains("has 3 items, the recording has 2")
        ),
        "{:?}",
        longer.failure()
    );
    // Another trial, another port: the recording matches.
    let replaying = Gateway::replay(&Arc::new(one_trial(recorded.interactions)), 0)
        .with_values(TrialValues::default().with_url("services_url", "http://127.0.0.1:9999"));
    let replayer = serve(Arc::new(replaying.clone())).await;
    let (status, _) = post(
        &replayer.url,
        "/v1/chat/completions",
        &ask("http://127.0.0.1:9999"),
    )
    .await;
    assert_eq!((status, replaying.failure()), (200, None));
}

/// A client of clawtest's own asking as `speaker`, as the loop and the judge build theirs.
fn asking_as(speaker: Speaker) -> Chat {
    Chat {
        provider: crate::config::Provider::OpenAi,
        model: "m".into(),
        max_tokens: None,
        speaker,
    }
}

/// The closed loop's simulated user's client, as the loop builds it.
fn simulated_user() -> Chat {
    asking_as(Speaker::SimulatedUser)
}

#[tokio::test]
async fn a_closed_loops_calls_are_recorded_with_their_round_and_speaker_and_replayed_so() {
    let model = serve(Arc::new(scripted())).await;
    let recording = Gateway::upstream("t", 0, upstream(&model.url), true);
    let recorder = serve(Arc::new(recording.clone())).await;
    let ask = r#"{"model":"m","messages":[{"role":"user","content":"go"}]}"#;
    recording.begin_round(1);
    post(&recorder.url, "/v1/chat/completions", ask).await;
    recording.begin_round(2);
    simulated_user()
        .reply(&recording, &[Message::user("what next?")])
        .await
        .unwrap();
    post(&recorder.url, "/v1/chat/completions", ask).await;
    let recorded = recording.recording();
    let tags: Vec<(Option<u32>, Speaker)> = recorded
        .interactions
        .iter()
        .map(|interaction| (interaction.round, interaction.speaker))
        .collect();
    use Speaker::{Harness, SimulatedUser};
    assert_eq!(
        tags,
        [
            (Some(1), Harness),
            (Some(2), SimulatedUser),
            (Some(2), Harness)
        ]
    );
    assert_eq!(
        recording
            .calls()
            .iter()
            .map(|call| call.speaker)
            .collect::<Vec<_>>(),
        [Harness, SimulatedUser, Harness]
    );

    // Replayed: round 1 calling twice gets no answer of round 2's; it fails in round 1.
    let replaying = Gateway::replay(&Arc::new(one_trial(recorded.interactions.clone())), 0);
    let replayer = serve(Arc::new(replaying.clone())).await;
    replaying.begin_round(1);
    assert_eq!(
        post(&replayer.url, "/v1/chat/completions", ask).await.0,
        200
    );
    assert_eq!(
        post(&replayer.url, "/v1/chat/completions", ask).await.0,
        400
    );
    assert!(
        matches!(
            replaying.failure(),
            Some(GatewayFailure {
                kind: FailureKind::RoundExhausted {
                    round: 1,
                    in_round: 1,
                    recorded: 1,
                    ..
                },
                ..
            })
        ),
        "{:?}",
        replaying.failure()
    );

    // In order, each speaker gets its own recording of the round, whatever the interleaving.
    let replaying = Gateway::replay(&Arc::new(one_trial(recorded.interactions)), 0);
    let replayer = serve(Arc::new(replaying.clone())).await;
    replaying.begin_round(1);
    post(&replayer.url, "/v1/chat/completions", ask).await;
    replaying.begin_round(2);
    let (status, frames) = post(&replayer.url, "/v1/chat/completions", ask).await;
    assert_eq!(status, 200, "{frames:?}");
    let simulated = simulated_user()
        .reply(&replaying, &[Message::user("what next?")])
        .await;
    assert!(simulated.is_ok(), "{simulated:?}");
    assert_eq!(replaying.failure(), None);
}

#[tokio::test]
async fn each_speaker_replays_its_own_calls_in_its_own_order_whatever_the_interleaving() {
    let model = serve(Arc::new(scripted())).await;
    let recording = Gateway::upstream("t", 0, upstream(&model.url), true);
    let recorder = serve(Arc::new(recording.clone())).await;
    let ask = |text: &str| {
        json!({"model": "m", "messages": [{"role": "user", "content": text}]}).to_string()
    };
    // Recorded: the harness, the supervisor, the harness again, then the judge.
    post(&recorder.url, "/v1/chat/completions", &ask("first")).await;
    asking_as(Speaker::Supervisor)
        .reply(&recording, &[Message::user("judge the round")])
        .await
        .unwrap();
    post(&recorder.url, "/v1/chat/completions", &ask("second")).await;
    asking_as(Speaker::Judge)
        .reply(&recording, &[Message::user("score the rubric")])
        .await
        .unwrap();
    let recorded = recording.recording();
    let speakers: Vec<Speaker> = recorded
        .interactions
        .iter()
        .map(|interaction| interaction.speaker)
        .collect();
    assert_eq!(
        speakers,
        [
            Speaker::Harness,
            Speaker::Supervisor,
            Speaker::Harness,
            Speaker::Judge
        ]
    );
    // The file names them, and reads them back.
    let cassette = one_trial(recorded.interactions.clone());
    let text = cassette.to_text().unwrap();
    assert!(
        text.contains("speaker: supervisor") && text.contains("speaker: judge"),
        "{text}"
    );
    assert_eq!(
        Cassette::parse(&text, std::path::Path::new("t.yaml")).unwrap(),
        cassette
    );

    // Replayed in another interleaving: the judge first, then both harness calls, then the
    // supervisor: each speaker still gets its own answers.
    let replaying = Gateway::replay(&Arc::new(cassette), 0);
    let replayer = serve(Arc::new(replaying.clone())).await;
    asking_as(Speaker::Judge)
        .reply(&replaying, &[Message::user("score the rubric")])
        .await
        .unwrap();
    for text in ["first", "second"] {
        let (status, _) = post(&replayer.url, "/v1/chat/completions", &ask(text)).await;
        assert_eq!(status, 200, "{:?}", replaying.failure());
    }
    asking_as(Speaker::Supervisor)
        .reply(&replaying, &[Message::user("judge the round")])
        .await
        .unwrap();
    assert_eq!(replaying.failure(), None);

    // A speaker asking once more than recorded fails, named, without taking another's answer.
    let error = asking_as(Speaker::Judge)
        .reply(&replaying, &[Message::user("score the rubric")])
        .await
        .unwrap_err();
    assert_eq!(
        error,
        "task `t` trial 0: the judge made its model call 1 but the cassette records only 1 such call(s) for this trial"
    );
}
