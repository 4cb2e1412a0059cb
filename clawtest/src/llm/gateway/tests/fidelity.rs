//! What reaches the provider through the gateway, and what the gateway refuses to read or
//! record: the endpoints and headers forwarded, the providers' sub-routes and model list,
//! answers that are not JSON or compressed, and the byte limits and the trial's token.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::*;

#[tokio::test]
async fn only_model_endpoints_reach_the_provider_and_only_allowed_headers_with_them() {
    let mirror = Arc::new(Mirror::default());
    let upstream_url = serve(Arc::clone(&mirror) as Arc<dyn Handler>).await;
    // A base URL ending in /v1, as the SDKs' own defaults do.
    let gateway = Gateway::upstream("t", 0, upstream(&format!("{}/v1", upstream_url.url)), true);
    let served = serve(Arc::new(gateway.clone())).await;
    for path in [
        "/v1/files",
        "/v1/fine_tuning/jobs",
        "/v1/../../admin",
        "/v2/chat/completions",
    ] {
        let (status, _, frames) = send(&served.url, "POST", path, &[], "{}").await;
        assert_eq!(status, 404, "{path}");
        assert!(
            frames.concat().contains("serves model calls only"),
            "{path}: {frames:?}"
        );
    }
    assert!(
        mirror.seen.lock().unwrap().is_empty(),
        "nothing but model calls is forwarded"
    );
    let (status, _, frames) = send(
        &served.url,
        "POST",
        "/v1/chat/completions",
        &[
            ("accept-encoding", "gzip, br"),
            ("openai-organization", "org-of-the-harness"),
            ("openai-project", "p"),
            ("cookie", "c=1"),
        ],
        r#"{"model":"m","messages":[]}"#,
    )
    .await;
    assert_eq!(status, 200);
    let seen = body_of(&frames);
    assert_eq!(seen["path"], "/v1/chat/completions", "no /v1/v1: {seen}");
    assert_eq!(seen["headers"]["accept-encoding"], "identity", "{seen}");
    assert_eq!(
        seen["headers"]["authorization"], "Bearer real-key",
        "{seen}"
    );
    for dropped in ["openai-organization", "openai-project", "cookie"] {
        assert!(seen["headers"].get(dropped).is_none(), "{dropped}: {seen}");
    }
}

#[tokio::test]
async fn count_tokens_goes_to_anthropic_and_the_model_list_is_served() {
    let openai = Arc::new(Mirror::default());
    let anthropic = Arc::new(Mirror::default());
    let (openai_url, anthropic_url) = (
        serve(Arc::clone(&openai) as Arc<dyn Handler>).await,
        serve(Arc::clone(&anthropic) as Arc<dyn Handler>).await,
    );
    let endpoint = |url: &str| {
        Some(Endpoint {
            base_url: url.into(),
            api_key: Some("k".into()),
        })
    };
    let retry = RetryPolicy {
        retries: 0,
        backoff: Duration::ZERO,
    };
    let both = Arc::new(
        Upstream::new(
            endpoint(&openai_url.url),
            endpoint(&anthropic_url.url),
            retry,
        )
        .unwrap(),
    );
    let gateway = Gateway::upstream("t", 0, both, false);
    let served = serve(Arc::new(gateway.clone())).await;
    let (status, _, _) = send(
        &served.url,
        "POST",
        "/v1/messages/count_tokens",
        &[("anthropic-version", "2023-06-01")],
        r#"{"model":"c","messages":[]}"#,
    )
    .await;
    assert_eq!(status, 200);
    let (status, _, _) = send(&served.url, "GET", "/v1/models", &[], "").await;
    assert_eq!(status, 200, "GET /v1/models is served, not 405");
    let anthropic_paths: Vec<String> = anthropic
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.path.clone())
        .collect();
    let openai_seen: Vec<(String, String)> = openai
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|r| (r.method.clone(), r.path.clone()))
        .collect();
    assert_eq!(anthropic_paths, vec!["/v1/messages/count_tokens"]);
    assert_eq!(
        openai_seen,
        vec![("GET".to_string(), "/v1/models".to_string())]
    );
    assert_eq!(
        gateway.calls().len(),
        1,
        "the model list is not a model call"
    );

    // In replay, the list names the models the recording calls.
    let cassette = one_trial(vec![interaction(
        "/v1/chat/completions",
        json!({"model": "gpt-4o-mini"}),
        json!({"choices": []}),
    )]);
    let replayer = serve(Arc::new(Gateway::replay(&Arc::new(cassette), 0))).await;
    let (status, _, frames) = send(&replayer.url, "GET", "/v1/models", &[], "").await;
    assert_eq!(status, 200);
    assert_eq!(body_of(&frames)["data"][0]["id"], "gpt-4o-mini");
}

#[tokio::test]
async fn a_non_json_or_compressed_answer_is_not_recorded() {
    let html = Arc::new(Mirror {
        answer: Some(|| HttpResponse {
            status: 404,
            headers: vec![("content-type".into(), "text/html".into())],
            body: ResponseBody::Whole(b"<html>Not Found</html>".to_vec()),
        }),
        ..Mirror::default()
    });
    let upstream_url = serve(Arc::clone(&html) as Arc<dyn Handler>).await;
    let gateway = Gateway::upstream("t", 0, upstream(&upstream_url.url), true);
    let served = serve(Arc::new(gateway.clone())).await;
    let (status, _) = post(&served.url, "/v1/chat/completions", SECOND).await;
    assert_eq!(status, 404, "the harness still sees what the provider said");
    let failure = gateway.failure().expect("a failure").to_string();
    assert!(
        failure.contains("is not JSON") && failure.contains("<html>"),
        "{failure}"
    );

    let gzip = Arc::new(Mirror {
        answer: Some(|| HttpResponse {
            status: 200,
            headers: vec![
                ("content-type".into(), "application/json".into()),
                ("content-encoding".into(), "gzip".into()),
            ],
            body: ResponseBody::Whole(vec![0x1f, 0x8b, 8, 0, 0, 0]),
        }),
        ..Mirror::default()
    });
    let upstream_url = serve(Arc::clone(&gzip) as Arc<dyn Handler>).await;
    let gateway = Gateway::upstream("t", 0, upstream(&upstream_url.url), true);
    let served = serve(Arc::new(gateway.clone())).await;
    post(&served.url, "/v1/chat/completions", SECOND).await;
    let failure = gateway.failure().expect("a failure").to_string();
    assert!(failure.contains("content-encoding `gzip`"), "{failure}");
}

#[tokio::test]
async fn limits_and_the_token_hold_over_http() {
    let cassette = one_trial(vec![]);
    let rules = Rules {
        max_request_bytes: 1024,
        ..Rules::default()
    };
    let gateway = Gateway::replay(&Arc::new(cassette), 0)
        .with_rules(Arc::new(rules))
        .with_token("secret".into());
    let served = serve(Arc::new(gateway.clone())).await;
    let big = format!("{{\"messages\":\"{}\"}}", "x".repeat(4096));
    let (status, headers, frames) = send(
        &served.url,
        "POST",
        "/secret/v1/chat/completions",
        &[],
        &big,
    )
    .await;
    assert_eq!(status, 413, "{frames:?}");
    assert_eq!(header(&headers, "x-should-retry"), Some("false"));
    assert!(
        frames.concat().contains("llm.max_request_bytes"),
        "{frames:?}"
    );
    let (status, _, frames) = send(&served.url, "POST", "/v1/chat/completions", &[], "{}").await;
    assert_eq!(status, 404, "without the trial's token: {frames:?}");
    let (status, _, _) = send(
        &served.url,
        "POST",
        "/secret/v1/chat/completions",
        &[],
        "{}",
    )
    .await;
    assert_eq!(
        status, 400,
        "with it, the call reaches the (empty) recording"
    );
}

#[tokio::test]
async fn an_answer_over_the_limit_reaches_the_harness_but_is_not_recorded() {
    let big = Arc::new(Mirror {
        answer: Some(|| {
            HttpResponse::json(200, &json!({"choices": [], "padding": "x".repeat(8192)}))
        }),
        ..Mirror::default()
    });
    let upstream_url = serve(Arc::clone(&big) as Arc<dyn Handler>).await;
    let rules = Rules {
        max_answer_bytes: 4096,
        ..Rules::default()
    };
    let gateway =
        Gateway::upstream("t", 0, upstream(&upstream_url.url), true).with_rules(Arc::new(rules));
    let served = serve(Arc::new(gateway.clone())).await;
    let (status, _) = post(&served.url, "/v1/chat/completions", SECOND).await;
    assert_eq!(status, 502);
    let failure = gateway.failure().expect("a failure").to_string();
    assert!(
        failure.contains("over llm.max_answer_bytes (4096 bytes)"),
        "{failure}"
    );
    assert!(gateway.recording().interactions.is_empty());

    // A stream over the limit is passed on whole, and fails the trial.
    let model = serve(Arc::new(scripted())).await;
    let rules = Rules {
        max_answer_bytes: 200,
        ..Rules::default()
    };
    let gateway = Gateway::upstream("t", 0, upstream(&model.url), true).with_rules(Arc::new(rules));
    let served = serve(Arc::new(gateway.clone())).await;
    let long = r#"{"model":"claude-x","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"go"},{"role":"assistant","content":"x"}]}"#;
    let (status, frames) = post(&served.url, "/v1/messages", long).await;
    gateway.settle().await;
    assert_eq!(status, 200);
    assert!(frames.concat().contains("message_stop"), "{frames:?}");
    let failure = gateway.failure().expect("a failure").to_string();
    assert!(
        failure.contains("streamed answer is over llm.max_answer_bytes"),
        "{failure}"
    );
}
