//! Bounds on what a suite, a results file or a command line can ask for (issue 28): numbers
//! out of range are refused with the field named, before anything is allocated or compared.

use serde_json::Value;

use crate::good_triage;
use crate::support::Suite;

/// A suite whose baseline run passes: one demo task with three good trials.
fn triage_suite() -> Suite {
    Suite::new().demo_task("todo-triage", false).cassette(
        "todo-triage",
        vec![good_triage(), good_triage(), good_triage()],
    )
}

#[test]
fn a_baseline_out_of_range_is_refused_with_its_field() {
    let suite = triage_suite();
    let saved = suite.run(&["--save-baseline", "baseline.json"]);
    assert_eq!(saved.code, 0, "{saved:#?}");
    let baseline: Value =
        serde_json::from_str(&std::fs::read_to_string(suite.path("baseline.json")).unwrap())
            .unwrap();
    let cases: [(&str, Value, &str); 4] = [
        (
            "/verdicts/0/k",
            Value::from(0),
            "verdicts[0].k is 0: expected at least 1 trial",
        ),
        (
            "/verdicts/0/passes",
            Value::from(5),
            "verdicts[0].passes is 5: more than its k of 3 trials",
        ),
        (
            "/verdicts/0/mean_score",
            Value::from(1e308),
            "verdicts[0].mean_score is 100000000",
        ),
        (
            "/pass_hat_k",
            Value::from(-1e308),
            "pass_hat_k is -10000000",
        ),
    ];
    for (pointer, value, said) in cases {
        let mut tampered = baseline.clone();
        *tampered.pointer_mut(pointer).expect(pointer) = value;
        std::fs::write(suite.path("tampered.json"), tampered.to_string()).unwrap();
        let outcome = suite.run(&["--baseline", "tampered.json"]);
        assert_eq!(outcome.code, 101, "{pointer}: {outcome:#?}");
        assert!(
            outcome
                .stderr
                .contains("tampered.json is not a clawtest results file")
                && outcome.stderr.contains(said),
            "{pointer}: {outcome:#?}"
        );
        // A shard of a merge is read the same way.
        let merged = suite.run(&["merge", "tampered.json"]);
        assert_ne!(merged.code, 0, "{pointer}: {merged:#?}");
        assert!(merged.stderr.contains(said), "{pointer}: {merged:#?}");
    }
    // The file as saved is still a good baseline.
    assert_eq!(suite.run(&["--baseline", "baseline.json"]).code, 0);
}

/// Runs the command in `suite` with a standard input that stays open and never says anything
/// (what `/dev/stdin` is on a terminal); it must end by itself. A guard, not a measure: a
/// command still running after a minute is taken to hang, killed, and fails the test.
fn finishes(suite: &Suite, arguments: &[&str]) -> std::process::Output {
    let mut child = crate::support::command_in(suite.folder.path(), suite, arguments)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("cargo-clawtest starts");
    let _silent = child.stdin.take();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().expect("waited").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("{arguments:?} hangs");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}

/// `grade --output FILE` and `--audit FILE` read regular files only, each capped: a link to
/// `/dev/zero` would fill the memory, a FIFO would hang the command, a huge file is refused.
#[test]
fn grade_reads_only_regular_files_each_capped() {
    let audit = r#"{"todo": [{"action": "list_tasks", "params": {}, "status": 200}]}"#;
    let suite = Suite::new()
        .task("ce-001", crate::CLAWENVKIT_TASK)
        .file("audit.json", audit)
        .config("tasks = [\"tasks/*.yaml\"]\n[limits]\noutput_file_bytes = 1000\n");
    std::os::unix::fs::symlink("/dev/zero", suite.path("zero.txt")).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(suite.path("fifo.txt"))
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    std::fs::write(suite.path("long.txt"), "x".repeat(1001)).unwrap();
    for (output, said) in [
        ("long.txt", "larger than 1000 bytes"),
        ("fifo.txt", "not a regular file"),
        ("zero.txt", "not a regular file"),
    ] {
        let arguments = [
            "grade",
            "tasks/ce-001.yaml",
            "--audit",
            "audit.json",
            "--output",
            output,
        ];
        let finished = finishes(&suite, &arguments);
        let stderr = String::from_utf8_lossy(&finished.stderr);
        assert_eq!(finished.status.code(), Some(101), "{output}: {stderr}");
        assert!(
            stderr.contains(&format!("cannot read {output}")) && stderr.contains(said),
            "{output}: {stderr}"
        );
    }
    // The audit is read the same way.
    let outcome = suite.run(&["grade", "tasks/ce-001.yaml", "--audit", "zero.txt"]);
    assert_eq!(outcome.code, 101, "{outcome:#?}");
    assert!(
        outcome.stderr.contains("not a regular file"),
        "{outcome:#?}"
    );
}

/// A FIFO, or a committed link to `/dev/stdin`, among the task files: `list`, `validate` and
/// `run` report each as not a regular file and go on with the rest; none waits for a writer.
#[test]
fn a_fifo_or_a_device_among_the_task_files_is_refused_not_waited_for() {
    let suite = triage_suite();
    let made = std::process::Command::new("mkfifo")
        .arg(suite.path("tasks/fifo.yaml"))
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    std::os::unix::fs::symlink("/dev/stdin", suite.path("tasks/stdin.yaml")).unwrap();
    for arguments in [&["list"][..], &["validate"][..], &["--trials", "1"][..]] {
        let finished = finishes(&suite, arguments);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&finished.stdout),
            String::from_utf8_lossy(&finished.stderr)
        );
        assert_eq!(finished.status.code(), Some(101), "{arguments:?}: {text}");
        for name in ["tasks/fifo.yaml", "tasks/stdin.yaml"] {
            // `list` and `validate` say it as a diagnostic, `run` as a line of its report.
            let said = [
                format!("{name}: (file): cannot read the file: not a"),
                format!("{name} is not a valid task: (file): cannot read the file: not a"),
                format!("INVALID {name}: (file): cannot read the file: not a regular file"),
            ];
            assert!(
                said.iter().any(|said| text.contains(said.as_str())),
                "{arguments:?} {name}: {text}"
            );
        }
        // The good task is still listed, validated and run.
        let kept = if arguments == ["validate"] {
            "1 valid, 2 invalid"
        } else {
            "todo-triage"
        };
        assert!(text.contains(kept), "{arguments:?}: {text}");
    }
}

/// A trial's folder (its workspace's parent) is the user's alone, mode 0700: what a harness
/// leaves there is out of other local users' reach while the trial runs.
#[test]
fn a_trial_s_folder_is_the_user_s_alone() {
    let harness =
        r#"["sh", "-c", "stat -c 'folder mode %a' \"$CLAWTEST_WORKSPACE/..\" >&2; exit 3"]"#;
    let suite = Suite::new()
        .config(&format!(
            "tasks = [\"tasks/*.yaml\"]\n[harness]\ncommand = {harness}\n"
        ))
        .demo_task("todo-triage", true);
    let outcome = suite.run(&["--trials", "1", "-v"]);
    assert_eq!(outcome.code, 102, "{outcome:#?}");
    let text = format!("{}{}", outcome.stdout, outcome.stderr);
    assert!(text.contains("folder mode 700"), "{text}");
}

/// `--trials`, `run --variants` and `vary --count` past their caps are usage errors: nothing
/// is planned, allocated or drawn.
#[test]
fn trials_and_variants_past_their_caps_are_usage_errors() {
    let suite = triage_suite();
    for (arguments, said) in [
        (
            &["--trials", "4294967295"][..],
            "4294967295 is not in 1..=1000",
        ),
        (&["--trials", "1001"][..], "1001 is not in 1..=1000"),
        (
            &["--oracle", "--variants", "100000"][..],
            "100000 is not in 1..=1000",
        ),
        (
            &["vary", "tasks", "--count", "1001"][..],
            "1001 is not in 1..=1000",
        ),
    ] {
        let outcome = suite.run(arguments);
        assert_eq!(outcome.code, 2, "{arguments:?}: {outcome:#?}");
        assert!(outcome.stderr.contains(said), "{arguments:?}: {outcome:#?}");
    }
}
