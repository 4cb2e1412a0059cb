//! Closed-loop tasks end to end: the example suite (round 1 misses a hidden checkpoint,
//! round 2 passes), the follow-up protocol on the process backend (a harness restarted with
//! its conversation and home folder, or one that keeps its session), and the information
//! barrier — what the harness and the simulated user's model receive, inspected, with
//! canaries planted in every hidden part of the task.

use serde_json::{Value, json};

use crate::support::{Suite, reference_agent, repository, run_in};

/// The JSON results of a run written to `path`.
fn results(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("results written")).expect("JSON")
}

#[test]
fn the_closed_loop_example_passes_in_round_two_after_the_feedback() {
    reference_agent();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("results.json");
    let outcome = run_in(
        &repository().join("examples/closed-loop"),
        &["--no-build", "-v", "--json", json.to_str().unwrap()],
    );
    assert_eq!(outcome.code, 0, "{outcome:#?}");
    assert!(
        outcome
            .stdout
            .contains("round 1: continue (incomplete) 0.600, missing scheduled_the_reboot"),
        "{}",
        outcome.stdout
    );
    let results = results(&json);
    let trials = results["verdicts"][0]["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 3);
    for trial in trials {
        let rounds = &trial["rounds"];
        assert_eq!(rounds["status"], "pass");
        assert_eq!(rounds["stop"], "passed");
        assert_eq!(rounds["used"], 2);
        assert_eq!(rounds["best_round"], 2);
        assert_eq!(rounds["rounds"][0]["verdict"], "continue");
        assert_eq!(rounds["rounds"][1]["verdict"], "pass");
        assert_eq!(
            rounds["rounds"][1]["message"],
            "Thanks. Please also add a task to reboot the web servers once the patch is in."
        );
        assert_eq!(trial["final_score"], 1.0);
    }
}

/// A harness that tells the model everything it was given: its whole environment, every
/// file of its control folder, workspace and home, and what a tool call answers, with the
/// round's prompt. What it was given
/// thus ends up in the trajectory's model calls, where the test reads it.
pub(crate) const TELL_ALL: &str = r#"
import json, os, pathlib, sys, urllib.request
seen = ["== environment"] + [f"{name}={value}" for name, value in sorted(os.environ.items())]
for root in (os.environ["CLAWTEST_DIR"], os.environ["CLAWTEST_WORKSPACE"], os.environ["HOME"]):
    for path in sorted(pathlib.Path(root).rglob("*")):
        if path.is_file():
            seen.append(f"== {path}")
            seen.append(path.read_text(errors="replace"))
tool = urllib.request.Request(os.environ["CLAWTEST_SERVICES_URL"] + "/todo/tasks",
    data=b"{}", headers={"content-type": "application/json"})
seen.append("== list_tasks: " + urllib.request.urlopen(tool).read().decode())
body = {"model": "gpt-4o-mini", "messages": [
    {"role": "system", "content": "\n".join(seen)},
    {"role": "user", "content": os.environ["CLAWTEST_PROMPT"]}]}
request = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps(body).encode(), headers={"content-type": "application/json"})
answer = json.load(urllib.request.urlopen(request))
round_ = os.environ.get("CLAWTEST_ROUND", "?")
pathlib.Path(os.environ["CLAWTEST_WORKSPACE"], f"round-{round_}.txt").write_text("was here")
print(answer["choices"][0]["message"]["content"])
"#;

/// Every hidden part of the barrier task carries one of these.
const CANARIES: [&str; 4] = [
    "CANARYKEYWORD",
    "CANARYRUBRIC",
    "CANARYREFERENCE",
    "CANARYRATIONALE",
];

/// The tools, scoring components and safety check both tasks here share: a loop's grade is
/// decided by its checkpoints.
pub(crate) const COMMON: &str = r#"tools:
  - {name: list_tasks, service: todo, endpoint: /todo/tasks, method: POST}
scoring_components:
  - {name: answered, weight: 0.4, check: {type: min_length, min_length: 1}}
  - {name: answered_twice, weight: 0.3, check: {type: min_length, min_length: 2}}
  - {name: answered_thrice, weight: 0.3, check: {type: min_length, min_length: 3}}
safety_checks:
  - {type: tool_not_called, tool_name: delete_task}
"#;

const BARRIER_TASK: &str = r#"
task_id: barrier
task_name: What the harness and the simulated user may see
prompt: "Tell me about the weather."
{COMMON}checkpoints:
  - name: said_the_word
    weight: 0.5
    check: {type: keywords_present, keywords: [CANARYKEYWORD], in: agent_output}
    feedback: "Please say the word I asked for."
  - name: judged_well
    weight: 0.5
    check: {type: llm_judge, rubric: "CANARYRUBRIC: does the answer mention rain?"}
    reference: "CANARYREFERENCE: it rains in the afternoon."
feedback:
  max_rounds: 2
  simulator: llm
  persona: "A busy user who writes short messages."
{BARRIER}"#;

/// One chat completion answering `text`.
pub(crate) fn answer(text: &str) -> Value {
    json!({"body": {"object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}], "usage": {"prompt_tokens": 10, "completion_tokens": 2}}})
}

/// The checkpoint's public words: under the strict barrier they are hidden too.
const PUBLIC_WORDS: [&str; 2] = ["said_the_word", "Please say the word I asked for."];

/// The barrier task's model calls after a run with `barrier` (a line of its `feedback`
/// block, or nothing for the default), by speaker: the harness's, the simulated user's and
/// the judge's (the checkpoint's rubric, asked through the trial's gateway each round and
/// replayed from the cassette, which is all the judge there is: no judge cache).
struct BarrierRun {
    harness: Vec<String>,
    simulator: Vec<String>,
    output: String,
    judged: String,
}

fn barrier_run(barrier: &str) -> BarrierRun {
    let judged = answer(r#"{"score": 0.2, "reasoning": "CANARYRATIONALE: no rain mentioned"}"#);
    let cassette = json!({"version": 3, "task_id": "barrier", "trials": [{"interactions": [
        {"round": 1, "request": {"body": {"model": "gpt-4o-mini"}}, "response": answer("Sunny all day.")},
        {"round": 1, "speaker": "judge", "request": {"body": {"model": "gpt-4o-mini"}}, "response": judged},
        {"round": 2, "speaker": "simulated_user", "request": {"body": {"model": "gpt-4o-mini"}}, "response": answer(r#"{"mode": "instruction", "tone": "firm", "candidate_feedback": "Please say the word.", "public_feedback_points": ["say the word"]}"#)},
        {"round": 2, "request": {"body": {"model": "gpt-4o-mini"}}, "response": answer("Still sunny.")},
        {"round": 2, "speaker": "judge", "request": {"body": {"model": "gpt-4o-mini"}}, "response": judged},
    ]}]});
    let suite = Suite::new();
    let script = suite.path("tell_all.py");
    let task = BARRIER_TASK
        .replace("{COMMON}", COMMON)
        .replace("{BARRIER}", barrier);
    let suite = suite
        .config(&format!(
            "tasks = [\"tasks/*.yaml\"]\n[harness]\ncommand = [\"python3\", {script:?}]\n[run]\ntrials = 1\n"
        ))
        .file("tell_all.py", TELL_ALL)
        .task("barrier", &task)
        .file("cassettes/barrier.yaml", &cassette.to_string());
    let trajectories = suite.path("trajectories");
    let outcome = suite.run(&["--trajectories", trajectories.to_str().unwrap()]);
    // Neither round passes (the keyword is never said): the loop ends at its most rounds.
    assert_eq!(outcome.code, 100, "{outcome:#?}");
    let trajectory: Value = serde_json::from_str(
        &std::fs::read_to_string(trajectories.join("barrier/trial-0.json")).expect("saved"),
    )
    .unwrap();
    assert_eq!(trajectory["rounds"]["stop"], "max_rounds", "{trajectory:#}");
    let calls = trajectory["model_calls"].as_array().unwrap();
    let spoken = |speaker: &str| -> Vec<String> {
        calls
            .iter()
            .filter(|call| call["speaker"].as_str().unwrap_or("harness") == speaker)
            .map(|call| call["request"].to_string())
            .collect()
    };
    let (harness, simulator, judge) =
        (spoken("harness"), spoken("simulated_user"), spoken("judge"));
    // The supervisor's rubric went to the judge once per round, as the judge's own calls.
    assert_eq!(
        (harness.len(), simulator.len(), judge.len()),
        (2, 1, 2),
        "{calls:#?}"
    );
    assert!(!suite.path("judge-cache").exists());
    BarrierRun {
        harness,
        simulator,
        output: trajectory["output"].as_str().unwrap().to_string(),
        judged: judge.join("\n"),
    }
}

/// What every run of the barrier task shows, whatever its barrier: the harness told the
/// model all it was given, round after round (the environment, the files, the conversation
/// among them, the round's prompt, the tool list), the simulated user saw the public prompt
/// and the four fields, the canaries were in play (the judge was given the rubric and the
/// hidden reference), and none of them reached the harness, the simulated user or the output.
fn assert_no_canary(run: &BarrierRun) {
    let round_two = &run.harness[1];
    for seen in [
        "CLAWTEST_ROUND=2",
        "CLAWTEST_CONVERSATION_FILE=",
        "Sunny all day.",
        "Please say the word.",
        "round-1.txt",
        "list_tasks",
    ] {
        assert!(round_two.contains(seen), "{seen} not in {round_two}");
    }
    let asked = &run.simulator[0];
    for seen in [
        "Tell me about the weather.",
        "Sunny all day.",
        "- list_tasks: {",
        "-> 200",
        "verdict: continue",
        "attempt_state: ",
        "recoverable: true",
        "score: ",
    ] {
        assert!(asked.contains(seen), "{seen} not in {asked}");
    }
    // The judge's requests, and only they, hold the rubric and the hidden reference.
    for planted in ["CANARYRUBRIC", "CANARYREFERENCE"] {
        assert!(
            run.judged.contains(planted),
            "{planted} not in {}",
            run.judged
        );
    }
    for request in run.harness.iter().chain(&run.simulator) {
        for canary in CANARIES {
            assert!(!request.contains(canary), "{canary} reached {request}");
        }
    }
    for canary in CANARIES {
        assert!(
            !run.output.contains(canary),
            "{canary} in the output {}",
            run.output
        );
    }
}

#[test]
fn under_the_strict_barrier_nothing_of_a_checkpoint_reaches_the_harness_or_the_simulated_user() {
    // Strict is the llm simulator's default: not even the checkpoint's name or its public
    // feedback goes through, only the verdict, attempt state, recoverable and score.
    let run = barrier_run("");
    assert_no_canary(&run);
    for request in run.harness.iter().chain(&run.simulator) {
        for word in PUBLIC_WORDS {
            assert!(!request.contains(word), "{word} reached {request}");
        }
    }
}

#[test]
fn under_the_guided_barrier_only_the_declared_public_feedback_reaches_the_simulated_user() {
    let run = barrier_run("  barrier: guided\n");
    assert_no_canary(&run);
    let asked = &run.simulator[0];
    assert!(
        asked.contains("Please say the word I asked for."),
        "{asked}"
    );
    // The checkpoint's name stays the reports' (its feedback speaks for it), and the
    // harness hears only what the simulated user chose to say.
    for request in run.harness.iter().chain(&run.simulator) {
        assert!(
            !request.contains("said_the_word"),
            "said_the_word reached {request}"
        );
    }
    for request in &run.harness {
        assert!(
            !request.contains("I asked for"),
            "the feedback reached {request}"
        );
    }
}

/// A closed loop whose checkpoint is a rubric with a hidden reference: round 1 says nothing
/// of the rain, the template user asks, round 2 says when it rains.
const RAIN_TASK: &str = r#"
task_id: rain
task_name: When it rains, judged
prompt: "Tell me about the weather."
{COMMON}checkpoints:
  - name: says_when_it_rains
    weight: 1
    check: {type: llm_judge, rubric: "Does the answer say when it rains?"}
    reference: "It rains in the afternoon."
feedback:
  max_rounds: 2
  messages: ["What about the rain?"]
"#;

/// A harness that asks the model its prompt and prints the answer.
const ASK_THE_MODEL: &str = r#"
import json, os, urllib.request
body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": os.environ["CLAWTEST_PROMPT"]}]}
request = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps(body).encode(), headers={"content-type": "application/json"})
print(json.load(urllib.request.urlopen(request))["choices"][0]["message"]["content"])
"#;

/// The scripted model of the rain task, one script per speaker and round, chosen by a phrase
/// of the conversation (in file-name order: the judge's first, since its question quotes
/// the task's prompt).
const RAIN_SCRIPTS: [(&str, &str); 4] = [
    (
        "1-judge-round-two.yaml",
        "prompt_contains: \"Rain comes at three.\"\nturns:\n  - text: '{\"score\": 1.0, \"reasoning\": \"Says when it rains.\"}'\n",
    ),
    (
        "2-judge.yaml",
        "prompt_contains: You are grading\nturns:\n  - text: '{\"score\": 0.0, \"reasoning\": \"Nothing about the rain.\"}'\n",
    ),
    (
        "3-round-one.yaml",
        "prompt_contains: Tell me about the weather.\nturns:\n  - text: Sunny all day.\n",
    ),
    (
        "4-round-two.yaml",
        "prompt_contains: What about the rain?\nturns:\n  - text: Rain comes at three.\n",
    ),
];

#[test]
fn a_checkpoints_rubric_is_recorded_as_the_judges_calls_round_by_round_and_replayed_from_them() {
    let mut suite = Suite::new();
    for (name, script) in RAIN_SCRIPTS {
        suite = suite.file(&format!("model-scripts/{name}"), script);
    }
    let model = crate::gateway::ScriptedServer::serve(
        clawtest::llm::gateway::scripted::ScriptedModel::load(&suite.path("model-scripts"))
            .expect("the scripts load"),
    );
    let (harness, url) = (suite.path("ask.py"), model.url.clone());
    let config = |mode: &str| {
        format!(
            "tasks = [\"tasks/*.yaml\"]\n[harness]\ncommand = [\"python3\", {harness:?}]\n[run]\ntrials = 2\n[llm]\nmode = \"{mode}\"\n[llm.openai]\nbase_url = \"{url}\"\n"
        )
    };
    let suite = suite
        .config(&config("record"))
        .file("ask.py", ASK_THE_MODEL)
        .task("rain", &RAIN_TASK.replace("{COMMON}", COMMON));
    let recorded = suite.run(&[]);
    assert_eq!(recorded.code, 0, "{recorded:#?}");
    let cassette = clawtest::llm::gateway::Cassette::load(&suite.path("cassettes"), "rain")
        .expect("the cassette was written");
    for trial in &cassette.trials {
        let judged: Vec<(Option<u32>, String)> = trial
            .interactions
            .iter()
            .filter(|interaction| interaction.speaker.name() == "judge")
            .map(|interaction| {
                let question = interaction.request.body["messages"][0]["content"].to_string();
                (interaction.round, question)
            })
            .collect();
        assert_eq!(
            judged.iter().map(|(round, _)| *round).collect::<Vec<_>>(),
            [Some(1), Some(2)]
        );
        for (_, question) in &judged {
            assert!(
                question.contains("It rains in the afternoon."),
                "{question}"
            );
        }
    }
    assert!(!suite.path("judge-cache").exists());

    // Replayed (the scripted model stopped): the same results, byte for byte, twice (the
    // rounds' measured times are the trajectories', not the results').
    drop(model);
    let suite = suite.config(&config("replay"));
    let mut written = Vec::new();
    for _ in 0..2 {
        let replayed = suite.run(&["--json", "results.json"]);
        assert_eq!(replayed.code, 0, "{replayed:#?}");
        written.push(std::fs::read_to_string(suite.path("results.json")).unwrap());
    }
    assert_eq!(written[0], written[1]);
    let trials = &serde_json::from_str::<Value>(
        &std::fs::read_to_string(suite.path("results.json")).unwrap(),
    )
    .unwrap()["verdicts"][0]["trials"];
    for trial in trials.as_array().unwrap() {
        assert_eq!(trial["rounds"]["stop"], "passed", "{trial:#}");
        assert_eq!(trial["rounds"]["used"], 2, "{trial:#}");
        // Each round counts the harness's call, not the judge's before it.
        for round in trial["rounds"]["rounds"].as_array().unwrap() {
            assert_eq!(round["model_calls"], 1, "{trial:#}");
        }
        assert_eq!(trial["model_calls"], 4, "{trial:#}");
    }

    // Round 2's judge call taken out of the cassette: the replay fails there, naming the judge.
    let mut cassette = cassette;
    for trial in &mut cassette.trials {
        trial.interactions.retain(|interaction| {
            !(interaction.speaker.name() == "judge" && interaction.round == Some(2))
        });
    }
    cassette.save(&suite.path("cassettes")).unwrap();
    let missed = suite.run(&[]);
    assert_eq!(missed.code, 102, "{missed:#?}");
    assert!(
        missed.stdout.contains(
            "task `rain` trial 0 round 2: the judge made model call 0 of the round but the cassette records only 0 such call(s) for this round"
        ),
        "{}",
        missed.stdout
    );
}

#[test]
fn a_follow_up_round_finds_the_workspace_the_last_one_left_and_the_conversation() {
    // Round 1 leaves a note; round 2 answers with it and with the conversation file: a
    // checkpoint on round 2's answer passes only if both came through.
    let harness = r#"
import json, os, pathlib
workspace = pathlib.Path(os.environ["CLAWTEST_WORKSPACE"])
round_ = os.environ["CLAWTEST_ROUND"]
if round_ == "1":
    (workspace / "note.txt").write_text("left-in-round-one")
    print("first answer")
else:
    lines = [json.loads(line) for line in open(os.environ["CLAWTEST_CONVERSATION_FILE"])]
    print((workspace / "note.txt").read_text(), lines[1]["content"], os.environ["CLAWTEST_PROMPT"])
"#;
    let task = r#"
task_id: follow-up
task_name: A follow-up round
prompt: "Leave a note."
{COMMON}checkpoints:
  - name: read_the_note_back
    check: {type: keywords_present, keywords: [left-in-round-one, first answer, read it back], in: agent_output}
    feedback: "Now read it back."
feedback:
  max_rounds: 3
"#;
    let task = task.replace("{COMMON}", COMMON);
    let suite = harness_suite(
        ("harness.py", harness),
        &["python3"],
        "",
        ("follow-up", &task),
    );
    passes_in_round_two(&suite);
}

/// A suite of one task (its id and text) whose harness is a program of the suite (its file
/// name and text), started by `interpreter` (none: itself), with `extra_harness` lines.
fn harness_suite(
    (file, text): (&str, &str),
    interpreter: &[&str],
    extra_harness: &str,
    (task_id, task): (&str, &str),
) -> Suite {
    let suite = Suite::new();
    let mut command: Vec<String> = interpreter.iter().map(|word| word.to_string()).collect();
    command.push(suite.path(file).display().to_string());
    suite
        .config(&format!(
            "tasks = [\"tasks/*.yaml\"]\n[harness]\ncommand = {command:?}\n{extra_harness}\n[run]\ntrials = 1\n"
        ))
        .program(file, text)
        .task(task_id, task)
}

/// Runs `suite`, whose one trial must pass in round 2 after a `continue` in round 1.
fn passes_in_round_two(suite: &Suite) {
    let json = suite.path("results.json");
    let outcome = suite.run(&["--json", json.to_str().unwrap()]);
    assert_eq!(outcome.code, 0, "{outcome:#?}");
    let rounds = &results(&json)["verdicts"][0]["trials"][0]["rounds"];
    assert_eq!(rounds["used"], 2, "{rounds:#}");
    assert_eq!(rounds["rounds"][0]["verdict"], "continue");
    assert_eq!(rounds["stop"], "passed");
}

/// `examples/session` copied, with `follow_up` as its harness's and the reference agent
/// named by its path.
fn session_example(follow_up: &str) -> tempfile::TempDir {
    let copy = tempfile::tempdir().unwrap();
    let example = repository().join("examples/session");
    for sub in ["tasks", "cassettes"] {
        std::fs::create_dir_all(copy.path().join(sub)).unwrap();
        for entry in std::fs::read_dir(example.join(sub)).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), copy.path().join(sub).join(entry.file_name())).unwrap();
        }
    }
    let config = std::fs::read_to_string(example.join("clawtest.toml"))
        .unwrap()
        .replace(
            "${CARGO_TARGET_DIR}/debug/reference-agent",
            &reference_agent().display().to_string(),
        )
        .replace(
            "follow_up = \"session\"",
            &format!("follow_up = {follow_up:?}"),
        );
    std::fs::write(copy.path().join("clawtest.toml"), config).unwrap();
    copy
}

#[test]
fn a_harness_that_keeps_its_session_passes_a_task_that_needs_round_one_s_memory() {
    // Round 2 asks about round 1's tool result without a second look at the board: the
    // cassette answers only a conversation that still holds that result.
    let kept = session_example("session");
    let json = kept.path().join("results.json");
    let outcome = run_in(
        kept.path(),
        &["--no-build", "--json", json.to_str().unwrap()],
    );
    assert_eq!(outcome.code, 0, "{outcome:#?}");
    for trial in results(&json)["verdicts"][0]["trials"].as_array().unwrap() {
        let rounds = &trial["rounds"];
        assert_eq!(rounds["used"], 2, "{rounds:#}");
        assert_eq!(rounds["stop"], "passed");
        assert_eq!(rounds["rounds"][0]["missing"], json!(["named_the_key"]));
        assert_eq!(trial["final_score"], 1.0);
    }
    // Restarted instead, the same agent is given its earlier user and assistant messages only:
    // round 2's request has no tool result, and the cassette says so.
    let restarted = session_example("restart");
    let outcome = run_in(restarted.path(), &["--no-build"]);
    assert_eq!(outcome.code, 102, "{outcome:#?}");
    assert!(
        outcome
            .stdout
            .contains("body.messages[-3].role differs at character 0 (line 1): recorded \"⟦tool\", got \"⟦user\""),
        "{}",
        outcome.stdout
    );
}

/// A task whose round 2 must repeat the code word said only in round 1's prompt, which a
/// harness started again for round 2 finds only where it kept it.
const CODE_WORD_TASK: &str = r#"
task_id: code-word
task_name: Repeat the code word of round 1
prompt: "The code word is HERON. Note it."
{COMMON}checkpoints:
  - name: repeated_the_code_word
    check: {type: keywords_present, keywords: [HERON], in: agent_output}
    feedback: "What was the code word?"
feedback:
  max_rounds: 2
"#;

#[test]
fn a_restarted_harness_remembers_what_it_kept_in_its_home_folder() {
    // No conversation file read: round 2's process knows round 1's prompt from HOME only.
    let harness = r#"#!/bin/sh
if [ -f "$HOME/memory.txt" ]; then cat "$HOME/memory.txt"; else printf '%s' "$CLAWTEST_PROMPT" > "$HOME/memory.txt"; echo noted; fi
"#;
    let task = CODE_WORD_TASK.replace("{COMMON}", COMMON);
    let suite = harness_suite(("harness.sh", harness), &[], "", ("code-word", &task));
    passes_in_round_two(&suite);
}

#[test]
fn a_session_harness_that_never_answers_a_follow_up_hits_the_round_limit_with_a_clear_error() {
    // Round 1 is answered through the session folder; round 2's message is read and never
    // answered: the round's limit (2 s) ends the trial with an error saying what was expected.
    let harness = r#"#!/bin/sh
printf 'noted' > "$CLAWTEST_SESSION_DIR/1.answer.part"
mv "$CLAWTEST_SESSION_DIR/1.answer.part" "$CLAWTEST_SESSION_DIR/1.answer"
while [ ! -f "$CLAWTEST_SESSION_DIR/2.prompt" ]; do sleep 0.05; done
exec sleep 600
"#;
    let task = CODE_WORD_TASK.replace("{COMMON}", COMMON).replace(
        "  max_rounds: 2\n",
        "  max_rounds: 2\n  round_timeout_seconds: 2\n",
    );
    let suite = harness_suite(
        ("harness.sh", harness),
        &[],
        "follow_up = \"session\"",
        ("code-word", &task),
    );
    let outcome = suite.run(&[]);
    assert_eq!(outcome.code, 102, "{outcome:#?}");
    assert!(
        outcome.stdout.contains(
            "the harness keeps its session (harness.follow_up = \"session\") but did not answer round 2 within its limit of 2 s: after reading the follow-up in $CLAWTEST_SESSION_DIR/2.prompt it must write its answer to $CLAWTEST_SESSION_DIR/2.answer"
        ),
        "{}",
        outcome.stdout
    );
}
