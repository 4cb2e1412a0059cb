//! Publishing: every output from one summary, the snapshot decision included, and what is left
//! for the binary to print.

use std::path::Path;

use super::*;
use crate::config::Gates;
use crate::report::snapshots::{self, UpdateMode};
use crate::results::{RunStatus, SummaryInputs};

/// A passing one-task run, written as docs/results.md documents it (the results file is the
/// stable form of a summary).
fn passing_summary() -> RunSummary {
    let trial = serde_json::json!({
        "trial": 0, "status": "graded", "passed": true, "final_score": 1.0,
        "completion": 1.0, "robustness": 1.0, "safety": 1.0, "violations": [],
        "deductions": [], "model_calls": 1, "input_tokens": 10, "output_tokens": 1,
        "cost_usd": null, "audit_entries": 1, "harness_exit": "exit code 0",
        "faults_injected": 0, "unrecovered_faults": []
    });
    let verdict = serde_json::json!({
        "task_id": "todo-triage", "task_name": "Triage", "path": "tasks/todo-triage.yaml",
        "line": 1, "status": "passed", "k": 1, "passes": 1, "pass_hat_k": true,
        "pass_at_k": 1.0, "mean_score": 1.0, "min_score": 1.0, "mean_robustness": 1.0,
        "safety_violations": 0, "threshold": 0.75, "pass_hat_k_estimate": 1.0,
        "category": null, "capability": null, "trials": [trial]
    });
    let document = serde_json::json!({
        "schema": json::SCHEMA, "status": "passed", "k": 1, "backend": "process",
        "verdicts": [verdict], "invalid": [], "gates": [],
        "tasks_passed": 1, "tasks_failed": 0, "tasks_errored": 0, "tasks_not_run": 0,
        "cost_usd": 0.0, "pass_hat_k": 1.0, "pass_at_k": 1.0,
        "mean_score": 1.0, "mean_robustness": 1.0, "interrupted": false
    });
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("results.json");
    std::fs::write(&path, document.to_string()).unwrap();
    json::read(&path).unwrap()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn every_requested_output_is_written_and_the_step_summary_is_appended_to() {
    let folder = tempfile::tempdir().unwrap();
    let summary = passing_summary();
    let outputs = Outputs {
        junit: Some(folder.path().join("out/junit.xml")),
        json: Some(folder.path().join("out/results.json")),
        summary: Some(folder.path().join("summary.md")),
        save_baseline: Some(folder.path().join("baseline.json")),
        annotations: false,
        html: None,
        trajectories: Vec::new(),
    };
    let step_summary = folder.path().join("step-summary.md");
    std::fs::write(&step_summary, "earlier step\n").unwrap();
    let github = Github {
        step_summary: Some(step_summary.clone()),
        ..Github::default()
    };
    let published = publish(&summary, None, &outputs, &github, folder.path()).unwrap();
    assert_eq!(published, Published::default());
    assert_eq!(
        read(&folder.path().join("out/junit.xml")),
        junit::render(&summary).unwrap()
    );
    let results = read(&folder.path().join("out/results.json"));
    assert_eq!(results, json::render(&summary));
    assert_eq!(read(&folder.path().join("baseline.json")), results);
    let markdown = markdown::render(&summary, markdown::SIZE_LIMIT);
    assert_eq!(read(&folder.path().join("summary.md")), markdown);
    assert_eq!(read(&step_summary), format!("earlier step\n{markdown}"));
}

#[test]
fn a_changed_snapshot_fails_the_status_every_output_is_written_with() {
    let folder = tempfile::tempdir().unwrap();
    let verdicts = passing_summary().verdicts;
    let review = snapshots::review(
        &verdicts,
        false,
        &folder.path().join("snapshots"),
        UpdateMode::No,
    )
    .expect("a finished run is compared");
    assert!(review.changed());
    let summary = RunSummary::new(SummaryInputs {
        verdicts,
        invalid: Vec::new(),
        k: 1,
        backend: "process",
        interrupted: false,
        cost_usd: 0.0,
        spent_usd: 0.0,
        gates: &Gates::default(),
        baseline: None,
        snapshots: review.failures(),
    });
    assert_eq!(summary.status, RunStatus::Failed);
    let outputs = Outputs {
        junit: Some(folder.path().join("junit.xml")),
        json: Some(folder.path().join("results.json")),
        summary: Some(folder.path().join("summary.md")),
        ..Outputs::default()
    };
    publish(
        &summary,
        Some(&review),
        &outputs,
        &Github::default(),
        folder.path(),
    )
    .unwrap();
    assert_eq!(
        json::read(&folder.path().join("results.json"))
            .unwrap()
            .status,
        RunStatus::Failed
    );
    assert!(read(&folder.path().join("summary.md")).starts_with("## clawtest: ❌ failed"));
    let junit = read(&folder.path().join("junit.xml"));
    assert!(junit.contains("type=\"grade snapshot changed\""), "{junit}");
    assert!(
        junit.contains("INSTA_UPDATE=no: nothing written"),
        "{junit}"
    );
}

#[test]
fn an_interrupted_run_is_not_compared_with_its_snapshots() {
    let folder = tempfile::tempdir().unwrap();
    let summary = passing_summary();
    assert!(snapshots::review(&summary.verdicts, true, folder.path(), UpdateMode::New).is_none());
    assert_eq!(std::fs::read_dir(folder.path()).unwrap().count(), 0);
}

#[test]
fn annotations_and_warnings_are_returned_for_the_binary_to_print() {
    let folder = tempfile::tempdir().unwrap();
    let mut summary = passing_summary();
    summary.status = RunStatus::Failed;
    summary.verdicts[0].status = crate::results::VerdictStatus::Failed;
    let github = Github {
        step_summary: Some(folder.path().join("no-such-folder/step-summary.md")),
        actions: true,
        workspace: Some(folder.path().to_path_buf()),
        run_url: None,
    };
    let published = publish(
        &summary,
        None,
        &Outputs::default(),
        &github,
        &folder.path().join("suite"),
    )
    .unwrap();
    assert_eq!(published.annotations.len(), 1, "{published:?}");
    assert!(
        published.annotations[0].starts_with("::error file=suite/tasks/todo-triage.yaml,"),
        "{published:?}"
    );
    assert_eq!(published.warnings.len(), 1, "{published:?}");
    assert!(
        published.warnings[0].starts_with("could not append to $GITHUB_STEP_SUMMARY ("),
        "{published:?}"
    );
}

#[test]
fn a_file_that_cannot_be_written_is_an_error_naming_it() {
    let folder = tempfile::tempdir().unwrap();
    let outputs = Outputs {
        json: Some(folder.path().to_path_buf()),
        ..Outputs::default()
    };
    let error = publish(
        &passing_summary(),
        None,
        &outputs,
        &Github::default(),
        folder.path(),
    )
    .unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with(&format!("could not write {}: ", folder.path().display())),
        "{error}"
    );
}

#[test]
fn the_html_report_is_written_and_the_summary_links_to_its_artifact_on_actions() {
    let folder = tempfile::tempdir().unwrap();
    let summary = passing_summary();
    let outputs = Outputs {
        summary: Some(folder.path().join("summary.md")),
        html: Some(folder.path().join("report")),
        ..Outputs::default()
    };
    let run_url = run_url(|name| {
        Some(
            match name {
                "GITHUB_SERVER_URL" => "https://github.com",
                "GITHUB_REPOSITORY" => "octo/agent",
                _ => "42",
            }
            .to_string(),
        )
    });
    assert_eq!(
        run_url.as_deref(),
        Some("https://github.com/octo/agent/actions/runs/42")
    );
    assert_eq!(run_url_without_a_run_id(), None);
    let github = Github {
        actions: true,
        run_url,
        workspace: Some(folder.path().to_path_buf()),
        ..Github::default()
    };
    publish(&summary, None, &outputs, &github, folder.path()).unwrap();
    let page = read(&folder.path().join("report/index.html"));
    assert!(page.contains("id=\"task-todo-triage\""));
    let markdown = read(&folder.path().join("summary.md"));
    let link = "📄 **[HTML report](https://github.com/octo/agent/actions/runs/42#artifacts)**: the artifact `clawtest-report`";
    let (heading, rest) = markdown.split_once("\n\n").unwrap();
    assert_eq!(heading, "## clawtest: ✅ passed");
    assert!(rest.starts_with(link), "{markdown}");
    // Outside Actions (or without --html) there is nothing to link to.
    let outside = Github {
        actions: false,
        ..github
    };
    publish(&summary, None, &outputs, &outside, folder.path()).unwrap();
    assert!(!read(&folder.path().join("summary.md")).contains("HTML report"));
}

fn run_url_without_a_run_id() -> Option<String> {
    run_url(|name| (name != "GITHUB_RUN_ID").then(|| "x".to_string()))
}
