//! A trial's judge on real gateways: replayed from the trial's cassette, a miss naming the
//! judge, the judge cache read for a cassette that records no judge call (and moved into the
//! cassette by `record-missing`), recorded from `[judge]`'s own provider.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::config::Provider;
use crate::grade::judge::JudgeAnswers;
use crate::llm::gateway::cassette::{
    Cassette, Interaction, RecordedRequest, RecordedResponse, TrialRecording,
};
use crate::llm::gateway::scripted::{Script, ScriptedModel};
use crate::llm::gateway::{Budget, Endpoint, Prices, RetryPolicy, StaleLog};

/// The judge's answer in the cassettes and the scripted model here.
const VERDICT: &str = r#"{"score": 0.8, "reasoning": "Mentions the rain."}"#;

fn config(root: &Path, judge: &str) -> Config {
    Config::from_text(
        &format!("[judge]\ncache = \"judge-cache\"\n{judge}"),
        Path::new("clawtest.toml"),
        root.to_path_buf(),
    )
    .unwrap()
}

fn models(mode: Mode) -> ModelAccess {
    ModelAccess {
        mode,
        upstream: None,
        prices: Arc::new(Prices::default()),
        budget: Arc::new(Budget::new(None)),
        rules: Arc::default(),
        simulator_provider: Provider::OpenAi,
        stale: Arc::default(),
    }
}

fn request(component: &str, prompt: &str) -> JudgeRequest {
    JudgeRequest {
        component: component.into(),
        rubric: "Does it mention the rain?".into(),
        prompt: prompt.into(),
        key: format!("key-{component}"),
    }
}

/// The judge's recorded call asking `prompt`, answered with `text`.
fn judge_call(prompt: &str, text: &str) -> Interaction {
    Interaction {
        request: RecordedRequest {
            path: "/v1/chat/completions".into(),
            body: json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": prompt}]}),
            whole: false,
        },
        response: RecordedResponse {
            status: 200,
            body: crate::llm::client::answer_body(Provider::OpenAi, text),
            events: None,
            retried: Vec::new(),
        },
        round: None,
        speaker: Speaker::Judge,
    }
}

fn cassette(interactions: Vec<Interaction>) -> Cassette {
    Cassette {
        version: crate::llm::gateway::cassette::VERSION,
        task_id: "t".into(),
        faults: None,
        trials: vec![TrialRecording { interactions }],
    }
}

async fn ask(judge: &TrialJudge<'_>, requests: &[JudgeRequest]) -> Result<JudgeAnswers, String> {
    super::super::answer_all(judge, requests)
        .await
        .map_err(|JudgeError(message)| message)
}

/// A judge cache in `root` holding `answer` for `request`.
fn cache_holds(root: &Path, request: &JudgeRequest, score: f64) -> PathBuf {
    let folder = root.join("judge-cache");
    std::fs::create_dir_all(&folder).unwrap();
    let entry = json!({"component": request.component, "rubric": request.rubric, "score": score, "reasoning": "cached"});
    let path = folder.join(format!("{}.json", request.key));
    std::fs::write(&path, entry.to_string()).unwrap();
    path
}

#[tokio::test]
async fn a_replay_answers_the_judge_from_the_trials_cassette_in_its_own_order() {
    let root = tempfile::tempdir().unwrap();
    let judging = Judging::new(&config(root.path(), ""), &models(Mode::Replay), None, true);
    let gateway = Gateway::replay(
        &Arc::new(cassette(vec![
            judge_call("first rubric", VERDICT),
            judge_call("second rubric", r#"{"score": 0.1, "reasoning": "No."}"#),
        ])),
        0,
    );
    let judge = judging.for_trial(&gateway, Mode::Replay);
    let answers = ask(
        &judge,
        &[
            request("first", "first rubric"),
            request("second", "second rubric"),
        ],
    )
    .await
    .unwrap();
    assert_eq!(answers["first"].score, 0.8);
    assert_eq!(answers["second"].reasoning, "No.");
    let calls = gateway.calls();
    assert_eq!(
        calls.iter().map(|call| call.speaker).collect::<Vec<_>>(),
        [Speaker::Judge, Speaker::Judge]
    );
    assert_eq!(calls[0].request["messages"][0]["content"], "first rubric");
    // No cache was needed, and none was written.
    assert!(!root.path().join("judge-cache").exists());
    assert!(!gateway.check_complete());
}

#[tokio::test]
async fn a_question_the_cassette_does_not_record_fails_the_trial_naming_the_judge() {
    let root = tempfile::tempdir().unwrap();
    let judging = Judging::new(&config(root.path(), ""), &models(Mode::Replay), None, true);
    let gateway = Gateway::replay(
        &Arc::new(cassette(vec![judge_call("first rubric", VERDICT)])),
        0,
    );
    let judge = judging.for_trial(&gateway, Mode::Replay);
    let error = ask(
        &judge,
        &[
            request("first", "first rubric"),
            request("second", "another"),
        ],
    )
    .await
    .unwrap_err();
    assert_eq!(
        error,
        "the LLM judge could not answer for `second`: task `t` trial 0: the judge made its model call 1 but the cassette records only 1 such call(s) for this trial"
    );
    assert!(gateway.failure().unwrap().needs_recording());
    // A question that differs from the recorded one is a divergence, as any call's is.
    let gateway = Gateway::replay(
        &Arc::new(cassette(vec![judge_call("first rubric", VERDICT)])),
        0,
    );
    let judge = judging.for_trial(&gateway, Mode::Replay);
    let error = ask(&judge, &[request("first", "first rubric, changed")])
        .await
        .unwrap_err();
    assert!(
        error.contains("request diverges from the cassette"),
        "{error}"
    );
}

#[tokio::test]
async fn a_cassette_recorded_before_the_judges_calls_takes_them_from_the_cache_and_says_so() {
    let root = tempfile::tempdir().unwrap();
    let judging = Judging::new(&config(root.path(), ""), &models(Mode::Replay), None, true);
    let question = request("first", "first rubric");
    cache_holds(root.path(), &question, 0.6);
    let stale = Arc::new(StaleLog::default());
    // The harness's call only: the judge's were in the cache then.
    let mut harness_call = judge_call("the task", "done");
    harness_call.speaker = Speaker::Harness;
    let gateway = Gateway::replay(&Arc::new(cassette(vec![harness_call.clone()])), 0)
        .with_stale(Arc::clone(&stale));
    let judge = judging.for_trial(&gateway, Mode::Replay);
    let answers = ask(&judge, std::slice::from_ref(&question)).await.unwrap();
    assert_eq!(
        (answers["first"].score, answers["first"].reasoning.as_str()),
        (0.6, "cached")
    );
    // Logged as the judge's call, and the trial noted for `cargo clawtest cassettes`.
    let calls = gateway.calls();
    assert_eq!(calls[0].speaker, Speaker::Judge);
    let noted = stale.of_task("t").unwrap();
    assert!(noted.reason.contains("record-missing"), "{}", noted.reason);
    assert!(gateway.recording().interactions.is_empty());

    // `record-missing` moves the answer into the trial's recording (nothing asked: the
    // provider's address answers nothing), and a replay of it needs no cache.
    let nowhere = upstream("http://127.0.0.1:9");
    let moving = Gateway::replay(&Arc::new(cassette(vec![harness_call.clone()])), 0)
        .with_fallback(Arc::clone(&nowhere))
        .with_stale(Arc::new(StaleLog::default()));
    let judge = judging.for_trial(&moving, Mode::RecordMissing);
    assert_eq!(harness_asks(&moving).await.as_deref(), Ok("done"));
    ask(&judge, std::slice::from_ref(&question)).await.unwrap();
    assert!(moving.check_complete(), "the trial is to be written");
    let recorded = moving.recording().interactions;
    assert_eq!(
        recorded
            .iter()
            .map(|interaction| interaction.speaker)
            .collect::<Vec<_>>(),
        [Speaker::Harness, Speaker::Judge]
    );
    std::fs::remove_dir_all(root.path().join("judge-cache")).unwrap();
    let replaying = Gateway::replay(&Arc::new(cassette(recorded)), 0);
    let judge = judging.for_trial(&replaying, Mode::Replay);
    assert_eq!(harness_asks(&replaying).await.as_deref(), Ok("done"));
    let again = ask(&judge, &[question]).await.unwrap();
    assert_eq!(again, answers);
    assert_eq!(replaying.failure(), None);
}

/// The harness's call of the cassettes here (`the task`), through `gateway`: its answer.
async fn harness_asks(gateway: &Gateway) -> Result<String, String> {
    let harness = Chat {
        provider: Provider::OpenAi,
        model: "gpt-4o-mini".into(),
        max_tokens: None,
        speaker: Speaker::Harness,
    };
    harness.ask(gateway, &[Message::user("the task")]).await
}

/// A client of `url` for both wire formats.
fn upstream(url: &str) -> Arc<Upstream> {
    let endpoint = Endpoint {
        base_url: url.into(),
        api_key: None,
    };
    let retry = RetryPolicy {
        retries: 0,
        backoff: std::time::Duration::from_millis(1),
    };
    Arc::new(Upstream::new(Some(endpoint.clone()), Some(endpoint), retry).unwrap())
}

/// The scripted model answering every question with [`VERDICT`], on loopback until the
/// sender is dropped.
async fn scripted_judge() -> (String, tokio::sync::oneshot::Sender<()>) {
    let script = Script::parse(&format!("turns:\n  - text: {VERDICT:?}\n")).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(crate::http::serve(
        listener,
        Arc::new(ScriptedModel::new(script)),
        async {
            let _ = stopped.await;
        },
    ));
    (url, stop)
}

#[tokio::test]
async fn recorded_the_judges_calls_go_to_its_own_provider_and_into_the_cassette() {
    let (url, _stop) = scripted_judge().await;
    let root = tempfile::tempdir().unwrap();
    let section = format!("provider = \"openai\"\nmodel = \"judge-model\"\nbase_url = \"{url}\"\n");
    let judging = Judging::new(
        &config(root.path(), &section),
        &models(Mode::Record),
        Some("harness-model"),
        true,
    );
    // The trial's own provider answers nothing: the judge's call must not go there.
    let gateway = judging.equip(Gateway::upstream(
        "t",
        0,
        upstream("http://127.0.0.1:9"),
        true,
    ));
    let judge = judging.for_trial(&gateway, Mode::Record);
    let answers = ask(&judge, &[request("first", "first rubric")])
        .await
        .unwrap();
    assert_eq!(answers["first"].score, 0.8);
    let recorded = gateway.recording().interactions;
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].speaker, Speaker::Judge);
    assert_eq!(recorded[0].request.body["model"], "judge-model");
    assert_eq!(recorded[0].request.body["max_tokens"], 200);
    assert!(!root.path().join("judge-cache").exists());

    // A `[judge]` whose key variable is unset fails its question naming it, and never asks
    // the trial's provider instead.
    let section = format!(
        "provider = \"openai\"\nmodel = \"judge-model\"\nbase_url = \"{url}\"\napi_key_env = \"CLAWTEST_TEST_NO_SUCH_JUDGE_KEY\"\n"
    );
    let judging = Judging::new(
        &config(root.path(), &section),
        &models(Mode::Record),
        None,
        true,
    );
    let gateway = judging.equip(Gateway::upstream("t", 0, upstream(&url), true));
    let judge = judging.for_trial(&gateway, Mode::Record);
    let error = ask(&judge, &[request("first", "first rubric")])
        .await
        .unwrap_err();
    assert!(
        error.contains("the judge's key variable `CLAWTEST_TEST_NO_SUCH_JUDGE_KEY` is not set"),
        "{error}"
    );
    assert!(gateway.recording().interactions.is_empty());
}

#[test]
fn without_a_judge_section_the_judge_is_the_runs_provider_and_the_harnesss_model() {
    let root = tempfile::tempdir().unwrap();
    let mut anthropic = models(Mode::Replay);
    anthropic.simulator_provider = Provider::Anthropic;
    let judging = Judging::new(&config(root.path(), ""), &anthropic, Some("claude-x"), true);
    assert_eq!(
        (judging.chat.provider, judging.chat.model.as_str()),
        (Provider::Anthropic, "claude-x")
    );
    let judging = Judging::new(&config(root.path(), ""), &models(Mode::Replay), None, true);
    assert_eq!(judging.chat.model, "gpt-4o-mini");
    let judging = Judging::new(
        &config(root.path(), "model = \"judge-model\"\n"),
        &models(Mode::Replay),
        Some("harness-model"),
        true,
    );
    assert_eq!(judging.chat.model, "judge-model");
}
