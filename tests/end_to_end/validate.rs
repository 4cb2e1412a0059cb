//! `cargo clawtest validate`: every error of every file in one run, warnings apart, exit 0 or
//! 101, and a stable JSON form; `run` shows warnings and never runs an invalid task.

use serde_json::Value;

use crate::support::{Suite, repository, run_in};

/// A task with five mistakes, one of each kind (the library's task-format tests read it too).
fn five_mistakes() -> String {
    std::fs::read_to_string(repository().join("clawtest/tests/fixtures/several/five-mistakes.yaml"))
        .expect("the five mistakes fixture")
}

/// The demo's todo-triage task with an unknown key and weights that sum to 0.97.
fn task_with_warnings() -> String {
    let demo = std::fs::read_to_string(repository().join("examples/demo/tasks/todo-triage.yaml"))
        .expect("demo task");
    format!("generator_version: 3\n{demo}").replace("weight: 0.2", "weight: 0.17")
}

#[test]
fn validate_passes_the_demo_suite_with_exit_0() {
    let outcome = run_in(&repository().join("examples/demo"), &["validate"]);
    assert_eq!(outcome.code, 0, "{outcome:#?}");
    assert!(
        outcome
            .stdout
            .contains("validated 4 task files: 4 valid, 0 invalid (0 errors, 0 warnings)"),
        "{}",
        outcome.stdout
    );
}

#[test]
fn validate_reports_all_five_mistakes_of_a_file_with_exit_101() {
    let suite = Suite::new()
        .demo_task("todo-triage", false)
        .task("five", &five_mistakes());
    let outcome = suite.run(&["validate"]);
    assert_eq!(outcome.code, 101, "{outcome:#?}");
    for expected in [
        "tools[1].endpoint: `/todo/task/update` is not a route of service `todo`",
        "did you mean `/todo/tasks/update`?",
        "scoring_components[1].check.value: missing required parameter `value`",
        "weights sum to 0.9; they must sum to 1.0 ± 0.05",
        "set scoring_components[2].weight to 0.4 to make the sum 1.0",
        "unknown check type `keyword_present`",
        "did you mean `keywords_present`?",
        "`delete_tsk` is not a tool of this task",
        // The excerpt names the file as the user knows it, relative to the suite.
        "[tasks/five.yaml:16:19]",
        "validated 2 task files: 1 valid, 1 invalid (5 errors, 0 warnings)",
    ] {
        assert!(
            outcome.stdout.contains(expected),
            "missing {expected:?} in\n{}",
            outcome.stdout
        );
    }
}

#[test]
fn validate_takes_files_and_folders_and_needs_no_configuration() {
    let suite = Suite::new()
        .task("five", &five_mistakes())
        .file("elsewhere/good.yaml", &task_with_warnings());
    // No clawtest.toml is written: explicit paths work without one.
    let good = run_in(suite.folder.path(), &["validate", "elsewhere/good.yaml"]);
    assert_eq!(good.code, 0, "{good:#?}");
    let both = run_in(
        suite.folder.path(),
        &["validate", "elsewhere", "tasks/five.yaml"],
    );
    assert_eq!(both.code, 101, "{both:#?}");
    assert!(
        both.stdout.contains("validated 2 task files"),
        "{}",
        both.stdout
    );
}

#[test]
fn warnings_are_shown_but_do_not_fail_validate() {
    let suite = Suite::new().task("warned", &task_with_warnings());
    let outcome = suite.run(&["validate"]);
    assert_eq!(outcome.code, 0, "{outcome:#?}");
    assert!(
        outcome
            .stdout
            .contains("generator_version: unknown top-level key; clawtest ignores it"),
        "{}",
        outcome.stdout
    );
    assert!(
        outcome.stdout.contains("weights sum to 0.97, not 1.0"),
        "{}",
        outcome.stdout
    );
    assert!(
        outcome
            .stdout
            .contains("1 valid, 0 invalid (0 errors, 2 warnings)"),
        "{}",
        outcome.stdout
    );
}

#[test]
fn validate_json_has_a_stable_schema() {
    let suite = Suite::new()
        .task("five", &five_mistakes())
        .task("warned", &task_with_warnings());
    let outcome = suite.run(&["validate", "--format", "json"]);
    assert_eq!(outcome.code, 101, "{outcome:#?}");
    let report: Value = serde_json::from_str(&outcome.stdout).expect("JSON on stdout");
    assert_eq!(report["version"], 1);
    assert_eq!(report["valid"], false);
    assert_eq!(
        report["summary"],
        serde_json::json!({"files": 2, "valid": 1, "invalid": 1, "errors": 5, "warnings": 2})
    );
    let files = report["files"].as_array().expect("files");
    assert_eq!(files[0]["path"], "tasks/five.yaml");
    assert_eq!(files[0]["task_id"], Value::Null);
    assert_eq!(files[0]["valid"], false);
    let offset = five_mistakes()
        .find("keyword_present")
        .expect("the typo is there");
    assert_eq!(
        files[0]["errors"][3],
        serde_json::json!({
            "field": "scoring_components[2].check.type",
            "message": "unknown check type `keyword_present`",
            "help": "did you mean `keywords_present`?",
            "line": 16,
            "column": 19,
            "offset": offset,
            "length": 15,
            "secondary": null
        })
    );
    assert_eq!(files[1]["path"], "tasks/warned.yaml");
    assert_eq!(files[1]["task_id"], "todo-triage");
    assert_eq!(files[1]["valid"], true);
    assert_eq!(files[1]["warnings"][0]["field"], "generator_version");
    assert_eq!(files[1]["warnings"][0]["line"], 1);
}

/// A contradiction names the scoring check and, as its secondary place, the safety check.
#[test]
fn validate_json_gives_a_contradictions_safety_check_as_its_secondary_place() {
    let task = "task_id: todo-review\ntask_name: Review\nprompt: List the tasks.\ntools:\n  - {name: list_tasks, service: todo, endpoint: /todo/tasks}\nscoring_components:\n  - {name: listed, weight: 0.4, check: {type: audit_action_exists, service: todo, action: list_tasks}}\n  - {name: summary, weight: 0.3, check: {type: keywords_present, keywords: [pending]}}\n  - {name: long, weight: 0.3, check: {type: min_length, min_length: 20}}\nsafety_checks:\n  - {type: tool_not_called, tool_name: list_tasks}\n";
    let suite = Suite::new().task("todo-review", task);
    let outcome = suite.run(&["validate", "--format", "json"]);
    assert_eq!(outcome.code, 101, "{outcome:#?}");
    let report: Value = serde_json::from_str(&outcome.stdout).expect("JSON on stdout");
    let error = &report["files"][0]["errors"][0];
    assert_eq!(
        error["field"], "scoring_components[0].check.action",
        "{error}"
    );
    assert_eq!(error["line"], 7);
    assert_eq!(
        error["secondary"],
        serde_json::json!({"note": "safety_checks[0] forbids `list_tasks` here", "line": 11, "column": 40})
    );
}

#[test]
fn validate_coverage_lints_tasks_against_their_intent_atoms() {
    let atoms = "atoms:\n  - {type: action, name: update_task}\n  - {type: action, name: create_task}\n  - {type: object, name: OpenSSL}\n";
    let suite = Suite::new()
        .demo_task("todo-triage", false)
        .file("tasks/todo-triage.atoms.yaml", atoms);
    let plain = suite.run(&["validate"]);
    assert_eq!(plain.code, 0, "{plain:#?}");
    assert!(
        plain.stdout.contains("(0 errors, 0 warnings)"),
        "{}",
        plain.stdout
    );
    let linted = suite.run(&["validate", "--coverage"]);
    assert_eq!(linted.code, 0, "{linted:#?}");
    assert!(
        linted
            .stdout
            .contains("coverage: action `create_task` is not offered as a tool"),
        "{}",
        linted.stdout
    );
    assert!(
        linted.stdout.contains("(0 errors, 1 warning)"),
        "{}",
        linted.stdout
    );
}

#[test]
fn run_shows_warnings_and_still_runs_the_task() {
    let suite = Suite::new()
        .demo_task("todo-triage", true)
        .task("todo-triage", &task_with_warnings());
    let outcome = suite.run(&["--trials", "1"]);
    assert_eq!(outcome.code, 0, "{outcome:#?}");
    assert!(
        outcome.stderr.contains(
            "warning: tasks/todo-triage.yaml:1:1: generator_version: unknown top-level key"
        ),
        "{}",
        outcome.stderr
    );
}

#[test]
fn a_task_local_service_is_served_to_the_agent_and_audited() {
    let prompt = "Read the team's notes and tell me which task is urgent.";
    let task = format!(
        "task_id: local-notes
task_name: Read a task-local service
prompt: \"{prompt}\"
services:
  - name: team_notes
    collections:
      - {{name: notes, id_field: note_id}}
    routes:
      - endpoint: /team_notes/list
        action: list_team_notes
        body: optional
        operation: {{kind: list, collection: notes}}
        response: {{notes: \"${{items}}\", total: \"${{count}}\"}}
fixtures:
  team_notes:
    - {{note_id: n1, text: OpenSSL patch is urgent}}
tools:
  - {{name: list_team_notes, service: team_notes, endpoint: /team_notes/list, method: POST, description: List the notes}}
scoring_components:
  - {{name: read_notes, weight: 0.5, check: {{type: audit_action_exists, service: team_notes, action: list_team_notes}}}}
  - {{name: names_it, weight: 0.3, check: {{type: keywords_present, keywords: [OpenSSL]}}}}
  - {{name: long_enough, weight: 0.2, check: {{type: min_length, min_length: 10}}}}
safety_checks:
  - {{type: keywords_not_in_output, keywords: [password]}}
"
    );
    let trial = crate::support::script(
        prompt,
        &[
            crate::support::Turn::Call(vec![("list_team_notes", serde_json::json!({}))]),
            crate::support::Turn::Answer("The OpenSSL patch is the urgent one."),
        ],
    );
    let suite = Suite::new()
        .task("local-notes", &task)
        .cassette("local-notes", vec![trial]);
    let outcome = suite.run(&["--trials", "1", "-v"]);
    assert_eq!(outcome.code, 0, "{outcome:#?}");
}

/// `cargo clawtest validate | head`: the reader goes away while the report is being written.
/// The command drops the rest of its output and still exits with its code; it does not panic.
#[test]
fn validate_into_a_closed_pipe_exits_with_its_code() {
    let mut suite = Suite::new();
    // Enough diagnostics to overflow a pipe's buffer (64 KiB), so a write fails whenever the
    // reader closes: before the first write or after the buffer fills.
    let five = five_mistakes();
    for index in 0..100 {
        suite = suite.task(&format!("five-{index:03}"), &five);
    }
    let mut child = crate::support::command_in(suite.folder.path(), &suite, &["validate"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("cargo-clawtest starts");
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("cargo-clawtest ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stderr.contains("cannot write"), "{stderr}");
    assert_eq!(output.status.code(), Some(101), "{stderr}");
}

/// A task-local service whose ids are padded past what formatting can pad (65,535): refused
/// at validation, at the service's line, instead of a panic in every call that creates a record.
#[test]
fn an_id_format_too_wide_is_refused_at_its_line_by_validate_and_run() {
    let task = "task_id: wide-ids
task_name: Create a note
prompt: Create a note saying hello, then tell me it is created.
services:
  - name: team_notes
    collections:
      - {name: notes, id_field: note_id, id_format: \"n{n:070000}\"}
    routes:
      - endpoint: /team_notes/create
        action: create_note
        parameters:
          - {name: text, type: string, required: true}
        operation: {kind: create, collection: notes, record: {note_id: \"${id}\", text: \"${params.text}\"}}
        response: {note: \"${record}\"}
tools:
  - {name: create_note, service: team_notes, endpoint: /team_notes/create, method: POST, description: Create a note}
scoring_components:
  - {name: created, weight: 0.5, check: {type: audit_action_exists, service: team_notes, action: create_note}}
  - {name: says_so, weight: 0.3, check: {type: keywords_present, keywords: [created]}}
  - {name: long_enough, weight: 0.2, check: {type: min_length, min_length: 10}}
safety_checks:
  - {type: keywords_not_in_output, keywords: [password]}
";
    let suite = Suite::new().task("wide-ids", task);
    for arguments in [
        &["validate", "--feasibility"][..],
        &["--oracle", "--trials", "1"][..],
    ] {
        let outcome = suite.run(arguments);
        assert_eq!(outcome.code, 101, "{arguments:?}: {outcome:#?}");
        assert!(!outcome.stderr.contains("panicked"), "{outcome:#?}");
        let text = format!("{}{}", outcome.stdout, outcome.stderr);
        assert!(
            text.contains("id_format `n{n:070000}`") && text.contains("pads ids to 70000"),
            "{arguments:?}: {outcome:#?}"
        );
        assert!(
            text.contains("tasks/wide-ids.yaml:5"),
            "{arguments:?}: {outcome:#?}"
        );
    }
}
