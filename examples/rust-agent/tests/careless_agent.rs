//! The deliberately broken agent makes exactly the expected task tests fail, with the grade
//! breakdown in the failure message: driven in-process, through the same test list and the
//! same libtest harness as tests/tasks.rs, so no cargo recursion and no subprocess.

use clawtest::cargo_test::libtest::{Arguments, MainOptions, run};
use clawtest::cargo_test::{TaskRunner, load_config, task_tests};
use clawtest::rust_harness::RustHarness;

fn careless() -> RustHarness {
    RustHarness::new("careless_agent", rust_agent::careless_agent)
}

fn options(harness: RustHarness) -> MainOptions {
    MainOptions {
        manifest_dir: env!("CARGO_MANIFEST_DIR"),
        suite: "tasks".into(),
        config: None,
        harness: Some(harness),
        trials: None,
        snapshot: None,
    }
}

#[test]
fn only_the_task_that_forbids_deleting_fails_and_says_why() {
    let config = load_config(env!("CARGO_MANIFEST_DIR").as_ref(), None).unwrap();
    let tests = task_tests(
        TaskRunner::new(config, Some(careless()), None),
        "tasks",
        None,
    )
    .unwrap();
    let mut names: Vec<String> = tests.iter().map(|test| test.name.clone()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "tasks::gmail-reply",
            "tasks::inbox-to-todo",
            "tasks::todo-triage"
        ]
    );
    let mut failures = Vec::new();
    for test in tests {
        let name = test.name.clone();
        if let Err(failure) = test.run() {
            failures.push((name, failure.0));
        }
    }
    assert_eq!(failures.len(), 1, "{failures:#?}");
    let (name, message) = &failures[0];
    assert_eq!(name, "tasks::todo-triage");
    assert!(
        message.starts_with("task `todo-triage` failed pass^3: 0/3 trials passed"),
        "{message}"
    );
    assert!(message.contains("at tasks/todo-triage.yaml:1"), "{message}");
    for trial in 0..3 {
        assert!(
            // Its robustness is what the injected faults made it: retried, or none injected.
            message.contains(&format!(
                "trial {trial}: FAIL final 0.000 (completion 1.000, robustness "
            )) && message.contains("safety 0)"),
            "{message}"
        );
    }
    assert_eq!(
        message
            .matches("safety violation: delete_task was called")
            .count(),
        3,
        "{message}"
    );
}

/// Runs the libtest harness with `arguments` (after the program name), its report going to a
/// log file (so that it stays out of this test's own output), and returns the counts and the log.
fn harness(harness: RustHarness, arguments: &[&str]) -> (u64, u64, u64, String) {
    let folder = tempfile::tempdir().unwrap();
    let log = folder.path().join("tasks.log");
    let log_argument = log.display().to_string();
    let mut words = vec![
        "tasks",
        "--logfile",
        log_argument.as_str(),
        "--color",
        "never",
    ];
    words.extend_from_slice(arguments);
    let conclusion = run(&Arguments::from_iter(words), options(harness)).unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    (
        conclusion.num_passed,
        conclusion.num_failed,
        conclusion.num_filtered_out,
        text,
    )
}

#[test]
fn the_libtest_harness_reports_exactly_one_failure_with_its_breakdown() {
    let (passed, failed, _, log) = harness(careless(), &["--test-threads", "1"]);
    assert_eq!((passed, failed), (2, 1), "{log}");
    assert!(log.contains("failures:\n    tasks::todo-triage\n"), "{log}");
    assert!(
        log.contains("---- tasks::todo-triage ----\ntask `todo-triage` failed pass^3"),
        "{log}"
    );
    assert!(
        log.contains("safety violation: delete_task was called"),
        "{log}"
    );
    assert!(!log.contains("---- tasks::gmail-reply"), "{log}");
}

#[test]
fn filters_and_exact_names_select_tests_like_libtest() {
    let (passed, failed, filtered_out, log) =
        harness(careless(), &["--exact", "tasks::gmail-reply"]);
    assert_eq!((passed, failed, filtered_out), (1, 0, 2), "{log}");

    let (passed, failed, filtered_out, log) = harness(careless(), &["triage"]);
    assert_eq!((passed, failed, filtered_out), (0, 1, 2), "{log}");
}

#[test]
fn listing_is_one_terse_line_per_task() {
    let (_, _, _, log) = harness(careless(), &["--list", "--format", "terse"]);
    assert_eq!(
        log,
        "tasks::gmail-reply: test\ntasks::inbox-to-todo: test\ntasks::todo-triage: test\n"
    );
    let (_, _, _, log) = harness(careless(), &["--list", "--format", "terse", "--ignored"]);
    assert_eq!(log, "");
}

#[test]
fn the_careful_agent_passes_every_task() {
    let (passed, failed, _, log) = harness(
        RustHarness::new("agent", rust_agent::agent),
        &["--test-threads", "1"],
    );
    assert_eq!((passed, failed), (3, 0), "{log}");
}
