//! The GitHub Actions experience: init, shards and merge, baselines, the step summary and
//! annotations.

use serde_json::{Value, json};

use crate::support::{Suite, demo_shards, junit, repository, run_in};
use crate::{good_triage, lazy_triage};

#[test]
fn init_writes_a_suite_that_passes_at_once() {
    let folder = tempfile::tempdir().unwrap();
    let binary = std::path::Path::new(env!("CARGO_BIN_EXE_cargo-clawtest"));
    let initialised = run_in(folder.path(), &["init"]);
    assert_eq!(initialised.code, 0, "{initialised:#?}");
    for file in [
        "clawtest.toml",
        "tasks/todo-review.yaml",
        "cassettes/todo-review.yaml",
        "Dockerfile.clawtest",
        ".github/workflows/clawtest.yml",
    ] {
        assert!(folder.path().join(file).is_file(), "{file} was not written");
    }
    // The starter harness is `cargo-clawtest example-agent`, found on PATH as after `cargo install`.
    let path = format!(
        "{}:{}",
        binary.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = std::process::Command::new(binary)
        .arg("clawtest")
        .current_dir(folder.path())
        .env("PATH", path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("2 passed, 0 failed"), "{stdout}");
    // With the template's faults on: some were injected, and the example agent recovered.
    assert!(stdout.contains("recovery profile"), "{stdout}");
    assert!(!stdout.contains("FAILED"), "{stdout}");

    let again = run_in(folder.path(), &["init"]);
    assert_eq!(again.code, 101, "{again:#?}");
    assert!(
        again.stderr.contains("already exist(s)") && again.stderr.contains("--force"),
        "{}",
        again.stderr
    );
}

#[test]
fn two_merged_shards_report_like_one_unsharded_run() {
    let demo = repository().join("examples/demo");
    let out = tempfile::tempdir().unwrap();
    let path = |name: &str| out.path().join(name).display().to_string();
    let whole = run_in(
        &demo,
        &[
            "--no-build",
            "--junit",
            &path("whole.xml"),
            "--json",
            &path("whole.json"),
        ],
    );
    assert_eq!(whole.code, 0, "{whole:#?}");
    demo_shards(out.path());
    let merged = run_in(
        &demo,
        &[
            "merge",
            &path("shard1.json"),
            &path("shard2.json"),
            "--junit",
            &path("merged.xml"),
            "--json",
            &path("merged.json"),
        ],
    );
    assert_eq!(merged.code, 0, "{merged:#?}");

    let (whole_junit, merged_junit) = (
        junit(&out.path().join("whole.xml")),
        junit(&out.path().join("merged.xml")),
    );
    let names = |report: &quick_junit::Report| {
        report.test_suites[0]
            .test_cases
            .iter()
            .map(|case| case.name.as_str().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&whole_junit), names(&merged_junit));
    assert_eq!(whole_junit.tests, merged_junit.tests);
    assert_eq!(whole_junit.failures, merged_junit.failures);
    let read = |name: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(out.path().join(name)).unwrap()).unwrap()
    };
    let (whole_json, merged_json) = (read("whole.json"), read("merged.json"));
    for total in [
        "tasks_passed",
        "tasks_failed",
        "pass_hat_k",
        "pass_at_k",
        "mean_score",
        "gates",
    ] {
        assert_eq!(whole_json[total], merged_json[total], "{total}");
    }
    // Each shard ran part of the suite, and together all of it.
    let shard_tasks = |name: &str| read(name)["verdicts"].as_array().unwrap().len();
    assert_eq!(shard_tasks("shard1.json") + shard_tasks("shard2.json"), 4);
}

#[test]
fn merged_shards_report_the_sum_of_their_model_costs() {
    let demo = repository().join("examples/demo");
    let out = tempfile::tempdir().unwrap();
    let path = |name: &str| out.path().join(name).display().to_string();
    // Each shard's results say what its model calls cost (replay costs nothing, so the files
    // are given a cost as a live run would have written it).
    for (file, cost) in demo_shards(out.path()).iter().zip([0.25, 0.5]) {
        let mut results: Value =
            serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        results["cost_usd"] = json!(cost);
        std::fs::write(file, results.to_string()).unwrap();
    }
    let merged = run_in(
        &demo,
        &[
            "merge",
            &path("shard1.json"),
            &path("shard2.json"),
            "--json",
            &path("merged.json"),
        ],
    );
    assert_eq!(merged.code, 0, "{merged:#?}");
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(path("merged.json")).unwrap()).unwrap();
    assert_eq!(results["cost_usd"], json!(0.75), "{results:#}");
    assert!(
        merged.stdout.contains("model cost: $0.7500"),
        "{}",
        merged.stdout
    );
}

#[test]
fn merge_rejects_shards_that_overlap() {
    let demo = repository().join("examples/demo");
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("one.json").display().to_string();
    assert_eq!(
        run_in(
            &demo,
            &["--no-build", "--trials", "1", "gmail", "--json", &file]
        )
        .code,
        0
    );
    let merged = run_in(&demo, &["merge", &file, &file]);
    assert_eq!(merged.code, 101, "{merged:#?}");
    assert!(
        merged
            .stderr
            .contains("task `gmail-reply` appears in more than one shard"),
        "{}",
        merged.stderr
    );
}

#[test]
fn merge_refuses_a_set_with_a_shard_missing_naming_it() {
    let demo = repository().join("examples/demo");
    let out = tempfile::tempdir().unwrap();
    let [first, second] = demo_shards(out.path());
    // Each shard's results name their shard.
    let results: Value = serde_json::from_str(&std::fs::read_to_string(&second).unwrap()).unwrap();
    assert_eq!(
        results["shard"],
        json!({"kind": "hash", "index": 2, "count": 2}),
        "{results:#}"
    );
    // The second shard's job died before writing results: its tasks are neither passed nor
    // failed, so the merge must not pass.
    let merged = run_in(&demo, &["merge", &first.display().to_string()]);
    assert_eq!(merged.code, 101, "{merged:#?}");
    assert!(
        merged
            .stderr
            .contains("1 of 2 shards given: hash:2/2 missing"),
        "{}",
        merged.stderr
    );
    // A whole run's results among shards are refused too.
    let whole = out.path().join("whole.json").display().to_string();
    assert_eq!(
        run_in(
            &demo,
            &["--no-build", "--trials", "1", "gmail", "--json", &whole]
        )
        .code,
        0
    );
    let mixed = run_in(&demo, &["merge", &first.display().to_string(), &whole]);
    assert_eq!(mixed.code, 101, "{mixed:#?}");
    assert!(
        mixed
            .stderr
            .contains("holds no shard (it was not run with --partition)"),
        "{}",
        mixed.stderr
    );
}

#[test]
fn a_regression_against_the_baseline_fails_and_the_summary_names_it() {
    let good = Suite::new()
        .demo_task("todo-triage", false)
        .demo_task("gmail-reply", true)
        .cassette(
            "todo-triage",
            vec![good_triage(), good_triage(), good_triage()],
        );
    let baseline = good.run(&["--save-baseline", "baseline.json"]);
    assert_eq!(baseline.code, 0, "{baseline:#?}");
    let baseline_file = good.path("baseline.json");

    let worse = Suite::new()
        .demo_task("todo-triage", false)
        .demo_task("gmail-reply", true)
        .cassette(
            "todo-triage",
            vec![good_triage(), lazy_triage(), good_triage()],
        );
    let outcome = worse.run(&[
        "--baseline",
        baseline_file.to_str().unwrap(),
        "--summary",
        "summary.md",
    ]);
    assert_eq!(outcome.code, 100, "{outcome:#?}");
    assert!(
        outcome.stdout.contains(
            "REGRESSION todo-triage: passed pass^3 before, fails now (mean 1.000 → 0.787)"
        ),
        "{}",
        outcome.stdout
    );
    let summary = std::fs::read_to_string(worse.path("summary.md")).unwrap();
    assert!(
        summary.contains(
            "| <code>todo-triage</code> | 1.000 | 0.787 | 1.000 | 1.000 | passed pass^3 before, fails now |"
        ),
        "{summary}"
    );

    // The same run without the regression passes against the same baseline.
    let same = good.run(&["--baseline", baseline_file.to_str().unwrap()]);
    assert_eq!(same.code, 0, "{same:#?}");
}

#[test]
fn the_step_summary_and_annotations_of_a_failing_run() {
    let suite = Suite::new()
        .demo_task("todo-triage", false)
        .demo_task("gmail-reply", true)
        .cassette(
            "todo-triage",
            vec![good_triage(), lazy_triage(), lazy_triage()],
        )
        .file("step-summary.md", "# earlier step\n");
    let mut command = crate::support::command_in(suite.folder.path(), &suite, &[]);
    let output = command
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_WORKSPACE", suite.folder.path())
        .env("GITHUB_STEP_SUMMARY", suite.path("step-summary.md"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(100));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let annotations: Vec<&str> = stdout
        .lines()
        .filter(|line| line.starts_with("::error "))
        .collect();
    insta::assert_snapshot!("annotations", annotations.join("\n"));
    let summary = std::fs::read_to_string(suite.path("step-summary.md")).unwrap();
    assert!(
        summary.starts_with("# earlier step\n"),
        "the summary is appended, not overwritten"
    );
    insta::assert_snapshot!("step_summary", summary);
}

/// The workflow `init` writes fans out over (cell, shard) and merges: its shard jobs' run step,
/// as written, on the suite `init` wrote, then its merge step over what they upload, give one
/// passing run; what the jobs upload is what the merge downloads.
#[test]
fn the_workflow_runs_each_cell_and_shard_then_merges_them() {
    let folder = tempfile::tempdir().unwrap();
    let binary = std::path::Path::new(env!("CARGO_BIN_EXE_cargo-clawtest"));
    assert_eq!(run_in(folder.path(), &["init"]).code, 0);
    let workflow: Value = serde_saphyr::from_str(
        &std::fs::read_to_string(folder.path().join(".github/workflows/clawtest.yml")).unwrap(),
    )
    .unwrap();
    let shards = &workflow["jobs"]["clawtest"];
    let merge = &workflow["jobs"]["merge"];
    assert_eq!(merge["needs"], "clawtest");
    assert_eq!(shards["strategy"]["fail-fast"], false);
    let count = shards["strategy"]["matrix"]["shard"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(
        shards["env"]["SHARDS"],
        count.to_string(),
        "SHARDS is the shard axis' length"
    );
    let step = |job: &Value, starts: &str| -> Value {
        job["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|step| {
                step["run"]
                    .as_str()
                    .is_some_and(|run| run.starts_with(starts))
                    || step["uses"]
                        .as_str()
                        .is_some_and(|uses| uses.starts_with(starts))
            })
            .unwrap_or_else(|| panic!("no step {starts}"))
            .clone()
    };
    let upload = step(shards, "actions/upload-artifact@");
    let download = step(merge, "actions/download-artifact@");
    let pattern = download["with"]["pattern"].as_str().unwrap();
    assert!(
        upload["with"]["name"]
            .as_str()
            .unwrap()
            .starts_with(pattern.trim_end_matches('*'))
    );
    let downloaded = download["with"]["path"].as_str().unwrap();

    // Each job's run step in the folder init wrote, its results placed where the merge's
    // download puts each artifact (a folder per artifact).
    let path = format!(
        "{}:{}",
        binary.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let shell = |script: &str, variables: &[(&str, String)]| {
        let mut command = std::process::Command::new("/bin/sh");
        command
            .args(["-c", script])
            .current_dir(folder.path())
            .env("PATH", &path)
            .env_remove("GITHUB_ACTIONS")
            .env_remove("GITHUB_STEP_SUMMARY");
        for (name, value) in variables {
            command.env(name, value);
        }
        let output = command.output().unwrap();
        (
            output.status.code(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ),
        )
    };
    let run = step(shards, "cargo clawtest --cell")["run"]
        .as_str()
        .unwrap()
        .to_string();
    let cells = shards["strategy"]["matrix"]["cell"].as_array().unwrap();
    let mut index = 0;
    for cell in cells {
        for shard in 1..=count {
            let (code, output) = shell(
                &run,
                &[
                    ("CELL", cell.as_str().unwrap().to_string()),
                    ("SHARD", shard.to_string()),
                    ("SHARDS", count.to_string()),
                ],
            );
            assert_eq!(code, Some(0), "{output}");
            let artifact = folder
                .path()
                .join(downloaded)
                .join(format!("clawtest-shard-{index}"));
            std::fs::create_dir_all(artifact.parent().unwrap()).unwrap();
            std::fs::rename(folder.path().join("target/clawtest"), &artifact).unwrap();
            index += 1;
        }
    }
    let merged = step(merge, "cargo clawtest merge")["run"]
        .as_str()
        .unwrap()
        .to_string();
    let (code, output) = shell(&merged, &[]);
    assert_eq!(code, Some(0), "{output}");
    let results: Value = serde_json::from_str(
        &std::fs::read_to_string(folder.path().join("target/clawtest/results.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(results["tasks_passed"], 2, "{output}");
    assert_eq!(results["shard"], Value::Null, "the merged run is whole");
}
