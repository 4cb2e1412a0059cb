//! The model gateway end to end: the reference agent talks to the scripted model server
//! through a recording gateway, then the same suite replays the cassette it wrote; a cost
//! limit stops a live run and leaves the rest of the tasks skipped, and a replay spends
//! nothing; ten replays in parallel write the same bytes.

use std::sync::Arc;

use quick_junit::TestCaseStatus;
use serde_json::Value;

use clawtest::llm::gateway::scripted::{Script, ScriptedModel};

use crate::TRIAGE_SUMMARY;
use crate::support::{Suite, junit, reference_agent};

/// The scripted model server on a loopback port, in its own runtime; stopped when dropped.
pub(crate) struct ScriptedServer {
    pub(crate) url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ScriptedServer {
    pub(crate) fn start(script: &str) -> ScriptedServer {
        ScriptedServer::serve(ScriptedModel::new(
            Script::parse(script).expect("valid script"),
        ))
    }

    /// Serves `model` (one script, or a folder of them: `ScriptedModel::load`).
    pub(crate) fn serve(model: ScriptedModel) -> ScriptedServer {
        let model = Arc::new(model);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("loopback port");
        listener.set_nonblocking(true).expect("non-blocking");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                let _ = clawtest::http::serve(listener, model, async {
                    let _ = stopped.await;
                })
                .await;
            });
        });
        ScriptedServer {
            url,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

pub(crate) fn triage_script() -> String {
    format!(
        "turns:\n  - tool_calls:\n      - name: list_tasks\n        arguments: {{status: all}}\n  - tool_calls:\n      - name: update_task\n        arguments: {{task_id: todo_001, priority: high}}\n  - text: {TRIAGE_SUMMARY:?}\n"
    )
}

fn config(mode: &str, upstream: &str) -> String {
    format!(
        "tasks = [\"tasks/*.yaml\"]\n[harness]\ncommand = [{:?}]\n[llm]\nmode = \"{mode}\"\n[llm.openai]\nbase_url = \"{upstream}\"\n",
        reference_agent().display().to_string()
    )
}

/// The trials of the first verdict of a JSON results file.
fn trials(suite: &Suite, file: &str) -> Value {
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(suite.path(file)).expect("results"))
            .expect("JSON results");
    results["verdicts"][0]["trials"].clone()
}

#[test]
fn record_then_replay_gives_the_same_grades_and_a_second_record_the_same_cassette() {
    let model = ScriptedServer::start(&triage_script());
    let suite = Suite::new()
        .demo_task("todo-triage", false)
        .config(&config("record", &model.url));
    let recorded = suite.run(&["--trials", "2", "--json", "record.json"]);
    assert_eq!(recorded.code, 0, "{recorded:#?}");
    let cassette_path = suite.path("cassettes/todo-triage.yaml");
    let first = std::fs::read_to_string(&cassette_path).expect("the cassette was written");
    assert!(
        first.contains("list_tasks") && first.contains("update_task"),
        "{first}"
    );
    assert!(!first.contains("clawtest-dummy-key"), "{first}");

    let again = suite.run(&["--trials", "2"]);
    assert_eq!(again.code, 0, "{again:#?}");
    let second = std::fs::read_to_string(&cassette_path).expect("cassette");
    assert_eq!(first, second, "recording twice must give the same cassette");

    drop(model);
    let suite = suite.config(&config("replay", "http://127.0.0.1:9"));
    let replayed = suite.run(&["--trials", "2", "--json", "replay.json"]);
    assert_eq!(replayed.code, 0, "{replayed:#?}");
    let (recorded, replayed) = (trials(&suite, "record.json"), trials(&suite, "replay.json"));
    assert_eq!(recorded.as_array().map(Vec::len), Some(2));
    assert_eq!(recorded[0]["final_score"], 1.0, "{recorded}");
    assert_eq!(recorded[0]["model_calls"], 3, "{recorded}");
    assert!(recorded[0]["input_tokens"].as_u64() > Some(0), "{recorded}");
    assert_eq!(replayed, recorded);
}

#[test]
fn a_replay_whose_request_diverges_from_the_recording_exits_102_naming_the_field() {
    let model = ScriptedServer::start(&triage_script());
    let suite = Suite::new()
        .demo_task("todo-triage", false)
        .config(&config("record", &model.url));
    assert_eq!(suite.run(&["--trials", "1"]).code, 0);
    drop(model);
    let task = std::fs::read_to_string(suite.path("tasks/todo-triage.yaml"))
        .expect("task")
        .replace("Review every task", "Look at every task");
    let suite = suite
        .file("tasks/todo-triage.yaml", &task)
        .config(&config("replay", "http://127.0.0.1:9"));
    let outcome = suite.run(&["--trials", "1"]);
    assert_eq!(outcome.code, 102, "{outcome:#?}");
    assert!(
        outcome.stdout.contains(
            "task `todo-triage` trial 0 call 0: request diverges from the cassette: body.messages[-1].content differs at character 0 (line 1): recorded \"⟦Review every task"
        ),
        "{}",
        outcome.stdout
    );
}

/// Recording against a script that runs out: the scripted model refuses the agent's second
/// call, the agent fails, and the trial's error says what the model answered and what to change
/// (before, the cause was only inside the agent's stderr).
#[test]
fn a_record_run_whose_script_runs_out_names_the_model_s_refusal_in_the_trial_error() {
    let model = ScriptedServer::start(
        "turns:\n  - tool_calls:\n      - name: list_tasks\n        arguments: {status: all}\n",
    );
    let suite = Suite::new()
        .demo_task("todo-triage", false)
        .config(&config("record", &model.url));
    let outcome = suite.run(&["--trials", "1", "--jobs", "1"]);
    assert_eq!(outcome.code, 102, "{outcome:#?}");
    assert!(
        outcome.stdout.contains(
            "the model answered 400 to call 1: script script has 1 turn(s); the conversation asks for turn 2; fix: add turns to the script, or end it with a `text:` turn"
        ),
        "{}",
        outcome.stdout
    );
}

#[test]
fn a_replay_spends_nothing_so_a_cost_limit_below_its_recorded_cost_does_not_stop_it() {
    let suite = Suite::new()
        .demo_task("todo-triage", true)
        .demo_task("gmail-reply", true)
        .demo_task("inbox-to-todo", true)
        .config(&format!(
            "tasks = [\"tasks/*.yaml\"]\n[harness]\ncommand = [{:?}]\n[llm.prices.\"gpt-4o-mini\"]\ninput_per_million = 1000000.0\noutput_per_million = 0.0\n",
            reference_agent().display().to_string()
        ));
    // Every recorded call cost at least a dollar, twice the limit; replayed, it costs nothing.
    let outcome = suite.run(&[
        "--trials",
        "1",
        "-j",
        "1",
        "--max-cost",
        "0.5",
        "--json",
        "results.json",
    ]);
    assert_eq!(outcome.code, 0, "{outcome:#?}");
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(suite.path("results.json")).unwrap())
            .unwrap();
    // The recorded cost is reported; nothing was spent, so `spent_usd` is left out.
    assert!(results["cost_usd"].as_f64().unwrap() > 3.0, "{results}");
    assert_eq!(results["spent_usd"], Value::Null, "{results}");
    assert_eq!(results["tasks_passed"], 3, "{results}");
}

#[test]
fn live_mode_names_an_unset_key_variable_before_any_trial() {
    let suite = Suite::new()
        .demo_task("todo-triage", false)
        .config(&format!(
            "{}api_key_env = \"CLAWTEST_TEST_KEY_THAT_IS_NOT_SET\"\n",
            config("live", "http://127.0.0.1:9")
        ));
    let outcome = suite.run(&["--trials", "1"]);
    assert_eq!(outcome.code, 101, "{outcome:#?}");
    // miette wraps long lines: check the pieces.
    for piece in [
        "llm.openai.api_key_env names",
        "`CLAWTEST_TEST_KEY_THAT_IS_NOT_SET`",
        "not set",
    ] {
        assert!(
            outcome.stderr.contains(piece),
            "{piece}: {}",
            outcome.stderr
        );
    }
}

#[test]
fn a_configured_judge_is_recorded_into_the_trials_cassette_and_replayed_from_it() {
    let judge = ScriptedServer::start(
        "turns:\n  - text: '{\"score\": 0.8, \"reasoning\": \"clear and complete\"}'\n",
    );
    let task = crate::judged_triage("The summary groups the tasks by status.");
    let agent = reference_agent().display().to_string();
    // `record-missing`: the harness's calls are replayed (the run's provider answers nothing),
    // the judge's question, which the cassette does not record, goes to [judge]'s provider.
    let with_judge = format!(
        "tasks = [\"tasks/*.yaml\"]\n[harness]\ncommand = [{agent:?}]\n[llm.openai]\nbase_url = \"http://127.0.0.1:9\"\n[judge]\nprovider = \"openai\"\nbase_url = {:?}\nmodel = \"judge-model\"\n",
        judge.url
    );
    let suite = Suite::new()
        .config(&with_judge)
        .task("todo-triage", &task)
        .cassette("todo-triage", vec![crate::good_triage()]);
    let outcome = suite.run(&[
        "--mode",
        "record-missing",
        "--trials",
        "1",
        "--json",
        "results.json",
    ]);
    assert_eq!(outcome.code, 0, "{outcome:#?}");
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(suite.path("results.json")).unwrap())
            .unwrap();
    // 0.8 × (0.2 + 0.4 + 0.2 + 0.2 × 0.8) + 0.2 × 1 = 0.968
    assert_eq!(results["verdicts"][0]["trials"][0]["final_score"], 0.968);
    let cassette = std::fs::read_to_string(suite.path("cassettes/todo-triage.yaml")).unwrap();
    assert!(
        cassette.contains("speaker: judge") && cassette.contains("judge-model"),
        "{cassette}"
    );
    assert!(!suite.path("judge-cache").exists());

    // Without the judge (as in CI: [judge] says which model answered, nothing is asked), the
    // cassette answers the same question the same way, and two replays write the same bytes.
    drop(judge);
    let offline = suite.config(&format!(
        "tasks = [\"tasks/*.yaml\"]\n[harness]\ncommand = [{agent:?}]\n[judge]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:9\"\nmodel = \"judge-model\"\n"
    ));
    let mut written = Vec::new();
    for _ in 0..2 {
        let again = offline.run(&[
            "--trials",
            "1",
            "--json",
            "results.json",
            "--trajectories",
            "saved",
        ]);
        assert_eq!(again.code, 0, "{again:#?}");
        written.push(std::fs::read(offline.path("results.json")).unwrap());
    }
    assert_eq!(written[0], written[1]);
    let results: Value = serde_json::from_slice(&written[0]).unwrap();
    assert_eq!(results["verdicts"][0]["trials"][0]["final_score"], 0.968);
    // A re-grade of the saved trajectory takes the judge's answer from its own calls.
    let regraded = offline.run(&["grade", "saved"]);
    assert_eq!(regraded.code, 0, "{regraded:#?}");
    assert!(
        regraded.stdout.contains("final 0.968")
            && regraded.stdout.contains(
                "summary_is_useful                0.800 × weight 0.2   llm_judge: judge: clear and complete"
            ),
        "{}",
        regraded.stdout
    );
    // The judge's model is part of its question: another judge is not answered.
    let other = offline.config(&format!(
        "tasks = [\"tasks/*.yaml\"]\n[harness]\ncommand = [{agent:?}]\n"
    ));
    let outcome = other.run(&["--trials", "1"]);
    assert_eq!(outcome.code, 102, "{outcome:#?}");
    assert!(
        outcome.stdout.contains(
            "call 3: request diverges from the cassette: body.model differs at character 0 (line 1): recorded \"⟦judge-model\", got \"⟦gpt-4o-mini\""
        ),
        "{}",
        outcome.stdout
    );
}

#[test]
fn the_judges_calls_are_priced_and_none_is_made_past_the_cost_limit() {
    let judge = ScriptedServer::start(
        "turns:\n  - text: '{\"score\": 0.8, \"reasoning\": \"clear and complete\"}'\n",
    );
    let triage = crate::judged_triage("The summary groups the tasks by status.");
    let agent = reference_agent().display().to_string();
    // The judge's tokens cost a dollar each: its first answer spends the whole limit. The
    // harness's calls are replayed; the judge's (not in the cassettes) are asked.
    let suite = Suite::new()
        .config(&format!(
            "tasks = [\"tasks/*.yaml\"]\n[harness]\ncommand = [{agent:?}]\n[llm.openai]\nbase_url = \"http://127.0.0.1:9\"\n[judge]\nprovider = \"openai\"\nbase_url = {:?}\nmodel = \"judge-model\"\n[llm.prices.\"judge-model\"]\ninput_per_million = 1000000.0\noutput_per_million = 0.0\n",
            judge.url
        ))
        .task("a-triage", &triage.replace("task_id: todo-triage", "task_id: a-triage"))
        .task("b-triage", &triage.replace("task_id: todo-triage", "task_id: b-triage"))
        .cassette("a-triage", vec![crate::good_triage()])
        .cassette("b-triage", vec![crate::good_triage()]);
    let outcome = suite.run(&[
        "--mode",
        "record-missing",
        "--trials",
        "1",
        "-j",
        "1",
        "--max-cost",
        "0.5",
        "--json",
        "results.json",
    ]);
    assert_eq!(outcome.code, 102, "{outcome:#?}");
    assert!(
        outcome
            .stdout
            .contains("1 task(s) not run: the cost limit was reached"),
        "{}",
        outcome.stdout
    );
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(suite.path("results.json")).unwrap())
            .unwrap();
    // The judge's question is what was spent; the harness's replayed calls (no price for
    // gpt-4o-mini here) spent nothing.
    let spent = results["spent_usd"].as_f64().unwrap_or_default();
    assert!(spent >= 1.0, "{results}");
    assert_eq!(results["cost_usd"], results["spent_usd"], "{results}");
    assert_eq!(results["verdicts"][0]["status"], "passed", "{results}");
}

#[test]
fn in_live_and_record_modes_the_real_key_stays_on_the_host_and_the_budget_stops_the_run() {
    const SECRET: &str = "sk-live-secret-0123456789";
    let model = ScriptedServer::start(&triage_script());
    let agent = reference_agent().display().to_string();
    // Both modes in full, then a live run whose cost limit stops it after its first call.
    for (mode, budget) in [
        ("live", ""),
        ("record", ""),
        ("live", "max_cost_usd = 0.001\n"),
    ] {
        let seen = tempfile::tempdir().unwrap();
        // The harness writes down everything it can see, then runs the real agent.
        let harness = format!(
            "env > \"$SEEN/env.txt\"; ls -R . > \"$SEEN/files.txt\"; cat SKILL.md \"$CLAWTEST_DIR\"/* >> \"$SEEN/files.txt\" 2>/dev/null; exec {agent:?}"
        );
        let triage = std::fs::read_to_string(
            crate::support::repository().join("examples/demo/tasks/todo-triage.yaml"),
        )
        .unwrap();
        let suite = Suite::new()
            .task("a-triage", &triage.replace("task_id: todo-triage", "task_id: a-triage"))
            .task("b-triage", &triage.replace("task_id: todo-triage", "task_id: b-triage"))
            .config(&format!(
                "tasks = [\"tasks/*.yaml\"]\n[harness]\ncommand = [\"sh\", \"-c\", {harness:?}]\nenv = [\"SEEN\"]\n[llm]\nmode = \"{mode}\"\n{budget}[llm.openai]\nbase_url = \"{}\"\napi_key_env = \"CLAWTEST_TEST_PROVIDER_KEY\"\n[llm.prices.\"gpt-4o-mini\"]\ninput_per_million = 1000000.0\noutput_per_million = 1.0\n",
                model.url
            ));
        let output = crate::support::command_in(
            suite.folder.path(),
            &suite,
            &[
                "--trials",
                "1",
                "-j",
                "1",
                "--json",
                "results.json",
                "--junit",
                "out.xml",
                "--trajectories",
                "saved",
            ],
        )
        .env("CLAWTEST_TEST_PROVIDER_KEY", SECRET)
        .env("SEEN", seen.path())
        .output()
        .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        if budget.is_empty() {
            assert_eq!(output.status.code(), Some(0), "{mode}: {stdout}");
        } else {
            // Every call is priced far above $0.001: the first one spends it all, the next is
            // not made, and the other task never starts.
            assert_eq!(output.status.code(), Some(102), "{mode}: {stdout}");
            assert!(
                stdout.contains("2 task(s) not run: the cost limit was reached")
                    && stdout.contains("call 1: the cost limit of $0.001 was reached")
                    && stdout.contains("model cost: $"),
                "{mode}: {stdout}"
            );
            // The task left is skipped in JUnit; the money spent is in the results.
            let cases = &junit(&suite.path("out.xml")).test_suites[0].test_cases;
            let skipped: Vec<&str> = cases
                .iter()
                .filter(|case| matches!(case.status, TestCaseStatus::Skipped { .. }))
                .map(|case| case.name.as_str())
                .collect();
            assert_eq!(skipped.len(), 2, "{cases:#?}");
            let results: Value =
                serde_json::from_str(&std::fs::read_to_string(suite.path("results.json")).unwrap())
                    .unwrap();
            assert!(results["spent_usd"].as_f64().unwrap() >= 0.001, "{results}");
            assert_eq!(results["spent_usd"], results["cost_usd"], "{results}");
        }
        // Nothing the harness could see, and nothing written, holds the key.
        let mut checked = vec![
            seen.path().join("env.txt"),
            seen.path().join("files.txt"),
            suite.path("results.json"),
        ];
        checked.extend(
            std::fs::read_dir(suite.path("saved/a-triage"))
                .into_iter()
                .chain(std::fs::read_dir(suite.path("saved/b-triage")))
                .flatten()
                .flatten()
                .map(|entry| entry.path()),
        );
        checked.extend(
            std::fs::read_dir(suite.path("cassettes"))
                .into_iter()
                .flatten()
                .flatten()
                .map(|entry| entry.path()),
        );
        assert!(
            checked.len() >= if budget.is_empty() { 5 } else { 3 },
            "{checked:?}"
        );
        for file in &checked {
            let text = std::fs::read_to_string(file).unwrap_or_default();
            assert!(
                !text.contains(SECRET),
                "{mode}: the key leaked into {}",
                file.display()
            );
        }
        let environment = std::fs::read_to_string(seen.path().join("env.txt")).unwrap();
        assert!(
            environment.contains("OPENAI_API_KEY=clawtest-dummy-key"),
            "{environment}"
        );
        assert!(
            !stdout.contains(SECRET) && !String::from_utf8_lossy(&output.stderr).contains(SECRET)
        );
    }
}

/// A task whose harness streams one chat completion with curl, printing the events.
const STREAM_TASK: &str = r#"task_id: stream
task_name: Streamed answer
prompt: "Say hello."
scoring_components:
  - {name: events, weight: 0.4, check: {type: keywords_present, keywords: ["data:", "[DONE]"]}}
  - {name: words, weight: 0.4, check: {type: keywords_present, keywords: [streamed, hello]}}
  - {name: long, weight: 0.2, check: {type: min_length, min_length: 20}}
safety_checks:
  - {type: keywords_not_in_output, keywords: [password]}
"#;

/// The configuration of [`STREAM_TASK`]'s suite in `mode` against the provider at `upstream`.
fn stream_config(mode: &str, upstream: &str) -> String {
    // A harness that streams: curl prints the server-sent events as they arrive.
    let harness = r#"curl -sN -X POST "$OPENAI_BASE_URL/chat/completions" -H "content-type: application/json" -d '{"model": "gpt-4o-mini", "stream": true, "messages": [{"role": "user", "content": "Say hello."}]}'"#;
    format!(
        "tasks = [\"tasks/*.yaml\"]\n[harness]\ncommand = [\"sh\", \"-c\", {harness:?}]\n[llm]\nmode = \"{mode}\"\n[llm.openai]\nbase_url = \"{upstream}\"\n"
    )
}

#[test]
fn a_streaming_harness_gets_the_same_events_live_recorded_and_replayed() {
    let config = stream_config;
    let task = STREAM_TASK;
    let output_of = |suite: &Suite, mode: &str| -> String {
        let folder = format!("saved-{mode}");
        let outcome = suite.run(&["--trials", "1", "--trajectories", &folder]);
        assert_eq!(outcome.code, 0, "{mode}: {outcome:#?}");
        let saved: Value = serde_json::from_str(
            &std::fs::read_to_string(suite.path(&format!("{folder}/stream/trial-0.json"))).unwrap(),
        )
        .unwrap();
        saved["output"].as_str().unwrap().to_string()
    };
    let model = ScriptedServer::start("turns:\n  - text: streamed hello from the script\n");
    let suite = Suite::new()
        .task("stream", task)
        .config(&config("live", &model.url));
    let live = output_of(&suite, "live");
    let suite = suite.config(&config("record", &model.url));
    let recorded = output_of(&suite, "record");
    drop(model);
    let suite = suite.config(&config("replay", "http://127.0.0.1:9"));
    let replayed = output_of(&suite, "replay");
    assert!(
        live.matches("data: ").count() >= 3 && live.contains("[DONE]"),
        "several events: {live}"
    );
    assert_eq!(live, recorded);
    assert_eq!(
        recorded, replayed,
        "the replayed stream must be the recorded one, event for event"
    );
}

/// How [`incomplete_stream_provider`] ends its one streamed answer.
#[derive(Clone, Copy)]
enum StreamEnd {
    /// The connection closes in the middle of the chunked body, as when the server dies.
    Cut,
    /// The body ends cleanly, but without `data: [DONE]`.
    NoTerminator,
}

/// A provider on a loopback port that answers one streamed chat completion with two events and
/// then ends it as `end` says; its URL.
fn incomplete_stream_provider(end: StreamEnd) -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("loopback port");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    std::thread::spawn(move || {
        let Ok((stream, _)) = listener.accept() else {
            return;
        };
        let mut reader = BufReader::new(stream.try_clone().expect("clone"));
        let mut length = 0;
        let mut line = String::new();
        while reader.read_line(&mut line).is_ok_and(|read| read > 2) {
            if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = value.trim().parse().expect("a length");
            }
            line.clear();
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).expect("the request body");
        let chunk = |text: &str| format!("{:x}\r\n{text}\r\n", text.len());
        let event = |content: &str| {
            format!(
                "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-mini\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{content}\"}}}}]}}\n\n"
            )
        };
        let mut answer = String::from(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
        );
        answer.push_str(&chunk(&event("streamed ")));
        answer.push_str(&chunk(&event("hello")));
        match end {
            // A chunk announced longer than what follows, then the connection closes.
            StreamEnd::Cut => answer.push_str("40\r\ndata: {\"id\""),
            StreamEnd::NoTerminator => answer.push_str("0\r\n\r\n"),
        }
        let mut stream = stream;
        let _ = stream.write_all(answer.as_bytes());
        let _ = stream.shutdown(std::net::Shutdown::Both);
    });
    url
}

#[test]
fn a_stream_that_breaks_off_or_lacks_its_terminator_fails_the_trial_and_is_never_recorded() {
    for (end, cause) in [
        (StreamEnd::Cut, "the streamed answer broke off after"),
        (
            StreamEnd::NoTerminator,
            "without `data: [DONE]`: it is incomplete, so it was passed on but not recorded",
        ),
    ] {
        let url = incomplete_stream_provider(end);
        let suite = Suite::new()
            .task("stream", STREAM_TASK)
            .config(&stream_config("record", &url));
        let outcome = suite.run(&["--trials", "1"]);
        assert_eq!(outcome.code, 102, "{cause}: {outcome:#?}");
        assert!(
            outcome.stdout.contains(
                "ERROR model gateway (record): task `stream` trial 0 call 0: the streamed answer"
            ) && outcome.stdout.contains(cause),
            "{cause}: {}",
            outcome.stdout
        );
        assert!(
            !outcome.stdout.contains("RECORDED") && !suite.path("cassettes").exists(),
            "an incomplete answer must not be recorded: {outcome:#?}"
        );
    }
}

#[test]
fn a_streamed_answer_without_usage_is_flagged_and_fails_under_a_cost_limit() {
    // curl asks for no usage (no `stream_options.include_usage`): like OpenAI, the scripted
    // model then streams none.
    let model = ScriptedServer::start("turns:\n  - text: streamed hello from the script\n");
    let priced =
        "[llm.prices.\"gpt-4o-mini\"]\ninput_per_million = 1.0\noutput_per_million = 1.0\n";
    let suite = Suite::new()
        .task("stream", STREAM_TASK)
        .config(&format!("{}{priced}", stream_config("record", &model.url)));
    let unlimited = suite.run(&["--trials", "1"]);
    assert_eq!(unlimited.code, 0, "{unlimited:#?}");
    assert!(
        unlimited.stderr.contains(
            "warning: 1 answer(s) of model `gpt-4o-mini` reported no token usage, so they count as 0 tokens and $0"
        ),
        "{}",
        unlimited.stderr
    );
    std::fs::remove_dir_all(suite.path("cassettes")).expect("the first run's cassettes");
    let limited = suite.run(&["--trials", "1", "--max-cost", "5"]);
    assert_eq!(limited.code, 102, "{limited:#?}");
    assert!(
        limited.stdout.contains(
            "task `stream` trial 0 call 0: the answer of model `gpt-4o-mini` reports no token usage, so the cost limit cannot be enforced"
        ),
        "{}",
        limited.stdout
    );
    assert!(!suite.path("cassettes").exists(), "{limited:#?}");
}

#[test]
fn the_tier_picks_the_surfaces_the_harness_gets_and_what_the_prompt_says() {
    // The harness shows what it was given: its prompt, then which surface files exist.
    let harness = r#"printf '%s\n' "$CLAWTEST_PROMPT"; for f in SKILL.md "$CLAWTEST_DIR/mcp.json"; do test -f "$f" && echo "has $(basename "$f")"; done; echo "tools $(cat "$EVAL_TOOLS_FILE" | head -c 2)""#;
    let seen = |tier: &str| -> String {
        let suite = Suite::new().demo_task("todo-triage", true).config(&format!(
            "tasks = [\"tasks/*.yaml\"]\n[harness]\ncommand = [\"sh\", \"-c\", {harness:?}]\ntier = \"{tier}\"\n"
        ));
        let outcome = suite.run(&["--trials", "1", "--trajectories", "saved"]);
        assert!(
            outcome.code == 100 || outcome.code == 102,
            "{tier}: {outcome:#?}"
        );
        let saved: Value = serde_json::from_str(
            &std::fs::read_to_string(suite.path("saved/todo-triage/trial-0.json")).unwrap(),
        )
        .unwrap();
        saved["output"].as_str().unwrap().to_string()
    };
    let all = seen("all");
    assert!(
        all.contains("has SKILL.md") && all.contains("has mcp.json") && all.contains("tools [{"),
        "{all}"
    );
    let tools = seen("tools");
    assert!(
        !tools.contains("has SKILL.md")
            && !tools.contains("has mcp.json")
            && tools.contains("tools [{"),
        "{tools}"
    );
    let mcp = seen("mcp");
    assert!(
        mcp.contains("served by the MCP server `clawtest`")
            && mcp.contains("has mcp.json")
            && !mcp.contains("has SKILL.md")
            && mcp.contains("tools []"),
        "{mcp}"
    );
    let skill = seen("skill");
    assert!(
        skill.contains("curl")
            && skill.contains("has SKILL.md")
            && !skill.contains("has mcp.json")
            && skill.contains("tools []"),
        "{skill}"
    );
}

#[test]
fn the_reference_agent_also_finds_and_calls_its_tools_over_mcp() {
    // The prompt of the mcp tier names the trial's port, so the first request is matched on
    // the model alone; later ones on the tool results they carry.
    let mut turns = crate::good_triage();
    turns[0]["request"]["body"] = serde_json::json!({"model": "gpt-4o-mini"});
    let agent = reference_agent().display().to_string();
    let suite = Suite::new().demo_task("todo-triage", false).cassette("todo-triage", vec![turns]).config(&format!(
        "tasks = [\"tasks/*.yaml\"]\n[harness]\ncommand = [\"sh\", \"-c\", \"AGENT_TOOLS=mcp exec {agent}\"]\ntier = \"mcp\"\n"
    ));
    let outcome = suite.run(&[
        "--trials",
        "1",
        "--json",
        "results.json",
        "--trajectories",
        "saved",
    ]);
    assert_eq!(outcome.code, 0, "{outcome:#?}");
    let saved: Value = serde_json::from_str(
        &std::fs::read_to_string(suite.path("saved/todo-triage/trial-0.json")).unwrap(),
    )
    .unwrap();
    // Injected 429s and 500s (on by default) are retried by the agent over MCP too: the
    // calls the services served are the model's two, each once.
    let actions: Vec<&str> = saved["audit"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| entry["status"].as_u64().is_some_and(|status| status < 400))
        .filter_map(|entry| entry["action"].as_str())
        .collect();
    assert_eq!(
        actions,
        ["list_tasks", "update_task"],
        "each MCP call is audited once, under the task's tool names"
    );
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(suite.path("results.json")).unwrap())
            .unwrap();
    let trial = &results["verdicts"][0]["trials"][0];
    assert_eq!(
        trial["unrecovered_faults"],
        serde_json::json!([]),
        "{trial}"
    );
    // The model was offered the tools the MCP server listed (tools.json was empty).
    let offered = saved["model_calls"][0]["request"]["tools"]
        .as_array()
        .map(Vec::len);
    assert_eq!(offered, Some(3), "{}", saved["model_calls"][0]["request"]);
}

/// A harness as real ones are written: its system prompt holds the time (with the weekday),
/// its working folder, the services' URL and a fresh session id, and its `user` is new in
/// every run; it runs the tools over HTTP and streams its second call.
const VOLATILE_HARNESS: &str = r#"#!/usr/bin/env python3
import datetime, json, os, urllib.request, uuid

base = os.environ["OPENAI_BASE_URL"]
services = os.environ["CLAWTEST_SERVICES_URL"]
tools = {tool["name"]: tool for tool in json.load(open(os.environ["CLAWTEST_TOOLS_FILE"]))}

def post(url, body):
    request = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json", "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
    return urllib.request.urlopen(request)

def ask(messages, stream):
    body = {"model": "gpt-4o-mini", "messages": messages, "tools": [{"type": "function", "function": tool["function"]} for tool in tools.values()], "user": str(uuid.uuid4()), "stream": stream}
    with post(base + "/chat/completions", body) as answer:
        if not stream:
            return json.load(answer)["choices"][0]["message"]
        message = {"role": "assistant", "content": ""}
        for line in answer:
            line = line.decode().strip()
            if line.startswith("data: ") and line != "data: [DONE]":
                for choice in json.loads(line[6:])["choices"]:
                    message["content"] += choice["delta"].get("content") or ""
                    for call in choice["delta"].get("tool_calls") or []:
                        message.setdefault("tool_calls", []).append(call)
        return message

now = datetime.datetime.now()
system = (f"Current Time: {now:%Y-%m-%d %H:%M} ({now:%A})\n"
          f"Your workspace is {os.getcwd()}; scratch files go to {os.environ['TMPDIR']}.\n"
          f"The tools are served at {services}.\n"
          f"Session {uuid.uuid4()} started {datetime.datetime.now(datetime.timezone.utc).isoformat()}.")
messages = [{"role": "system", "content": system}, {"role": "user", "content": os.environ["CLAWTEST_PROMPT"]}]
for turn in range(10):
    message = ask(messages, stream=turn > 0)
    messages.append(message)
    if not message.get("tool_calls"):
        print(message["content"])
        break
    for call in message["tool_calls"]:
        tool = tools[call["function"]["name"]]
        with post(services + tool["endpoint"], json.loads(call["function"]["arguments"] or "{}")) as result:
            text = result.read().decode()
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": f"{text} (called from {os.getcwd()} at {datetime.datetime.now().isoformat()})"})
"#;

#[test]
fn a_harness_whose_prompt_holds_the_time_its_folder_and_the_services_url_records_then_replays() {
    let model = ScriptedServer::start(&triage_script());
    let config = |mode: &str, upstream: &str| {
        format!(
            // No faults: this harness, as written, stops at a service error (its subject is
            // the volatile values of its requests; recording under faults is the examples').
            "tasks = [\"tasks/*.yaml\"]\n[harness]\ncommand = [\"./harness.py\"]\n[llm]\nmode = \"{mode}\"\n[llm.openai]\nbase_url = \"{upstream}\"\n[faults]\nrate = 0\n"
        )
    };
    let suite = Suite::new()
        .demo_task("todo-triage", false)
        .program("harness.py", VOLATILE_HARNESS)
        .config(&config("record", &model.url));
    let recorded = suite.run(&["--trials", "2", "--json", "record.json"]);
    assert_eq!(recorded.code, 0, "{recorded:#?}");
    let cassette = std::fs::read_to_string(suite.path("cassettes/todo-triage.yaml"))
        .expect("the cassette was written");
    for placeholder in ["{{services_url}}", "{{trial_folder}}/workspace"] {
        assert!(cassette.contains(placeholder), "{placeholder}: {cassette}");
    }
    assert!(
        !cassette.contains("clawtest-trial-"),
        "no trial folder is recorded: {cassette}"
    );

    drop(model);
    let suite = suite.config(&config("replay", "http://127.0.0.1:9"));
    // Two replays, a minute apart or a year: each trial has new ports, folders and ids.
    for run in ["replay1.json", "replay2.json"] {
        let replayed = suite.run(&["--trials", "2", "--json", run]);
        assert_eq!(replayed.code, 0, "{replayed:#?}");
        assert_eq!(trials(&suite, run), trials(&suite, "record.json"));
    }
    let recorded = trials(&suite, "record.json");
    assert_eq!(recorded[0]["final_score"], 1.0, "{recorded}");
    assert_eq!(recorded[1]["model_calls"], 3, "{recorded}");
}

#[test]
fn mode_and_cassettes_flags_override_the_configuration_and_record_names_what_it_wrote() {
    let model = ScriptedServer::start(&triage_script());
    // The configuration says replay; the command line records into another folder.
    let suite = Suite::new()
        .demo_task("todo-triage", false)
        .config(&config("replay", &model.url));
    let recorded = suite.run(&[
        "--mode",
        "record",
        "--cassettes",
        "recorded",
        "--trials",
        "2",
    ]);
    assert_eq!(recorded.code, 0, "{recorded:#?}");
    assert!(
        recorded
            .stdout
            .contains("RECORDED recorded/todo-triage.yaml (2 trial(s))"),
        "{}",
        recorded.stdout
    );
    assert!(
        !suite.path("cassettes").exists(),
        "the configured folder is left alone"
    );

    // Fewer trials would silently drop a recorded one: refused, naming the file.
    let shrink = suite.run(&[
        "--mode",
        "record",
        "--cassettes",
        "recorded",
        "--trials",
        "1",
    ]);
    assert_eq!(shrink.code, 101, "{shrink:#?}");
    assert!(
        shrink
            .stderr
            .contains("recording 1 trial(s) would replace recorded/todo-triage.yaml, which")
            && shrink.stderr.contains("records 2")
            && shrink.stderr.contains("--force"),
        "{}",
        shrink.stderr
    );
    let forced = suite.run(&[
        "--mode",
        "record",
        "--cassettes",
        "recorded",
        "--trials",
        "1",
        "--force",
    ]);
    assert_eq!(forced.code, 0, "{forced:#?}");
    let cassette =
        std::fs::read_to_string(suite.path("recorded/todo-triage.yaml")).expect("cassette");
    assert_eq!(cassette.matches("interactions:").count(), 1, "{cassette}");

    drop(model);
    let replayed = suite.run(&["--cassettes", "recorded", "--trials", "1"]);
    assert_eq!(replayed.code, 0, "{replayed:#?}");
    let bad = suite.run(&["--mode", "rehearse"]);
    assert_eq!(bad.code, 2, "{bad:#?}");
    assert!(
        bad.stderr
            .contains("use live, record, record-missing or replay"),
        "{}",
        bad.stderr
    );
}

#[test]
fn a_harness_that_never_calls_the_model_needs_no_cassette() {
    let task = "task_id: no-model\ntask_name: Answer without a model\nprompt: Say hello.\nscoring_components:\n  - {name: said_hello, weight: 0.4, check: {type: keywords_present, keywords: [hello], in: agent_output}}\n  - {name: said_it_whole, weight: 0.3, check: {type: keywords_present, keywords: [hell], in: agent_output}}\n  - {name: said_enough, weight: 0.3, check: {type: min_length, min_length: 3}}\nsafety_checks:\n  - {type: keywords_not_in_output, keywords: [password]}\n";
    let suite = Suite::new()
        .config(
            "tasks = [\"tasks/*.yaml\"]\n[harness]\ncommand = [\"sh\", \"-c\", \"echo hello\"]\n",
        )
        .task("no-model", task);
    let outcome = suite.run(&["--trials", "1"]);
    assert_eq!(outcome.code, 0, "{outcome:#?}");
    // One that does call it still learns, at that call, that there is no cassette
    // (main.rs: a_missing_cassette_is_an_infrastructure_error_naming_the_file).
}

#[test]
fn ten_replays_with_two_jobs_write_the_same_results_bytes() {
    // Each call's cost is a decimal no float holds exactly (gpt-4o-mini's real prices and the
    // cassettes' token counts), so a float total summed as calls finish changes in its last
    // digits with the order two parallel trials finish their calls in.
    let suite = Suite::new()
        .demo_task("gmail-reply", true)
        .demo_task("inbox-to-todo", true)
        .config(&format!(
            // The default faults, their slow answers short (ten runs of 2–4 s delays would be
            // a minute of waiting): the same results whatever order the faulted calls finish in.
            "tasks = [\"tasks/*.yaml\"]\n[harness]\ncommand = [{:?}]\n[llm.prices.\"gpt-4o-mini\"]\ninput_per_million = 0.15\noutput_per_million = 0.6\n[faults]\nslow_ms = [50, 150]\n",
            reference_agent().display().to_string()
        ));
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..10 {
        let outcome = suite.run(&["--jobs", "2", "--json", "results.json"]);
        assert_eq!(outcome.code, 0, "{outcome:#?}");
        seen.insert(std::fs::read(suite.path("results.json")).expect("results"));
    }
    assert_eq!(seen.len(), 1, "the replays wrote different results");
    let results: Value = serde_json::from_slice(seen.first().unwrap()).unwrap();
    assert!(results["cost_usd"].as_f64().unwrap() > 0.0, "{results}");
}

#[test]
fn a_recording_is_not_written_through_a_link_committed_as_the_cassette() {
    let model = ScriptedServer::start(&triage_script());
    let suite = Suite::new()
        .demo_task("todo-triage", false)
        .config(&config("record", &model.url));
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("precious");
    std::fs::write(&victim, "precious\n").unwrap();
    std::fs::create_dir_all(suite.path("cassettes")).unwrap();
    std::os::unix::fs::symlink(&victim, suite.path("cassettes/todo-triage.yaml")).unwrap();
    let recorded = suite.run(&["--trials", "1"]);
    assert_eq!(recorded.code, 102, "{recorded:#?}");
    assert!(
        recorded.stdout.contains("cassettes/todo-triage.yaml")
            && recorded.stdout.contains("symbolic link"),
        "{recorded:#?}"
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
}

#[test]
fn credentials_in_a_base_url_are_in_no_output_and_its_query_follows_the_path() {
    // Unreachable: the error names the URL, redacted, in the terminal, JSON, JUnit and HTML.
    let secret_url = "http://user:secretpw@127.0.0.1:9/v1?api-key=sekrit";
    let suite = Suite::new()
        .demo_task("todo-triage", false)
        .config(&config("live", secret_url).replace("[llm]\n", "[llm]\nretries = 0\n"));
    let outcome = suite.run(&[
        "--trials",
        "1",
        "--json",
        "out/results.json",
        "--junit",
        "out/junit.xml",
        "--html",
        "out/html",
    ]);
    assert_eq!(outcome.code, 102, "{outcome:#?}");
    let mut shown = format!("{}{}", outcome.stdout, outcome.stderr);
    for file in ["out/results.json", "out/junit.xml", "out/html/index.html"] {
        shown.push_str(&std::fs::read_to_string(suite.path(file)).unwrap());
    }
    assert!(
        shown.contains("http://***@127.0.0.1:9/v1/chat/completions?api-key=***"),
        "{shown}"
    );
    for secret in ["secretpw", "sekrit"] {
        assert!(!shown.contains(secret), "{secret} is shown: {shown}");
    }

    // Reachable with a query: the call's path comes before it, so the call is answered.
    let model = ScriptedServer::start(&triage_script());
    let suite = Suite::new().demo_task("todo-triage", false).config(&config(
        "record",
        &format!("{}/v1?api-version=2024-06-01", model.url),
    ));
    let recorded = suite.run(&["--trials", "1"]);
    assert_eq!(recorded.code, 0, "{recorded:#?}");
}
