//! Limits of the GitHub-facing reports on suites too large to show whole.

use std::path::{Path, PathBuf};

use crate::config::Gates;
use crate::results::{
    ComponentSummary, RunSummary, SummaryInputs, TrialStatus, TrialSummary, Verdict, VerdictStatus,
};

fn failing_verdict(index: usize) -> Verdict {
    let record = TrialSummary {
        trial: 0,
        status: TrialStatus::Graded {
            passed: false,
            final_score: index as f64 / 1000.0,
            completion: 0.1,
            robustness: 1.0,
            safety: 1.0,
            violations: Vec::new(),
            deductions: vec![ComponentSummary {
                component: "c".into(),
                line: Some(9),
                score: 0.0,
                weight: 1.0,
                reason: "missed".into(),
            }],
            components: Vec::new(),
            model_calls: 1,
            input_tokens: 10,
            output_tokens: 1,
            cost_usd: None,
            audit_entries: 0,
            harness_exit: crate::trajectory::HarnessExit {
                code: Some(0),
                timed_out: false,
                signal: None,
            },
            faults_injected: 0,
            unrecovered_faults: Vec::new(),
        },
        limits_reached: Vec::new(),
        rounds: None,
    };
    Verdict {
        task_id: format!("task-{index:05}"),
        task_name: "t".into(),
        path: PathBuf::from(format!("tasks/task-{index:05}.yaml")),
        line: 1,
        status: VerdictStatus::Failed,
        k: 1,
        passes: 0,
        pass_hat_k: false,
        pass_at_k: 0.0,
        mean_score: index as f64 / 1000.0,
        min_score: index as f64 / 1000.0,
        mean_robustness: 1.0,
        safety_violations: 0,
        threshold: 0.75,
        pass_hat_k_estimate: 0.0,
        category: None,
        capability: None,
        trials: vec![record],
    }
}

/// The summary of a one-trial run of `verdicts`, without gates, cost or baseline.
fn summary_of(verdicts: Vec<Verdict>) -> RunSummary {
    RunSummary::new(SummaryInputs {
        verdicts,
        invalid: Vec::new(),
        k: 1,
        backend: "process",
        interrupted: false,
        cost_usd: 0.0,
        spent_usd: 0.0,
        gates: &Gates::default(),
        baseline: None,
        snapshots: Default::default(),
    })
}

#[test]
fn a_huge_summary_is_cut_between_rows_and_says_how_many_were_left_out() {
    let verdicts = (0..20_000).map(failing_verdict).collect();
    let summary = summary_of(verdicts);
    let text = super::markdown::render(&summary, 50_000);
    assert!(text.len() <= 50_000, "{}", text.len());
    assert!(text.contains("more task(s): the summary is cut to fit GitHub's limit"));
    assert!(
        text.lines()
            .filter(|line| line.starts_with("| <code>task-"))
            .all(|line| line.ends_with('|')),
        "a row was cut in half"
    );
    assert!(
        text.contains("### Top deductions"),
        "the fixed sections survive the cut"
    );
}

#[test]
fn annotations_stay_within_githubs_limit_worst_first() {
    let verdicts = (0..25).rev().map(failing_verdict).collect();
    let summary = summary_of(verdicts);
    let lines = super::annotations::render(&summary, Path::new("suite"));
    assert_eq!(lines.len(), super::annotations::LIMIT);
    assert!(lines[0].starts_with("::error file=suite/tasks/task-00000.yaml,line=9,title=task-00000%3A pass^1 failed (0/1)::"), "{}", lines[0]);
    assert!(lines[9].contains("task-00009"), "{}", lines[9]);
}

#[test]
fn groups_by_category_and_rank_unrecovered_faults() {
    let mut verdicts: Vec<Verdict> = (0..3).map(failing_verdict).collect();
    verdicts[0].category = Some("workflow".into());
    verdicts[1].category = Some("workflow".into());
    verdicts[2].category = Some("communication".into());
    verdicts[2].status = VerdictStatus::Passed;
    for (verdict, faults) in verdicts.iter_mut().zip([
        vec!["todo.create_task"],
        vec!["todo.create_task", "gmail.send_email"],
        vec![],
    ]) {
        if let TrialStatus::Graded {
            unrecovered_faults,
            faults_injected,
            ..
        } = &mut verdict.trials[0].status
        {
            *faults_injected = faults.len();
            *unrecovered_faults = faults.into_iter().map(String::from).collect();
        }
    }
    let summary = summary_of(verdicts);
    let workflow = &summary.groups.by_category["workflow"];
    assert_eq!((workflow.tasks, workflow.passed), (2, 0));
    assert_eq!(summary.groups.by_category["communication"].passed, 1);
    assert_eq!(summary.groups.by_capability["(none)"].tasks, 3);
    let ranked: Vec<(&str, usize)> = summary
        .groups
        .unrecovered_faults
        .iter()
        .map(|fault| (fault.action.as_str(), fault.unrecovered))
        .collect();
    assert_eq!(ranked, [("todo.create_task", 2), ("gmail.send_email", 1)]);
    let text = super::markdown::render(&summary, super::markdown::SIZE_LIMIT);
    assert!(
        text.contains("### By category") && text.contains("| todo.create_task | 2 |"),
        "{text}"
    );
}

#[test]
fn the_markdown_summary_shows_no_html_link_or_image_from_a_task_an_agent_or_a_baseline() {
    let mut verdict = failing_verdict(1);
    verdict.task_id = "evil_(1)".into();
    if let TrialStatus::Graded { deductions, .. } = &mut verdict.trials[0].status {
        deductions[0].component = "[click](https://evil.example) ![x](y)".into();
        deductions[0].reason =
            "called send_email with {\"body\": \"<img src=x onerror=alert(1)> <!-- | www.evil.example\"}"
                .into();
    }
    let mut summary = summary_of(vec![verdict]);
    let mut before = summary_of(vec![failing_verdict(2)]);
    before.verdicts[0].task_id = "<!--hidden".into();
    summary.baseline = Some(crate::results::baseline::compare(&before, &summary, 0.0));
    let text = super::markdown::render(&summary, super::markdown::SIZE_LIMIT);
    for forbidden in ["<img", "<!--", "](", "https://", "www.evil", "`evil"] {
        assert!(!text.contains(forbidden), "{forbidden} in\n{text}");
    }
    // Escaped, everything is still there to read.
    assert!(
        text.contains("&lt;img src=x onerror=alert\\(1\\)&gt; &lt;\\!-- \\| www&#46;evil.example"),
        "{text}"
    );
    assert!(
        text.contains("Not run this time: &lt;\\!--hidden"),
        "{text}"
    );
    assert!(
        text.contains("\\[click\\]\\(https&#58;//evil.example\\) \\!\\[x\\]\\(y\\)"),
        "{text}"
    );
}
