//! The gateway over real loopback HTTP: the scripted model server as upstream, a recording
//! gateway in front of it, then a replaying gateway from what was recorded.

use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use super::cassette::{Cassette, VERSION};
use super::scripted::{Script, ScriptedModel};
use super::{Endpoint, Gateway, RetryPolicy, Upstream};
use crate::http::Handler;

/// A served handler, stopped when dropped.
struct Served {
    url: String,
    _stop: oneshot::Sender<()>,
}

async fn serve(handler: Arc<dyn Handler>) -> Served {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(crate::http::serve(listener, handler, async {
        let _ = stopped.await;
    }));
    Served { url, _stop: stop }
}

fn scripted() -> ScriptedModel {
    ScriptedModel::new(
        Script::parse(
            "turns:\n  - tool_calls:\n      - name: list_tasks\n        arguments: {}\n  - text: Three tasks are open and none is late\n",
        )
        .unwrap(),
    )
}

fn upstream(url: &str) -> Arc<Upstream> {
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
async fn post(url: &str, path: &str, body: &str) -> (u16, Vec<String>) {
    let client: Client<HttpConnector, Full<Bytes>> =
        Client::builder(TokioExecutor::new()).build(HttpConnector::new());
    let request = hyper::Request::post(format!("{url}{path}"))
        .header("content-type", "application/json")
        .header("authorization", "Bearer clawtest-dummy-key")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let response = client.request(request).await.unwrap();
    let status = response.status().as_u16();
    let mut body = response.into_body();
    let mut frames = Vec::new();
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.unwrap().into_data() {
            frames.push(String::from_utf8(data.to_vec()).unwrap());
        }
    }
    (status, frames)
}

fn events(frames: &[String]) -> Vec<String> {
    frames
        .concat()
        .split_inclusive("\n\n")
        .map(str::to_string)
        .collect()
}

const FIRST: &str = r#"{"model":"claude-x","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"Review the tasks"}]}"#;
const SECOND: &str = r#"{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Review the tasks"},{"role":"assistant","content":null},{"role":"tool","content":"[]"}]}"#;

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
        trials: vec![recording.recording()],
    };
    let folder = tempfile::tempdir().unwrap();
    cassette.save(folder.path()).unwrap();
    let cassette = Cassette::load(folder.path(), "t").unwrap();
    let replaying = Gateway::replay(&cassette, 0);
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
    let (status, _) = post(&served.url, "/v1/chat/completions", SECOND).await;
    assert_eq!(status, 502);
    let failure = gateway.failure().unwrap().to_string();
    assert!(
        failure.starts_with("task `t` trial 1 call 0: openai at")
            && failure.contains("3 attempt(s)"),
        "{failure}"
    );
}
