//! `record-missing` over loopback HTTP: a replaying gateway with the provider as its fallback.

use std::sync::Arc;

use serde_json::{Value, json};

use super::super::cassette::{Cassette, VERSION};
use super::super::{Gateway, StaleLog};
use super::{SECOND, post, scripted, serve, upstream};

/// `record-missing`: the calls the cassette answers are replayed (and kept for the new
/// recording as they were answered); from the first it cannot answer, the trial's calls go to
/// the provider and are recorded; the stale log says where and shows the diff.
#[tokio::test]
async fn record_missing_replays_what_matches_and_records_from_the_first_call_that_does_not() {
    const CHAT_FIRST: &str =
        r#"{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Review the tasks"}]}"#;
    let model = serve(Arc::new(scripted())).await;
    let recording = Gateway::upstream("t", 0, upstream(&model.url), true);
    let recorder = serve(Arc::new(recording.clone())).await;
    post(&recorder.url, "/v1/chat/completions", CHAT_FIRST).await;
    post(&recorder.url, "/v1/chat/completions", SECOND).await;
    let mut recorded = recording.recording();
    // The first answer marked, to tell a replayed answer from the provider's.
    recorded.interactions[0].response.body["choices"][0]["message"]["content"] =
        json!("from the cassette");
    let cassette = Cassette {
        version: VERSION,
        task_id: "t".into(),
        faults: None,
        trials: vec![recorded.clone()],
    };

    let stale = Arc::new(StaleLog::default());
    let missing = Gateway::replay(&Arc::new(cassette.clone()), 0)
        .with_fallback(upstream(&model.url))
        .with_stale(Arc::clone(&stale));
    let served = serve(Arc::new(missing.clone())).await;
    let (status, first) = post(&served.url, "/v1/chat/completions", CHAT_FIRST).await;
    assert_eq!(status, 200);
    assert!(first.concat().contains("from the cassette"), "{first:?}");
    assert_eq!(stale.of_task("t"), None);
    let changed = SECOND.replace(r#""content":"[]""#, r#""content":"[{\"id\":1}]""#);
    let (status, second) = post(&served.url, "/v1/chat/completions", &changed).await;
    assert_eq!(status, 200, "{second:?}");
    assert!(
        second.concat().contains("Three tasks are open"),
        "{second:?}"
    );
    assert_eq!(missing.failure(), None);
    let noted = stale.of_task("t").expect("the divergence is noted");
    assert_eq!((noted.trial, noted.call), (0, 1));
    assert!(
        noted.reason.contains("body.messages[-1].content"),
        "{}",
        noted.reason
    );
    let diff = noted.diff.expect("a diff");
    assert!(
        diff.contains("-  content: \"[]\"\n+  content: \"[{\\\"id\\\":1}]\"\n"),
        "{diff}"
    );
    assert!(missing.check_complete());
    // The new recording: the replayed call as it was answered, then the provider's.
    let new = missing.recording().interactions;
    assert_eq!(new.len(), 2);
    assert_eq!(new[0].response.body, recorded.interactions[0].response.body);
    assert_eq!(
        new[1].request.body,
        serde_json::from_str::<Value>(&changed).unwrap()
    );
    assert!(new.iter().all(|interaction| interaction.request.whole));

    // A plain replay of a trial that makes fewer calls than recorded: noted, not failed.
    let short_log = Arc::new(StaleLog::default());
    let short = Gateway::replay(&Arc::new(cassette), 0).with_stale(Arc::clone(&short_log));
    let served = serve(Arc::new(short.clone())).await;
    post(&served.url, "/v1/chat/completions", CHAT_FIRST).await;
    assert_eq!(short.failure(), None);
    assert!(short.check_complete());
    let noted = short_log.of_task("t").expect("the short trial is noted");
    assert_eq!(noted.call, 1);
    assert_eq!(
        noted.reason,
        "the trial made 1 model call(s) and the cassette records 2"
    );
}
