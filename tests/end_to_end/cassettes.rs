//! The cassette workflow end to end (issue 30): an agent whose system prompt changed makes
//! every cassette diverge at call 0, and `cargo clawtest cassettes` says so with the diff;
//! `--mode record-missing` against the scripted model records exactly the cassettes that no
//! longer answer (one task's prompt edited: that task only), and a second run records nothing;
//! `cassettes prune` removes the cassette no task names.

use crate::gateway::{ScriptedServer, triage_script};
use crate::support::Suite;

/// A tool-calling agent in the way a team writes one: its system prompt is a line of its code.
const AGENT: &str = r#"#!/usr/bin/env python3
import json, os, urllib.request

SYSTEM = "You are a careful assistant. Use the tools, then summarise."

base = os.environ["OPENAI_BASE_URL"]
services = os.environ["CLAWTEST_SERVICES_URL"]
tools = {tool["name"]: tool for tool in json.load(open(os.environ["CLAWTEST_TOOLS_FILE"]))}

def post(url, body):
    request = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json", "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
    with urllib.request.urlopen(request) as answer:
        return json.load(answer)

messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": os.environ["CLAWTEST_PROMPT"]}]
for turn in range(10):
    body = {"model": "gpt-4o-mini", "messages": messages, "tools": [{"type": "function", "function": tool["function"]} for tool in tools.values()]}
    message = post(base + "/chat/completions", body)["choices"][0]["message"]
    messages.append(message)
    if not message.get("tool_calls"):
        print(message["content"])
        break
    for call in message["tool_calls"]:
        tool = tools[call["function"]["name"]]
        result = post(services + tool["endpoint"], json.loads(call["function"]["arguments"] or "{}"))
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)})
"#;

fn config(mode: &str, upstream: &str) -> String {
    // No faults: this agent, as written, stops at a service error (the subject here is the
    // cassettes, not recovery).
    format!(
        "tasks = [\"tasks/*.yaml\"]\n[harness]\ncommand = [\"./agent.py\"]\n[run]\ntrials = 2\n[llm]\nmode = \"{mode}\"\n[llm.openai]\nbase_url = \"{upstream}\"\n[faults]\nrate = 0\n"
    )
}

/// The text of the suite's cassette of `task`.
fn cassette(suite: &Suite, task: &str) -> String {
    std::fs::read_to_string(suite.path(&format!("cassettes/{task}.yaml"))).expect("cassette")
}

/// What the RECORDED lines of a run's output name: the file's name and the trials, sorted (the
/// lines come as tasks end, in no fixed order).
fn recorded(stdout: &str) -> Vec<&str> {
    let mut recorded: Vec<&str> = stdout
        .lines()
        .filter(|line| line.starts_with("RECORDED "))
        .filter_map(|line| line.rsplit('/').next())
        .collect();
    recorded.sort_unstable();
    recorded
}

#[test]
fn a_changed_system_prompt_is_shown_diverged_and_record_missing_records_exactly_what_changed() {
    let model = ScriptedServer::start(&triage_script());
    let triage = std::fs::read_to_string(
        crate::support::repository().join("examples/demo/tasks/todo-triage.yaml"),
    )
    .expect("demo task");
    let review = triage
        .replace("task_id: todo-triage", "task_id: todo-review")
        .replace("Review every task", "Go through every task");
    assert_ne!(review, triage);
    let suite = Suite::new()
        .task("todo-triage", &triage)
        .task("todo-review", &review)
        .program("agent.py", AGENT)
        .config(&config("record", &model.url));
    let first = suite.run(&[]);
    assert_eq!(recorded(&first.stdout).len(), 2, "{first:#?}");
    // A task no longer in the suite left its cassette behind.
    let retired = cassette(&suite, "todo-review").replace("todo-review", "retired");
    let suite = suite.file("cassettes/retired.yaml", &retired);

    // Replayed, every cassette answers: current; the retired one is unused (not a failure).
    let suite = suite.config(&config("replay", "http://127.0.0.1:9"));
    let status = suite.run(&["cassettes"]);
    assert_eq!(status.code, 0, "{status:#?}");
    for line in [
        "cassettes/todo-triage.yaml  current",
        "cassettes/todo-review.yaml  current",
        "cassettes/retired.yaml      unused",
    ] {
        assert!(status.stdout.contains(line), "{line}: {}", status.stdout);
    }

    // One task's prompt edited: record-missing records that task only.
    let edited = review.replace("Go through every task", "Walk through every task");
    let suite = suite
        .task("todo-review", &edited)
        .config(&config("record", &model.url));
    let (triage_before, retired_before) =
        (cassette(&suite, "todo-triage"), cassette(&suite, "retired"));
    let only_one = suite.run(&["--mode", "record-missing"]);
    assert_eq!(
        recorded(&only_one.stdout),
        ["todo-review.yaml (2 trial(s))"],
        "{only_one:#?}"
    );
    assert_eq!(cassette(&suite, "todo-triage"), triage_before);

    // The agent's system prompt changed: every cassette diverges at call 0, with the diff.
    let changed = AGENT.replace(
        "You are a careful assistant.",
        "You are a thorough assistant.",
    );
    let suite = suite
        .file("agent.py", &changed)
        .config(&config("replay", "http://127.0.0.1:9"));
    let status = suite.run(&["cassettes"]);
    assert_eq!(status.code, 100, "{status:#?}");
    for task in ["todo-triage", "todo-review"] {
        let line = format!("cassettes/{task}.yaml  diverged at trial 0 call 0");
        assert!(status.stdout.contains(&line), "{line}: {}", status.stdout);
    }
    for line in [
        "request diverges from the cassette: body.messages[-2].content differs at character 10 (line 1)",
        "    --- recorded\n    +++ now\n",
        "-  content: You are a careful assistant. Use the tools, then summarise.\n",
        "+  content: You are a thorough assistant. Use the tools, then summarise.\n",
        "2 of 3 cassette(s) need recording: `cargo clawtest --mode record-missing`",
    ] {
        assert!(status.stdout.contains(line), "{line}: {}", status.stdout);
    }

    // record-missing against the scripted model records exactly those two …
    let suite = suite.config(&config("record", &model.url));
    let again = suite.run(&["--mode", "record-missing"]);
    assert_eq!(again.code, 0, "{again:#?}");
    assert_eq!(
        recorded(&again.stdout),
        [
            "todo-review.yaml (2 trial(s))",
            "todo-triage.yaml (2 trial(s))"
        ],
        "{again:#?}"
    );
    assert!(cassette(&suite, "todo-triage").contains("You are a thorough assistant."));
    assert_eq!(cassette(&suite, "retired"), retired_before);
    // … and a second run records nothing: every cassette answers it.
    let written = (
        cassette(&suite, "todo-triage"),
        cassette(&suite, "todo-review"),
    );
    let nothing = suite.run(&["--mode", "record-missing"]);
    assert_eq!(nothing.code, 0, "{nothing:#?}");
    assert_eq!(
        recorded(&nothing.stdout),
        Vec::<&str>::new(),
        "{nothing:#?}"
    );
    assert_eq!(
        (
            cassette(&suite, "todo-triage"),
            cassette(&suite, "todo-review")
        ),
        written
    );

    let suite = suite.config(&config("replay", "http://127.0.0.1:9"));
    let status = suite.run(&["cassettes"]);
    assert_eq!(status.code, 0, "{status:#?}");
    let pruned = suite.run(&["cassettes", "prune"]);
    assert_eq!(pruned.code, 0, "{pruned:#?}");
    assert!(
        pruned.stdout.contains("1 unused cassette(s) removed"),
        "{}",
        pruned.stdout
    );
    assert!(!suite.path("cassettes/retired.yaml").exists());
    assert!(suite.path("cassettes/todo-triage.yaml").exists());
}
