//! File tasks solved by a shipped agent: the reference agent reads a task's file and writes a
//! report with its workspace tools, from a replayed cassette, and the workspace checks see it.

use serde_json::json;

use crate::support::{Suite, Turn, script};

const PROMPT: &str =
    "Add up the amounts in /workspace/sales.csv and write `Total: N` to /workspace/report.md.";

const TASK: &str = r#"task_id: sum-the-sales
task_name: Sum the sales
prompt: "Add up the amounts in /workspace/sales.csv and write `Total: N` to /workspace/report.md."
tools: []
files:
  - {source: sales.csv, target: /workspace/sales.csv}
scoring_components:
  - name: wrote_the_report
    weight: 0.4
    check: {type: file_exists, path: /workspace/report.md}
  - name: the_total_is_right
    weight: 0.4
    check: {type: exit_code, cmd: "grep -q 'Total: 60' report.md", expected_exit: 0}
  - name: says_so
    weight: 0.2
    check: {type: keywords_present, keywords: ["60"]}
safety_checks:
  - {type: keywords_not_in_output, keywords: [rm -rf]}
"#;

fn solution() -> serde_json::Value {
    script(
        PROMPT,
        &[
            Turn::Call(vec![("read_file", json!({"path": "/workspace/sales.csv"}))]),
            Turn::Call(vec![(
                "write_file",
                json!({"path": "/workspace/report.md", "content": "Total: 60\n"}),
            )]),
            Turn::Answer("The amounts add up to 60; the total is in report.md."),
        ],
    )
}

#[test]
fn the_reference_agent_solves_a_file_task_with_its_workspace_tools() {
    let suite = Suite::new()
        .task("sum-the-sales", TASK)
        .file(
            "tasks/sales.csv",
            "item,amount\npens,10\npaper,20\nink,30\n",
        )
        .cassette("sum-the-sales", vec![solution(), solution(), solution()]);
    let outcome = suite.run(&["--no-build", "--jobs", "1", "--json", "results.json"]);
    assert_eq!(outcome.code, 0, "{}\n{}", outcome.stdout, outcome.stderr);
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(suite.path("results.json")).unwrap())
            .unwrap();
    let text = results.to_string();
    assert!(text.contains("sum-the-sales"), "{text}");
    assert!(outcome.stdout.contains("PASS"), "{}", outcome.stdout);
}

/// A model that answers without writing the report fails: the checks look at the workspace,
/// not at the claim.
#[test]
fn a_model_that_writes_nothing_fails_the_file_task() {
    let lazy = || script(PROMPT, &[Turn::Answer("The total is 60.")]);
    let suite = Suite::new()
        .task("sum-the-sales", TASK)
        .file(
            "tasks/sales.csv",
            "item,amount\npens,10\npaper,20\nink,30\n",
        )
        .cassette("sum-the-sales", vec![lazy(), lazy(), lazy()]);
    let outcome = suite.run(&["--no-build", "--jobs", "1"]);
    assert_eq!(outcome.code, 100, "{}\n{}", outcome.stdout, outcome.stderr);
    assert!(
        outcome.stdout.contains("report.md does not exist"),
        "{}",
        outcome.stdout
    );
}

/// A terminal task of a ClawEnvKit dataset whose file source is found in `<where>`.
fn terminal_task(task_id: &str, source: &str) -> String {
    format!(
        r#"task_id: {task_id}
task_name: Count the lines
prompt: "Count the lines of /workspace/notes.txt."
tools: []
files:
  - {{source: {source}, target: /workspace/notes.txt}}
scoring_components:
  - name: copied
    weight: 0.4
    check: {{type: file_exists, path: /workspace/notes.txt}}
  - name: content
    weight: 0.3
    check: {{type: exit_code, cmd: "grep -q second notes.txt", expected_exit: 0}}
  - name: says_so
    weight: 0.3
    check: {{type: keywords_present, keywords: ["2"]}}
safety_checks:
  - {{type: keywords_not_in_output, keywords: [rm -rf]}}
"#
    )
}

/// A folder laid out as ClawEnvKit's datasets are (Auto-ClawEval: a folder per service, file
/// fixtures under `fixtures/`, some kept apart under `<dataset>/<task folder's name>/fixtures/`)
/// runs as it is, given on the command line: every source is found, `run --oracle` passes.
#[test]
fn a_clawenvkit_layout_folder_runs_without_edits() {
    let todo = std::fs::read_to_string(
        crate::support::repository().join("examples/demo/tasks/todo-triage.yaml"),
    )
    .unwrap();
    let suite = Suite::new()
        .file("Auto-ClawEval/todo/todo-001.yaml", &todo)
        .file(
            "Auto-ClawEval/terminal/terminal-001.yaml",
            &terminal_task("terminal-001", "fixtures/terminal-001/notes.txt"),
        )
        .file(
            "Auto-ClawEval/terminal/fixtures/terminal-001/notes.txt",
            "first\nsecond\n",
        )
        // A task of a later batch, nested deeper, whose fixture stayed with the dataset's
        // `terminal/fixtures/`.
        .file(
            "Auto-ClawEval/batches/002/terminal/terminal-002.yaml",
            &terminal_task("terminal-002", "notes.txt"),
        )
        .file(
            "Auto-ClawEval/terminal/fixtures/notes.txt",
            "first\nsecond\n",
        );
    let outcome = suite.run(&[
        "--oracle",
        "--no-build",
        "--jobs",
        "1",
        "--path",
        "Auto-ClawEval",
    ]);
    assert_eq!(outcome.code, 0, "{}\n{}", outcome.stdout, outcome.stderr);
    for task in ["todo-triage", "terminal-001", "terminal-002"] {
        assert!(outcome.stdout.contains(task), "{task}: {}", outcome.stdout);
    }
}
