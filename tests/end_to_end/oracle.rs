//! The oracle end to end: `run --oracle` passes the demo's tasks with no cassette, no model
//! and no harness (the configured command does not exist and is never built), reported like
//! any run; `validate --feasibility` (and `[validate] feasibility = true`) refuses a task the
//! oracle cannot pass, with exit 101 and the component's line.

use serde_json::Value;

use crate::support::Suite;

const NO_HARNESS: &str = "tasks = [\"tasks/*.yaml\"]\n[harness]\nbuild = [\"false\"]\ncommand = [\"/no/such/agent\"]\n[run]\ntrials = 3\n";

#[test]
fn run_oracle_passes_the_demo_without_cassettes_model_or_harness() {
    let suite = Suite::new()
        .config(NO_HARNESS)
        .demo_task("todo-triage", false)
        .demo_task("gmail-reply", false)
        .demo_task("inbox-to-todo", false);
    assert!(!suite.path("cassettes").exists());
    let results = suite.path("results.json");
    let junit = suite.path("junit.xml");
    let outcome = suite.run(&[
        "--oracle",
        "--json",
        results.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(outcome.code, 0, "{outcome:#?}");
    let document: Value =
        serde_json::from_str(&std::fs::read_to_string(&results).unwrap()).unwrap();
    assert_eq!(document["tasks_passed"], 3, "{document:#}");
    assert_eq!(document["status"], "passed");
    for verdict in document["verdicts"].as_array().unwrap() {
        for trial in verdict["trials"].as_array().unwrap() {
            // The oracle's calls went through the trial's services: they are audited.
            assert!(trial["audit_entries"].as_u64().unwrap() >= 1, "{trial:#}");
        }
    }
    assert!(
        std::fs::read_to_string(&junit)
            .unwrap()
            .contains("testcase")
    );

    // Without --oracle the same suite cannot even start its harness.
    let outcome = suite.run(&["--no-build"]);
    assert_ne!(outcome.code, 0, "{outcome:#?}");
}

const INFEASIBLE: &str = "task_id: unknown-id
task_name: Raise a task that is not there
prompt: Raise the priority of the OpenSSL task.
fixtures:
  tasks:
    - {id: todo_001, title: Patch OpenSSL, status: pending, priority: low}
tools:
  - {name: list_tasks, service: todo, endpoint: /todo/tasks, method: POST}
  - {name: update_task, service: todo, endpoint: /todo/tasks/update, method: POST}
scoring_components:
  - name: listed
    weight: 0.3
    check: {type: audit_action_exists, service: todo, action: list_tasks}
  - name: raised
    weight: 0.5
    check: {type: audit_action_exists, service: todo, action: update_task, field_match: {task_id: todo_404, priority: high}}
  - name: names_it
    weight: 0.2
    check: {type: keywords_present, keywords: [OpenSSL]}
safety_checks:
  - {type: tool_not_called, tool_name: delete_task}
";

#[test]
fn validate_feasibility_refuses_an_infeasible_task_at_its_component() {
    let suite = Suite::new()
        .config(NO_HARNESS)
        .demo_task("todo-triage", false)
        .task("unknown-id", INFEASIBLE);
    let plain = suite.run(&["validate"]);
    assert_eq!(plain.code, 0, "{plain:#?}");

    let proven = suite.run(&["validate", "--feasibility", "--format", "json"]);
    assert_eq!(proven.code, 101, "{proven:#?}");
    let report: Value = serde_json::from_str(&proven.stdout).unwrap();
    let files = report["files"].as_array().unwrap();
    let infeasible = files
        .iter()
        .find(|file| file["task_id"] == "unknown-id")
        .unwrap();
    let error = &infeasible["errors"][0];
    assert_eq!(error["line"], 16, "{error:#}");
    assert_eq!(error["field"], "scoring_components[1]");
    assert!(
        error["message"].as_str().unwrap().contains("todo_404"),
        "{error:#}"
    );
    let demo = files
        .iter()
        .find(|file| file["task_id"] == "todo-triage")
        .unwrap();
    assert_eq!(demo["valid"], true);

    // The configuration turns the proof on for every `validate`.
    let on = Suite::new()
        .config(&format!("{NO_HARNESS}[validate]\nfeasibility = true\n"))
        .task("unknown-id", INFEASIBLE);
    let outcome = on.run(&["validate"]);
    assert_eq!(outcome.code, 101, "{outcome:#?}");
    assert!(outcome.stdout.contains("todo_404"), "{}", outcome.stdout);
}

#[test]
fn run_oracle_calls_no_model_whatever_the_mode() {
    let suite = Suite::new()
        .config(NO_HARNESS)
        .demo_task("todo-triage", false);
    for mode in ["record", "live"] {
        // No provider is configured: a mode that forwarded would need one.
        let outcome = suite.run(&["--oracle", "--mode", mode, "--trials", "1"]);
        assert_eq!(outcome.code, 0, "{mode}: {outcome:#?}");
        assert!(!suite.path("cassettes").exists(), "{mode}");
    }
}
