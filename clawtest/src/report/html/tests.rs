//! The HTML report's content: what it shows of a run and its trajectories, that nothing of
//! the run is interpreted as markup, and that long trajectories are folded.

use serde_json::json;

use super::*;

const HOSTILE: &str = "<script>alert('pwned')</script><img src=x onerror=alert(1)>";

/// A run of one task, failed by its one flaky trial of two, written as docs/results.md
/// documents results; `name` is the task's name (hostile in one test).
fn summary(name: &str) -> RunSummary {
    let component = |score: f64, reason: &str| json!({"component": "replied", "line": 12, "score": score, "weight": 1.0, "reason": reason});
    let trial = |trial: u32, passed: bool, score: f64, reason: &str| {
        json!({
            "trial": trial, "status": "graded", "passed": passed, "final_score": score,
            "completion": score, "robustness": 1.0, "safety": 1.0, "violations": [],
            "deductions": if score < 1.0 { vec![component(score, reason)] } else { vec![] },
            "components": [component(score, reason)],
            "model_calls": 1, "input_tokens": 10, "output_tokens": 1,
            "cost_usd": null, "audit_entries": 2, "harness_exit": "exit code 0",
            "faults_injected": 1, "unrecovered_faults": []
        })
    };
    let verdict = json!({
        "task_id": "gmail-reply", "task_name": name, "path": "tasks/gmail-reply.yaml",
        "line": 1, "status": "failed", "k": 2, "passes": 1, "pass_hat_k": false,
        "pass_at_k": 1.0, "mean_score": 0.5, "min_score": 0.0, "mean_robustness": 1.0,
        "safety_violations": 0, "threshold": 0.75, "pass_hat_k_estimate": 0.25,
        "category": "communication", "capability": null,
        "trials": [trial(0, true, 1.0, "sent 1 reply"), trial(1, false, 0.0, "no reply was sent")]
    });
    serde_json::from_value(json!({
        "status": "failed", "k": 2, "backend": "process",
        "verdicts": [verdict], "invalid": [], "gates": [],
        "tasks_passed": 0, "tasks_failed": 1, "tasks_errored": 0, "tasks_not_run": 0,
        "cost_usd": 0.0, "pass_hat_k": 0.0, "pass_at_k": 1.0,
        "mean_score": 0.5, "mean_robustness": 1.0, "interrupted": false
    }))
    .unwrap()
}

/// A trial that called `send_email` twice, the first answered by an injected 429, and ended
/// with `output`.
fn trajectory(trial: u32, output: &str, model_calls: usize) -> Trajectory {
    let call = |index: usize| {
        json!({
            "index": index, "path": "/v1/chat/completions", "status": 200,
            "request": {"messages": [{"role": "user", "content": "Reply to the offsite email"}]},
            "response": {"choices": [{"message": {"role": "assistant", "content": output,
                "tool_calls": [{"id": "c1", "type": "function",
                    "function": {"name": "send_email", "arguments": "{\"to\":\"a@b.c\"}"}}]}}]},
            "input_tokens": 5, "output_tokens": 1, "cost_usd": null
        })
    };
    let entry = |seq: u64, status: u16, fault: Option<&str>| {
        json!({
            "seq": seq, "service": "gmail", "action": "send_email", "endpoint": "/gmail/send",
            "params": {"to": "a@b.c"}, "status": status, "response": {"ok": status == 200},
            "fault": fault, "at": "2026-01-01T00:00:01Z"
        })
    };
    serde_json::from_value(json!({
        "task_id": "gmail-reply", "trial": trial,
        "audit": [entry(1, 429, Some("rate_limited")), entry(2, 200, None)],
        "model_calls": (0..model_calls).map(call).collect::<Vec<_>>(),
        "output": output, "output_source": "stdout", "stderr_tail": "",
        "workspace": {"notes/reply.txt": {"size": 3, "sha256": "abc"}},
        "exit": {"code": 0, "timed_out": false}, "duration_ms": 12
    }))
    .unwrap()
}

fn page_of(summary: &RunSummary, output: &str, model_calls: usize) -> String {
    render(summary, &mut |_, trial| {
        Found::Read(Box::new(trajectory(trial, output, model_calls)))
    })
}

#[test]
fn the_page_shows_the_suite_each_trial_its_components_and_its_trajectory() {
    let page = page_of(&summary("Confirm attendance"), "Replied: I will attend.", 1);
    assert!(page.starts_with("<!DOCTYPE html>"));
    // No resource from anywhere: the style and the script are inline.
    assert!(!page.contains("src=\"http") && !page.contains("href=\"http"));
    assert!(page.contains("<style>") && page.contains("<script>"));
    for shown in [
        "id=\"task-gmail-reply\"",
        "data-flaky=\"true\"",
        "<td>communication</td>",
        "no reply was sent",
        "sent 1 reply",
        "[user] Reply to the offsite email",
        "tool call</b> <code>send_email</code>",
        "audit #1 <code>gmail.send_email</code> /gmail/send → 429",
        "injected fault: rate_limited (429)",
        "recovered by #2",
        "Replied: I will attend.",
        "notes/reply.txt",
    ] {
        assert!(page.contains(shown), "{shown} is not in the page:\n{page}");
    }
    // The failed trial is open, the passing one folded.
    assert!(page.contains("<details class=\"trial\"><summary>trial 0: PASS"));
    assert!(page.contains("<details class=\"trial\" open><summary>trial 1: FAIL"));
}

#[test]
fn a_call_of_clawtests_own_speakers_is_named_and_the_prompt_is_the_harnesss() {
    let page = render(&summary("Confirm attendance"), &mut |_, trial| {
        let mut trajectory = trajectory(trial, "Replied.", 2);
        trajectory.model_calls[0].speaker = crate::trajectory::Speaker::Judge;
        trajectory.model_calls[0].request =
            json!({"messages": [{"role": "user", "content": "Score the rubric"}]}).into();
        Found::Read(Box::new(trajectory))
    });
    assert!(
        page.contains("<b>model call 1</b> <span class=\"muted\">by the judge</span>"),
        "{page}"
    );
    assert!(page.contains("<b>model call 2</b> <code>"), "{page}");
    assert!(page.contains("[user] Reply to the offsite email"), "{page}");
    assert!(!page.contains("[user] Score the rubric"), "{page}");
}

#[test]
fn nothing_of_the_run_is_interpreted_as_markup() {
    let page = page_of(&summary(HOSTILE), HOSTILE, 1);
    // The page's one script is its own; the agent's and the task's text shows escaped.
    assert_eq!(page.matches("<script>").count(), 1);
    assert!(!page.contains("<img"));
    assert!(page.contains(
        "&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"
    ));
}

#[test]
fn a_long_trajectory_is_paged_and_a_long_text_is_cut() {
    let long = "x".repeat(TEXT_LIMIT + 500);
    let page = page_of(&summary("t"), &long, 120);
    // 1 prompt + 120 model calls + 120 tool calls (one served, twice) + 1 answer = 242 items.
    assert!(
        page.contains("<summary>items 51–100 of 242</summary>"),
        "{}",
        &page[..2000]
    );
    assert!(page.contains("<summary>items 201–242 of 242</summary>"));
    assert!(page.contains("… (500 more bytes: see the trajectory file)"));
}

#[test]
fn a_trial_without_a_saved_trajectory_says_how_to_get_one() {
    let page = render(&summary("t"), &mut |_, _| Found::Missing);
    assert!(page.contains("No trajectory saved for this trial"));
    let page = render(&summary("t"), &mut |_, _| {
        Found::Unreadable("trial-0.json: not a saved trajectory".into())
    });
    assert!(page.contains("The trajectory cannot be read: trial-0.json: not a saved trajectory"));
}

#[test]
fn written_from_a_trajectories_folder_as_the_run_saves_it() {
    let folder = tempfile::tempdir().unwrap();
    let saved = folder.path().join("trajectories");
    let first = trajectory(0, "first answer", 1);
    std::fs::create_dir_all(first.file_in(&saved).parent().unwrap()).unwrap();
    std::fs::write(first.file_in(&saved), first.to_file_text()).unwrap();
    std::fs::write(Trajectory::path_in(&saved, "gmail-reply", 1), "{").unwrap();
    let folders = [folder.path().join("other-shard"), saved];
    let path = write(&summary("t"), &folders, &folder.path().join("report")).unwrap();
    assert_eq!(path, folder.path().join("report").join(INDEX));
    let page = std::fs::read_to_string(path).unwrap();
    assert!(page.contains("first answer"));
    assert!(page.contains("The trajectory cannot be read"));
}

#[test]
fn the_baseline_comparison_names_each_regression_and_links_to_its_task() {
    let mut run = summary("t");
    run.baseline = Some(
        serde_json::from_value(json!({
            "tolerance": 0.05,
            "regressions": [{"task_id": "gmail-reply", "before_status": "passed", "now_status": "failed",
                "before_score": 1.0, "now_score": 0.5, "before_robustness": 1.0, "now_robustness": 1.0,
                "reason": "passed before, fails now"}],
            "improvements": [], "new_tasks": ["<new>"], "missing_tasks": [],
            "before_mean_score": 1.0, "now_mean_score": 0.5, "suite_regressed": true
        }))
        .unwrap(),
    );
    let page = render(&run, &mut |_, _| Found::Missing);
    let section = &page[page
        .find("<section id=\"baseline\">")
        .expect("a baseline section")..];
    assert!(section.contains(
        "mean score 1.000 → 0.500 (tolerance 0.050): <span class=\"fail\">regressed</span>"
    ));
    assert!(section.contains(
        "<td><a href=\"#task-gmail-reply\">gmail-reply</a></td><td>passed → failed</td>"
    ));
    assert!(section.contains("passed before, fails now"));
    assert!(section.contains("New tasks: &lt;new&gt;"));
    // Without a baseline there is no section.
    assert!(!render(&summary("t"), &mut |_, _| Found::Missing).contains("id=\"baseline\""));
}
