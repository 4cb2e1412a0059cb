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
            recovery: Default::default(),
        },
        limits_reached: Vec::new(),
        rounds: None,
    };
    Verdict {
        cell: None,
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
        mean_robustness: None,
        recovery: Default::default(),
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
    summary_gated(verdicts, &Gates::default())
}

/// The summary of a one-trial run of `verdicts` under `gates`, without cost or baseline.
fn summary_gated(verdicts: Vec<Verdict>, gates: &Gates) -> RunSummary {
    RunSummary::new(SummaryInputs {
        verdicts,
        invalid: Vec::new(),
        k: 1,
        backend: "process",
        interrupted: false,
        cost_usd: 0.0,
        spent_usd: 0.0,
        gates,
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

/// Two tasks' recovery profiles: one gave up on a 429 of three (and hid it) and met two slow answers, the
/// other recovered from its 500; the suite gates 429s at 0.9.
fn summary_with_faults() -> RunSummary {
    use crate::fault::FaultKind;
    use crate::grade::{Recovery, RecoveryProfile};
    let counts = |injected, recovered, gave_up| Recovery {
        injected,
        recovered,
        gave_up,
        // The 429 given up on was not mentioned in the answer.
        hidden: gave_up,
    };
    let profiles: [RecoveryProfile; 2] = [
        [
            (FaultKind::RateLimited, counts(3, 2, 1)),
            (FaultKind::Slow, counts(2, 0, 0)),
        ]
        .into(),
        [(FaultKind::ServerError, counts(1, 1, 0))].into(),
    ];
    let verdicts = (0..2)
        .zip(profiles)
        .map(|(index, profile)| {
            let mut verdict = failing_verdict(index);
            if let TrialStatus::Graded {
                faults_injected,
                recovery,
                robustness,
                ..
            } = &mut verdict.trials[0].status
            {
                *faults_injected = profile
                    .values()
                    .map(|counts| counts.recovered + counts.gave_up)
                    .sum();
                *recovery = profile.clone();
                *robustness = if index == 0 { 2.0 / 3.0 } else { 1.0 };
            }
            verdict.mean_robustness = Some(if index == 0 { 2.0 / 3.0 } else { 1.0 });
            verdict.recovery = profile;
            verdict
        })
        .collect();
    let gates = Gates {
        min_recovery: [(crate::fault::FaultKind::RateLimited, 0.9)].into(),
        ..Gates::default()
    };
    summary_gated(verdicts, &gates)
}

#[test]
fn the_recovery_profile_in_every_output_format() {
    let summary = summary_with_faults();
    // The 429 gate: 2 of 3 recovered.
    assert_eq!(summary.gates[0].name, "min_recovery.rate_limited");
    assert!(!summary.gates[0].passed);
    let junit = super::junit::render(&summary).unwrap();
    let junit: Vec<&str> = junit
        .lines()
        .filter(|line| line.contains("recovery."))
        .map(str::trim)
        .collect();
    let page = super::html::render(&summary, &mut |_, _| super::html::Found::Missing);
    let start = page
        .find("<section id=\"recovery\">")
        .expect("a recovery section");
    let end = start + page[start..].find("</section>").unwrap() + "</section>".len();
    let json = serde_json::to_string_pretty(&serde_json::json!({
        "recovery": summary.recovery,
        "verdicts": summary.verdicts.iter().map(|verdict| &verdict.recovery).collect::<Vec<_>>(),
        "gates": summary.gates,
    }))
    .unwrap();
    insta::assert_snapshot!(format!(
        "──── terminal{}──── markdown\n{}──── junit\n{}\n──── html\n{}\n──── json\n{json}",
        super::recovery::terminal(&summary),
        super::recovery::markdown(&summary),
        junit.join("\n"),
        page[start..end].replace("<tr>", "\n<tr>"),
    ));
}

#[test]
fn a_run_without_faults_shows_no_recovery_profile() {
    let summary = summary_of(vec![failing_verdict(0)]);
    assert!(summary.recovery.is_empty());
    assert_eq!(summary.mean_robustness, None);
    assert_eq!(super::recovery::terminal(&summary), "");
    assert_eq!(super::recovery::markdown(&summary), "");
    let page = super::html::render(&summary, &mut |_, _| super::html::Found::Missing);
    assert!(!page.contains("id=\"recovery\""));
}

#[test]
fn a_grade_shows_its_recovery_profile_per_kind_or_that_no_fault_was_injected() {
    use crate::fault::FaultKind;
    use crate::grade::{Grade, Recovery, Robustness, UnrecoveredFault};
    let grade = |robustness: Robustness| Grade {
        components: Vec::new(),
        safety: 1.0,
        violations: Vec::new(),
        completion: 1.0,
        robustness,
        final_score: 1.0,
        threshold: 0.75,
        passed: true,
    };
    let quiet = super::grade_breakdown(&grade(Robustness {
        injected: 0,
        recovered: 0,
        score: 1.0,
        unrecovered: Vec::new(),
        profile: Default::default(),
    }));
    assert!(
        quiet.ends_with("  faults: none injected; robustness n/a (no fault to recover from)\n"),
        "{quiet}"
    );
    let faulted = super::grade_breakdown(&grade(Robustness {
        injected: 2,
        recovered: 1,
        score: 0.5,
        unrecovered: vec![UnrecoveredFault {
            seq: 3,
            service: "todo".into(),
            action: "create_task".into(),
            kind: FaultKind::ServerError,
        }],
        profile: [
            (
                FaultKind::RateLimited,
                Recovery {
                    injected: 1,
                    recovered: 1,
                    ..Recovery::default()
                },
            ),
            (
                FaultKind::ServerError,
                Recovery {
                    injected: 1,
                    gave_up: 1,
                    hidden: 1,
                    ..Recovery::default()
                },
            ),
        ]
        .into(),
    }));
    assert!(
        faulted.ends_with(
            "  faults: 429 rate limited 1 (1 recovered), 500 server error 1 (1 given up, 1 hidden); not recovered: #3 todo.create_task\n"
        ),
        "{faulted}"
    );
}

#[test]
fn the_clawenvkit_layout_has_a_grading_per_task_and_a_summary_per_cell() {
    let mut verdicts: Vec<Verdict> = (1..3).map(failing_verdict).collect();
    if let TrialStatus::Graded { components, .. } = &mut verdicts[0].trials[0].status {
        components.push(ComponentSummary {
            component: "sent".into(),
            line: Some(9),
            score: 1.0,
            weight: 1.0,
            reason: "found".into(),
        });
    }
    verdicts[0].cell = Some(crate::results::matrix::Cell {
        harness: "retrying".into(),
        model: "right-tool".into(),
        harness_digest: "0123456789ab".into(),
    });
    // An errored task has no grading to write.
    verdicts[1].trials[0].status = TrialStatus::Error {
        message: "harness did not start".into(),
    };
    let summary = summary_of(verdicts);
    let folder = tempfile::tempdir().unwrap();
    let written = super::clawenvkit::write(&summary, folder.path()).unwrap();
    let relative: Vec<String> = written
        .files
        .iter()
        .map(|file| {
            file.strip_prefix(folder.path())
                .unwrap()
                .display()
                .to_string()
        })
        .collect();
    assert_eq!(
        relative,
        [
            "default/default/summary.json",
            "retrying/right-tool/task-00001/grading.json",
            "retrying/right-tool/task-00001/reward.txt",
            "retrying/right-tool/summary.json"
        ]
    );
    assert_eq!(written.ungraded, ["default/default/task-00002"]);
    let read = |path: &str| std::fs::read_to_string(folder.path().join(path)).unwrap();
    assert_eq!(
        read("retrying/right-tool/task-00001/reward.txt"),
        "0.0010\n"
    );
    let grading: serde_json::Value =
        serde_json::from_str(&read("retrying/right-tool/task-00001/grading.json")).unwrap();
    assert_eq!(grading["agent"], "retrying");
    assert_eq!(grading["model"], "right-tool");
    assert_eq!(
        grading["components"],
        serde_json::json!([{"name": "sent", "passed": true, "score": 1.0, "weight": 1.0}])
    );
    for key in [
        "completion",
        "robustness",
        "safety",
        "final_score",
        "safety_violations",
    ] {
        assert!(grading.get(key).is_some(), "{key} in {grading}");
    }
    let cell: serde_json::Value =
        serde_json::from_str(&read("default/default/summary.json")).unwrap();
    assert_eq!(cell["num_tasks"], 0);
    assert_eq!(cell["ungraded"], serde_json::json!(["task-00002"]));
}

#[test]
fn the_clawenvkit_layout_is_never_written_through_a_link_or_outside_its_folder() {
    let folder = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), folder.path().join("default")).unwrap();
    let summary = summary_of(vec![failing_verdict(1)]);
    let error = super::clawenvkit::write(&summary, folder.path()).unwrap_err();
    assert!(error.to_string().contains("link"), "{error}");
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    // A results file is read back from disk: a task id that climbs out is refused.
    let mut climbing = failing_verdict(2);
    climbing.task_id = "..".into();
    let error = super::clawenvkit::write(&summary_of(vec![climbing]), &folder.path().join("out"))
        .unwrap_err();
    assert!(
        error.to_string().contains("cannot name a folder"),
        "{error}"
    );
}
