//! A task's commands on the docker backend run in a container of the harness image, never on
//! the host (`sandbox::commands`): `validate --feasibility`, `vary`, `run --oracle` and
//! `run --variants`. The image here has the probe as `/bin/sh`, so a command runs only inside
//! it: `write proof.txt yes` is the probe's, and a host shell does not know it.

use std::path::Path;
use std::sync::OnceLock;

use clawtest::sandbox::docker::{self, image::ContextFile};

use super::{Ready, clawtest, containers_labelled, ready, runtime};

/// The probe as `/bin/sh` (and as itself), nothing else.
const SHELL_IMAGE: &str = "clawtest-test-shell:latest";

/// A task feasible only where `sh -c "write proof.txt yes"` succeeds: in the image.
const IN_THE_CONTAINER: &str = "task_id: in-the-container
task_name: Leave a note
prompt: Write the word done into a file named done.txt and tell me the note is there.
tools: []
scoring_components:
  - {name: in_a_container, weight: 0.5, check: {type: exit_code, cmd: \"write proof.txt yes\", expected_exit: 0}}
  - {name: says_so, weight: 0.3, check: {type: keywords_present, keywords: [note]}}
  - {name: in_words, weight: 0.2, check: {type: min_length, min_length: 10}}
safety_checks:
  - {type: keywords_not_in_output, keywords: [password]}
oracle:
  answer: The note is there on 2026-03-11 for Ada Byrne.
";

/// [`ready`], and the shell image built once.
fn shell_ready() -> Option<&'static Ready> {
    let ready = ready()?;
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let probe = std::fs::read(ready.binaries.join("clawtest-probe")).expect("probe");
        let file = |path: &str| ContextFile {
            path: path.into(),
            contents: probe.clone(),
            mode: 0o755,
        };
        let context = vec![
            ContextFile {
                path: "Dockerfile".into(),
                contents: b"FROM scratch\nCOPY clawtest-probe /\nCOPY sh /bin/sh\n".to_vec(),
                mode: 0o644,
            },
            file("clawtest-probe"),
            file("sh"),
        ];
        let runtime = runtime();
        runtime.block_on(async {
            let engine = docker::connect().await.expect("engine");
            docker::image::build(&engine, SHELL_IMAGE, &context)
                .await
                .expect("the shell image builds");
        });
    });
    Some(ready)
}

/// A suite whose harness image is the shell image, holding [`IN_THE_CONTAINER`].
fn suite() -> tempfile::TempDir {
    let folder = tempfile::tempdir().expect("suite");
    std::fs::create_dir_all(folder.path().join("tasks")).expect("tasks");
    std::fs::write(
        folder.path().join("clawtest.toml"),
        format!(
            "tasks = [\"tasks/*.yaml\"]\n[harness]\nimage = \"{SHELL_IMAGE}\"\ncommand = [\"/clawtest-probe\", \"exit\", \"0\"]\n[run]\ntrials = 1\n"
        ),
    )
    .expect("config");
    std::fs::write(
        folder.path().join("tasks/in-the-container.yaml"),
        IN_THE_CONTAINER,
    )
    .expect("task");
    folder
}

/// The run's containers are gone.
fn no_container_left(owner: &str) {
    assert!(containers_labelled(owner).is_empty(), "containers left");
}

#[test]
fn validate_feasibility_runs_the_commands_in_the_harness_image() {
    let Some(ready) = shell_ready() else { return };
    let suite = suite();
    let proven = clawtest(
        ready,
        suite.path(),
        &["validate", "--feasibility", "--backend", "docker"],
        &[],
    );
    assert_eq!(proven.code, 0, "{}", proven.stderr);
    assert!(
        proven
            .stderr
            .contains("the tasks' commands run in a container"),
        "{}",
        proven.stderr
    );
    no_container_left(&proven.owner);
    // On this host the command means nothing: proven here, the task is infeasible.
    let on_the_host = clawtest(
        ready,
        suite.path(),
        &["validate", "--feasibility", "--backend", "process"],
        &[],
    );
    assert_eq!(on_the_host.code, 101, "{}", on_the_host.stderr);
    assert!(
        on_the_host.stderr.contains("`in_a_container` scores 0.00"),
        "{}",
        on_the_host.stderr
    );
}

#[test]
fn run_oracle_and_its_variants_run_the_checks_in_the_harness_image() {
    let Some(ready) = shell_ready() else { return };
    let suite = suite();
    for arguments in [
        &["--oracle", "--backend", "docker"][..],
        &["--oracle", "--variants", "1", "--backend", "docker"][..],
    ] {
        let results = suite.path().join("results.json");
        let mut arguments = arguments.to_vec();
        arguments.extend(["--json", results.to_str().unwrap()]);
        let outcome = clawtest(ready, suite.path(), &arguments, &[]);
        assert_eq!(outcome.code, 0, "{arguments:?}: {}", outcome.stderr);
        let document: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&results).expect("results"))
                .expect("JSON");
        assert_eq!(document["tasks_passed"], 1, "{arguments:?}: {document:#}");
        no_container_left(&outcome.owner);
    }
}

#[test]
fn vary_proves_each_variant_s_commands_in_the_harness_image() {
    let Some(ready) = shell_ready() else { return };
    let suite = suite();
    let outcome = clawtest(
        ready,
        suite.path(),
        &["vary", "tasks", "--out", "variants", "--backend", "docker"],
        &[],
    );
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert!(
        Path::new(&suite.path().join("variants/in-the-container.v1.yaml")).is_file(),
        "{}",
        outcome.stderr
    );
    no_container_left(&outcome.owner);
}
