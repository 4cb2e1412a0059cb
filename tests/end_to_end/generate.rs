//! `generate --request` end to end on the example (examples/generate): replayed from its
//! committed cassette, it writes the committed tasks byte for byte, reports each retry and the
//! dropped task, writes the same bytes again, and the tasks pass `run --oracle`; without a
//! request it is a usage error.

use std::path::Path;

use crate::support::{Suite, files, repository, run_in};

/// Copies `relative` of the example into `folder`.
fn copy(relative: &str, folder: &Path) {
    let source = repository().join("examples/generate").join(relative);
    let target = folder.join(relative);
    if source.is_dir() {
        std::fs::create_dir_all(&target).unwrap();
        for entry in std::fs::read_dir(&source).unwrap() {
            let name = entry.unwrap().file_name();
            copy(&format!("{relative}/{}", name.to_string_lossy()), folder);
        }
    } else {
        std::fs::copy(source, target).unwrap();
    }
}

#[test]
fn the_example_replays_to_its_committed_tasks_which_pass_the_oracle() {
    let folder = tempfile::tempdir().unwrap();
    for relative in ["clawtest.toml", "cassettes", "judge-cache"] {
        copy(relative, folder.path());
    }
    let outcome = run_in(folder.path(), &["generate"]);
    assert_eq!(outcome.code, 0, "{outcome:#?}");
    insta::assert_snapshot!(
        "generate_example_replayed",
        format!(
            "exit code {}\n--- stdout\n{}--- stderr\n{}",
            outcome.code, outcome.stdout, outcome.stderr
        )
    );
    let written = files(&folder.path().join("tasks/generated"));
    let committed = files(&repository().join("examples/generate/tasks/generated"));
    assert_eq!(written, committed);

    let again = run_in(folder.path(), &["generate"]);
    assert_eq!(again.code, 0, "{again:#?}");
    assert_eq!(files(&folder.path().join("tasks/generated")), committed);

    let oracle = run_in(folder.path(), &["run", "--oracle"]);
    assert_eq!(oracle.code, 0, "{oracle:#?}");
    assert!(oracle.stdout.contains("5 passed, 0 failed"), "{oracle:#?}");

    // The same request and cassette replay wherever --out points: nothing the model is asked
    // (the problems fed back after a rejected answer among it) names the output folder.
    let other = tempfile::tempdir().unwrap();
    for relative in ["clawtest.toml", "cassettes", "judge-cache"] {
        copy(relative, other.path());
    }
    let elsewhere = run_in(other.path(), &["generate", "--out", "elsewhere/deeper"]);
    assert_eq!(elsewhere.code, 0, "{elsewhere:#?}");
    assert_eq!(files(&other.path().join("elsewhere/deeper")), committed);
}

#[test]
fn generate_without_a_request_is_a_usage_error_and_a_miss_is_an_infrastructure_error() {
    let suite = Suite::new().config("tasks = [\"tasks/*.yaml\"]\n");
    let outcome = suite.run(&["generate"]);
    assert_eq!(outcome.code, 101, "{outcome:#?}");
    assert!(
        outcome
            .stderr
            .contains("`generate` needs `--request \"…\"`"),
        "{outcome:#?}"
    );

    let outcome = suite.run(&[
        "generate",
        "--request",
        "Triage my todo list",
        "--name",
        "triage",
    ]);
    assert_eq!(outcome.code, 102, "{outcome:#?}");
    assert!(
        outcome
            .stderr
            .contains("no cassette for task `generate-triage`"),
        "{outcome:#?}"
    );
    assert!(!suite.path("tasks/generated").exists());

    let outcome = suite.run(&["generate", "--request", "x", "--name", "../up"]);
    assert_eq!(outcome.code, 101, "{outcome:#?}");
}
