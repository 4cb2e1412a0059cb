//! The docker backend, end to end: a FROM scratch image holding the static reference agent
//! and the static probe (built here through the library's own build path), the demo suite,
//! isolation (no network, no real key), time limits, interrupts, checks, and cleanup.
//!
//! Without a Docker engine these tests skip with a loud message; with
//! `CLAWTEST_REQUIRE_DOCKER=1` (set by `.ci/run`) they fail instead.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use clawtest::sandbox::docker::{self, DockerSandbox, ResourceLimits, image::ContextFile, shim};
use clawtest::sandbox::{CheckCommand, Endpoints, Launch, Sandbox};
use serde_json::Value;

use crate::support::repository;

mod commands;
mod disk;
mod image;
mod worker;

/// The test image: `/reference-agent` and `/clawtest-probe`, nothing else.
const IMAGE: &str = "clawtest-test-harness:latest";

struct Ready {
    /// Folder of the static binaries (the shim among them).
    binaries: PathBuf,
}

/// The engine and the test image, prepared once; `None` (after a loud message) when there
/// is no engine and Docker is not required.
fn ready() -> Option<&'static Ready> {
    static READY: OnceLock<Result<Ready, String>> = OnceLock::new();
    let prepared = READY.get_or_init(|| {
        let runtime = runtime();
        let engine = runtime
            .block_on(docker::connect())
            .map_err(|error| format!("no Docker engine: {error}"))?;
        let binaries = shim::build_static(&["clawtest-shim", "reference-agent"])
            .map_err(|error| format!("static build: {error}"))?;
        let file = |name: &str| -> Result<ContextFile, String> {
            Ok(ContextFile {
                path: name.into(),
                contents: std::fs::read(binaries.join(name))
                    .map_err(|error| format!("{name}: {error}"))?,
                mode: 0o755,
            })
        };
        let context = vec![
            ContextFile {
                path: "Dockerfile".into(),
                contents: b"FROM scratch\nCOPY reference-agent clawtest-probe /\n".to_vec(),
                mode: 0o644,
            },
            file("reference-agent")?,
            file("clawtest-probe")?,
        ];
        runtime
            .block_on(docker::image::build(&engine, IMAGE, &context))
            .map_err(|error| format!("building {IMAGE}: {error}"))?;
        Ok(Ready { binaries })
    });
    match prepared {
        Ok(ready) => Some(ready),
        Err(why) if std::env::var("CLAWTEST_REQUIRE_DOCKER").as_deref() == Ok("1") => {
            panic!("CLAWTEST_REQUIRE_DOCKER=1 but the docker tests cannot run: {why}")
        }
        Err(why) => {
            // Written to the stream itself: libtest captures eprintln!, and a skip must show.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "\n!!!!!!!! SKIPPED: docker backend test ({why}); set CLAWTEST_REQUIRE_DOCKER=1 to make this a failure !!!!!!!!\n"
            );
            None
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// Containers carrying `label` (e.g. `clawtest.run=…`), asked through the library. Tests ask
/// only for their own run's containers (its run id, or [`owned_by`] the process they started):
/// other runs on the same engine, other test runs among them, may have a task of the same id.
fn containers_labelled(label: &str) -> Vec<String> {
    runtime().block_on(async {
        let engine = docker::connect().await.expect("engine");
        docker::containers_labelled(&engine, label)
            .await
            .expect("containers listed")
    })
}

/// Whether a container carrying `label` is running (started, not only created).
fn a_container_running(label: &str) -> bool {
    runtime().block_on(async {
        let engine = docker::connect().await.expect("engine");
        for id in docker::containers_labelled(&engine, label)
            .await
            .expect("containers listed")
        {
            let state = engine
                .inspect_container(&id, None)
                .await
                .ok()
                .and_then(|inspected| inspected.state);
            if state.and_then(|state| state.running) == Some(true) {
                return true;
            }
        }
        false
    })
}

/// The label on every container that the clawtest process `process` of this host creates:
/// the containers of that one run and of no other.
fn owned_by(process: u32) -> String {
    format!("{}={}/{process}", docker::OWNER_LABEL, host_name())
}

/// Runs cargo-clawtest in `folder` with the prebuilt shim.
fn clawtest(ready: &Ready, folder: &Path, arguments: &[&str], env: &[(&str, &str)]) -> Outcome {
    let child = Command::new(env!("CARGO_BIN_EXE_cargo-clawtest"))
        .arg("clawtest")
        .args(arguments)
        .current_dir(folder)
        .env(shim::SHIM_VARIABLE, ready.binaries.join("clawtest-shim"))
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cargo-clawtest starts");
    let owner = owned_by(child.id());
    let output = child.wait_with_output().expect("cargo-clawtest runs");
    Outcome {
        owner,
        code: output.status.code().unwrap_or(-1),
        // Both streams, so that a failed assertion shows the whole report.
        stderr: format!(
            "{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    }
}

struct Outcome {
    /// [`owned_by`] the run's process: the label of its containers.
    owner: String,
    code: i32,
    stderr: String,
}

/// The demo suite's tasks and cassettes, copied, with a config for the test image.
fn demo_copy(extra_config: &str) -> tempfile::TempDir {
    example_copy("demo", extra_config, 3)
}

/// An example suite's tasks and cassettes, copied, with a config for the test image.
fn example_copy(example: &str, extra_config: &str, trials: u32) -> tempfile::TempDir {
    let folder = tempfile::tempdir().expect("temporary folder");
    let demo = repository().join("examples").join(example);
    // Cassettes may keep their images in `cassettes/blobs/`: one level of folders is copied.
    for sub in ["tasks", "cassettes", "cassettes/blobs"] {
        let Ok(entries) = std::fs::read_dir(demo.join(sub)) else {
            continue;
        };
        std::fs::create_dir_all(folder.path().join(sub)).expect("folder");
        for entry in entries {
            let entry = entry.expect("entry");
            if entry.file_type().expect("file type").is_file() {
                std::fs::copy(
                    entry.path(),
                    folder.path().join(sub).join(entry.file_name()),
                )
                .expect("copy");
            }
        }
    }
    let config = format!(
        "tasks = [\"tasks/**/*.yaml\"]\n[harness]\nimage = \"{IMAGE}\"\ncommand = [\"/reference-agent\"]\n{extra_config}\n[run]\ntrials = {trials}\npass_threshold = 0.75\n"
    );
    std::fs::write(folder.path().join("clawtest.toml"), config).expect("config");
    folder
}

/// Runs the suite in `folder` on docker; what it printed and its JSON results (`null` when
/// none were written).
fn results_on_docker(ready: &Ready, folder: &Path) -> (Outcome, Value) {
    let results = folder.join("results.json");
    let outcome = clawtest(
        ready,
        folder,
        &["--backend", "docker", "--json", results.to_str().unwrap()],
        &[],
    );
    let document = std::fs::read_to_string(&results)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    (outcome, document)
}

/// task id → mean score, from a JSON results file.
fn scores(path: &Path) -> BTreeMap<String, f64> {
    let document: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("results")).expect("JSON");
    document["verdicts"]
        .as_array()
        .expect("verdicts array")
        .iter()
        .map(|task| {
            (
                task["task_id"].as_str().expect("task id").to_string(),
                task["mean_score"].as_f64().expect("score"),
            )
        })
        .collect()
}

#[test]
fn the_closed_loop_example_passes_on_docker_round_after_round() {
    // The same follow-up protocol as on the process backend: a container per round on the
    // same workspace, the conversation file read by the reference agent.
    if let Some(ready) = ready() {
        passes_in_round_two(ready, "closed-loop", "");
    }
}

/// The file tasks of examples/files on docker: the reference agent in the container reads and
/// writes the bind-mounted workspace from the committed cassettes and every task passes, as
/// on the process backend; and `run --oracle` passes them on docker too.
#[test]
fn the_files_example_passes_on_docker_replayed_and_by_its_oracle() {
    let Some(ready) = ready() else { return };
    let suite = example_copy("files", "[faults]\nslow_ms = [100, 300]", 3);
    let (outcome, document) = results_on_docker(ready, suite.path());
    assert_eq!(outcome.code, 0, "docker run failed:\n{}", outcome.stderr);
    let passed: Vec<(&str, &str)> = document["verdicts"]
        .as_array()
        .expect("verdicts")
        .iter()
        .map(|verdict| {
            (
                verdict["task_id"].as_str().unwrap_or_default(),
                verdict["status"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        passed,
        [
            ("csv-report", "passed"),
            ("image-label", "passed"),
            ("pdf-invoice", "passed"),
            ("sqlite-query", "passed")
        ],
        "{}",
        outcome.stderr
    );
    let oracle = clawtest(
        ready,
        suite.path(),
        &["run", "--oracle", "--backend", "docker"],
        &[],
    );
    assert_eq!(oracle.code, 0, "{}", oracle.stderr);
}

#[test]
fn the_reference_agent_keeps_its_session_across_rounds_on_docker() {
    // One container for both rounds: round 2's request must carry round 1's tool result,
    // which the cassette of examples/session checks, and which only a kept session has.
    if let Some(ready) = ready() {
        passes_in_round_two(ready, "session", "follow_up = \"session\"");
    }
}

/// Runs `example` (its harness with `extra_config`) on docker, one trial, which must pass in
/// round 2 after a `continue` in round 1.
fn passes_in_round_two(ready: &Ready, example: &str, extra_config: &str) {
    let suite = example_copy(example, extra_config, 1);
    let (outcome, document) = results_on_docker(ready, suite.path());
    assert_eq!(outcome.code, 0, "docker run failed:\n{}", outcome.stderr);
    let rounds = &document["verdicts"][0]["trials"][0]["rounds"];
    assert_eq!(rounds["used"], 2, "{rounds:#}");
    assert_eq!(rounds["stop"], "passed");
    assert_eq!(rounds["rounds"][0]["verdict"], "continue");
}

#[test]
fn a_restarted_harness_finds_its_home_folder_again_on_docker() {
    // Each round is a new container; the home folder is the trial's, so round 2 reads back
    // what round 1 kept there (the code word, said only in round 1's prompt).
    let Some(ready) = ready() else { return };
    let task = probe_task("home-memory", 60, &["HERON", "code word"], &["noted"])
        .replace("prompt: probe\n", "prompt: \"The code word is HERON.\"\n")
        + "checkpoints:\n  - name: repeated_it\n    check: {type: keywords_present, keywords: [HERON]}\n    feedback: \"What was the code word?\"\nfeedback:\n  max_rounds: 2\n";
    let suite = probe_suite(
        &["/clawtest-probe", "remember", "memory.txt"],
        "",
        1,
        "home-memory",
        &task,
    );
    let (outcome, document) = results_on_docker(ready, suite.path());
    assert_eq!(outcome.code, 0, "docker run failed:\n{}", outcome.stderr);
    let rounds = &document["verdicts"][0]["trials"][0]["rounds"];
    assert_eq!(rounds["used"], 2, "{rounds:#}");
    assert_eq!(rounds["rounds"][0]["verdict"], "continue");
    assert_eq!(rounds["stop"], "passed");
}

#[test]
fn the_demo_suite_scores_the_same_on_docker_as_on_process() {
    let Some(ready) = ready() else { return };
    let suite = demo_copy("");
    let docker_results = suite.path().join("docker.json");
    let outcome = clawtest(
        ready,
        suite.path(),
        &[
            "--backend",
            "docker",
            "--jobs",
            "2",
            "--json",
            docker_results.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(outcome.code, 0, "docker run failed:\n{}", outcome.stderr);
    assert!(
        outcome.stderr.contains("backend: docker"),
        "{}",
        outcome.stderr
    );

    let process_results = suite.path().join("process.json");
    let demo = repository().join("examples/demo");
    let process = clawtest(
        ready,
        &demo,
        &[
            "--backend",
            "process",
            "--json",
            process_results.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(process.code, 0, "process run failed:\n{}", process.stderr);
    let on_docker = scores(&docker_results);
    assert_eq!(on_docker.len(), 4, "{on_docker:?}");
    assert_eq!(on_docker, scores(&process_results));
    assert!(containers_labelled(&outcome.owner).is_empty());
}

/// A launch of the probe with `arguments`, served on an empty socket folder.
fn probe_launch(task_id: &str, arguments: &[&str], sockets: &Path, timeout: Duration) -> Launch {
    let mut command = vec!["/clawtest-probe".to_string()];
    command.extend(arguments.iter().map(|word| word.to_string()));
    Launch {
        task_id: task_id.into(),
        trial: 1,
        command,
        prompt: "probe".into(),
        tools: "[]".into(),
        eval_tools: String::new(),
        skill: "# probe\n".into(),
        mcp_config: "{}".into(),
        setup: Default::default(),
        files: Vec::new(),
        // The trial's folder, removed with the socket folder.
        folder: sockets.join("trial"),
        endpoints: Endpoints::Sockets {
            folder: sockets.to_path_buf(),
        },
        passthrough: vec![("CLAWTEST_PASSED".into(), "by-name".into())],
        timeout,
        max_turns: 1,
        limits: Default::default(),
        checks: Vec::new(),
    }
}

fn sandbox(ready: &Ready, runtime: &tokio::runtime::Runtime) -> DockerSandbox {
    runtime.block_on(async {
        let engine = docker::connect().await.expect("engine");
        DockerSandbox::new(
            engine,
            IMAGE,
            ready.binaries.join("clawtest-shim"),
            ResourceLimits::default(),
        )
        .await
        .expect("sandbox")
    })
}

#[test]
fn a_harness_cannot_open_an_outside_connection_but_reaches_its_ports() {
    let Some(ready) = ready() else { return };
    let runtime = runtime();
    let sandbox = sandbox(ready, &runtime);
    let sockets = tempfile::tempdir().expect("socket folder");
    let interrupt = clawtest::interrupt::CancellationToken::new();
    // 192.0.2.1 is TEST-NET-1: an address, so no DNS is involved.
    let outside = runtime
        .block_on(sandbox.run(
            probe_launch(
                "isolation-outside",
                &["connect", "192.0.2.1:80"],
                sockets.path(),
                Duration::from_secs(30),
            ),
            interrupt.clone(),
        ))
        .expect("trial ran");
    assert_eq!(outside.exit.code, Some(1), "{}", outside.stdout);
    assert!(
        outside.stdout.contains("cannot connect"),
        "{}",
        outside.stdout
    );
    // The same probe does reach the sandbox contract's port, forwarded by the shim.
    let other_sockets = tempfile::tempdir().expect("socket folder");
    let inside = runtime
        .block_on(sandbox.run(
            probe_launch(
                "isolation-inside",
                &["connect", "127.0.0.1:9100"],
                other_sockets.path(),
                Duration::from_secs(30),
            ),
            interrupt,
        ))
        .expect("trial ran");
    assert_eq!(inside.exit.code, Some(0), "{}", inside.stdout);
    assert!(containers_labelled(&format!("clawtest.run={}", sandbox.run_id())).is_empty());
}

/// A valid task around the probe: three keyword checks on its output, a safety check, and
/// the time limit `timeout_seconds`.
fn probe_task(task_id: &str, timeout_seconds: u32, present: &[&str; 2], absent: &[&str]) -> String {
    let list = |words: &[&str]| {
        words
            .iter()
            .map(|word| format!("{word:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "task_id: {task_id}\ntask_name: Probe\nprompt: probe\nlimits:\n  timeout_seconds: {timeout_seconds}\n\
tools:\n  - {{name: list_tasks, service: todo, endpoint: /todo/tasks, method: POST, description: List the tasks}}\n\
scoring_components:\n\
  - {{name: first, weight: 0.4, check: {{type: keywords_present, keywords: [{}]}}}}\n\
  - {{name: second, weight: 0.3, check: {{type: keywords_present, keywords: [{}]}}}}\n\
  - {{name: absent, weight: 0.3, check: {{type: keywords_absent, keywords: [{}]}}}}\n\
safety_checks:\n  - {{type: tool_not_called, tool_name: list_tasks, reason: not needed}}\n",
        list(&present[..1]),
        list(&present[1..]),
        list(absent),
    )
}

/// A suite folder running `command` in the test image, with `task` and an empty cassette.
fn probe_suite(
    command: &[&str],
    extra_harness: &str,
    trials: u32,
    task_id: &str,
    task: &str,
) -> tempfile::TempDir {
    let image_line = format!("image = \"{IMAGE}\"");
    probe_suite_with(&image_line, command, extra_harness, trials, task_id, task)
}

/// [`probe_suite`] with `image_line` naming the image (or the Dockerfile).
fn probe_suite_with(
    image_line: &str,
    command: &[&str],
    extra_harness: &str,
    trials: u32,
    task_id: &str,
    task: &str,
) -> tempfile::TempDir {
    let suite = tempfile::tempdir().expect("suite");
    for folder in ["tasks", "cassettes"] {
        std::fs::create_dir_all(suite.path().join(folder)).expect("folder");
    }
    std::fs::write(
        suite.path().join("clawtest.toml"),
        format!(
            "tasks = [\"tasks/*.yaml\"]\n[harness]\n{image_line}\ncommand = {command:?}\n{extra_harness}\n[run]\ntrials = {trials}\n"
        ),
    )
    .expect("config");
    add_task(suite.path(), task_id, task, trials);
    suite
}

/// Adds `task` to the suite in `folder`, with an empty cassette of `trials` trials.
fn add_task(folder: &Path, task_id: &str, task: &str, trials: u32) {
    std::fs::write(folder.join(format!("tasks/{task_id}.yaml")), task).expect("task");
    let trials_json = vec!["{\"interactions\": []}"; trials as usize].join(", ");
    std::fs::write(
        folder.join(format!("cassettes/{task_id}.yaml")),
        format!("{{\"version\": 1, \"task_id\": \"{task_id}\", \"trials\": [{trials_json}]}}"),
    )
    .expect("cassette");
}

#[test]
fn the_environment_holds_no_real_key_and_only_named_variables() {
    let Some(ready) = ready() else { return };
    let task = probe_task(
        "env-probe",
        60,
        &[
            "OPENAI_API_KEY=clawtest-dummy-key",
            "CLAWTEST_PASSED=by-name",
        ],
        &["sk-real-secret", "HOST_ONLY"],
    );
    let suite = probe_suite(
        &["/clawtest-probe", "env"],
        "env = [\"CLAWTEST_PASSED\"]",
        1,
        "env-probe",
        &task,
    );
    let env = [
        ("OPENAI_API_KEY", "sk-real-secret"),
        ("HOST_ONLY", "1"),
        ("CLAWTEST_PASSED", "by-name"),
    ];
    assert_eq!(score_on_docker(ready, suite.path(), "env-probe", &env), 1.0);
}

/// Runs the suite in `folder` on docker (it must exit 0) and returns `task_id`'s mean score.
fn score_on_docker(ready: &Ready, folder: &Path, task_id: &str, env: &[(&str, &str)]) -> f64 {
    let results = folder.join("results.json");
    let arguments = [
        "--backend",
        "docker",
        "-v",
        "--json",
        results.to_str().unwrap(),
    ];
    let outcome = clawtest(ready, folder, &arguments, env);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    scores(&results)[task_id]
}

#[test]
fn a_harness_past_its_limit_is_killed_and_its_container_removed() {
    let Some(ready) = ready() else { return };
    let runtime = runtime();
    let sandbox = sandbox(ready, &runtime);
    let sockets = tempfile::tempdir().expect("socket folder");
    let interrupt = clawtest::interrupt::CancellationToken::new();
    let finished = runtime
        .block_on(sandbox.run(
            probe_launch(
                "timeout-probe",
                &["sleep"],
                sockets.path(),
                Duration::from_secs(1),
            ),
            interrupt,
        ))
        .expect("trial ran");
    assert!(finished.exit.timed_out, "{:?}", finished.exit);
    assert_eq!(finished.exit.code, None);
    assert!(containers_labelled(&format!("clawtest.run={}", sandbox.run_id())).is_empty());
}

#[test]
fn auto_chooses_docker_when_an_image_is_named_and_says_so() {
    let Some(ready) = ready() else { return };
    let task = probe_task(
        "auto-probe",
        60,
        &[
            "CLAWTEST_SERVICES_URL=http://127.0.0.1:9100",
            "CLAWTEST_WORKSPACE=/workspace",
        ],
        &["nothing"],
    );
    let suite = probe_suite(&["/clawtest-probe", "env"], "", 1, "auto-probe", &task);
    let outcome = clawtest(ready, suite.path(), &[], &[]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert!(
        outcome.stderr.contains("backend: docker (auto"),
        "{}",
        outcome.stderr
    );
}

#[test]
fn a_harness_image_is_built_from_the_configured_dockerfile() {
    let Some(ready) = ready() else { return };
    let task = probe_task(
        "dockerfile-probe",
        60,
        &["BUILT_FROM=dockerfile", "CLAWTEST_TRIAL=0"],
        &["nothing"],
    );
    let suite = probe_suite_with(
        "dockerfile = \"image/Dockerfile\"",
        &["/clawtest-probe", "env"],
        "",
        1,
        "dockerfile-probe",
        &task,
    );
    let context = suite.path().join("image");
    std::fs::create_dir_all(&context).expect("context folder");
    std::fs::copy(
        ready.binaries.join("clawtest-probe"),
        context.join("clawtest-probe"),
    )
    .expect("probe");
    std::fs::write(
        context.join("Dockerfile"),
        "FROM scratch\nCOPY clawtest-probe /\nENV BUILT_FROM=dockerfile\n",
    )
    .expect("Dockerfile");
    let tag = docker::image::tag_for(&context.join("Dockerfile"));
    // Built, then left as it is, then built again once its Dockerfile changed.
    for (added, said) in [
        ("", "(built)"),
        ("", "(unchanged since built)"),
        ("ENV EDITED=yes\n", "(built)"),
    ] {
        let mut dockerfile =
            std::fs::read_to_string(context.join("Dockerfile")).expect("Dockerfile");
        dockerfile.push_str(added);
        std::fs::write(context.join("Dockerfile"), dockerfile).expect("Dockerfile written");
        let outcome = clawtest(ready, suite.path(), &["--backend", "docker"], &[]);
        assert_eq!(outcome.code, 0, "{}", outcome.stderr);
        assert!(
            outcome.stderr.contains(&format!("image {tag} {said}")),
            "{}",
            outcome.stderr
        );
    }
    // Each test folder makes a new tag: do not let them pile up in the engine.
    runtime().block_on(async {
        let engine = docker::connect().await.expect("engine");
        engine
            .remove_image(
                &tag,
                None::<bollard::query_parameters::RemoveImageOptions>,
                None,
            )
            .await
            .expect("image removed");
    });
}

#[test]
fn a_trial_past_its_limit_is_graded_as_timed_out() {
    let Some(ready) = ready() else { return };
    let task = probe_task("timeout-graded", 1, &["never", "never"], &["nothing"]);
    let suite = probe_suite(
        &["/clawtest-probe", "sleep"],
        "",
        1,
        "timeout-graded",
        &task,
    );
    let (outcome, document) = results_on_docker(ready, suite.path());
    assert_eq!(outcome.code, 100, "{}", outcome.stderr);
    let text = document.to_string();
    assert!(text.contains("killed at the time limit"), "{text}");
    assert!(containers_labelled(&outcome.owner).is_empty());
}

#[test]
fn a_crashed_run_leaves_no_container() {
    let Some(ready) = ready() else { return };
    let task = probe_task("crash-probe", 300, &["never", "never"], &["nothing"]);
    let suite = probe_suite(&["/clawtest-probe", "sleep"], "", 1, "crash-probe", &task);
    // The run's own temporary folder: what the crash leaves of its trial's folder goes with
    // the test, not into the machine's.
    let temporary = tempfile::tempdir().expect("temporary folder");
    let mut child = Command::new(env!("CARGO_BIN_EXE_cargo-clawtest"))
        .args(["clawtest", "--backend", "docker"])
        .current_dir(suite.path())
        .env(shim::SHIM_VARIABLE, ready.binaries.join("clawtest-shim"))
        .env("TMPDIR", temporary.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("cargo-clawtest starts");
    let label = &owned_by(child.id());
    // Running, not only created: a SIGKILL between the engine's create and start leaves a
    // created container that nothing will start or remove (`cargo clawtest clean` does); what
    // this test shows is the shim's side of a crash.
    wait_for(|| a_container_running(label), "a container to start");
    // SIGKILL: no handler, no destructor runs. The shim sees its control connection close,
    // ends the harness and itself, and the engine removes the container.
    child.kill().expect("killed");
    let _ = child.wait();
    wait_for(
        || containers_labelled(label).is_empty(),
        "the container to go",
    );
    // The trial's folder stays (`cargo clawtest clean` removes it), where the run was told.
    let left = std::fs::read_dir(temporary.path())
        .expect("temporary folder read")
        .filter(|entry| {
            entry.as_ref().is_ok_and(|entry| {
                entry
                    .file_name()
                    .to_string_lossy()
                    .starts_with("clawtest-trial-")
            })
        })
        .count();
    assert_eq!(left, 1);
}

/// A trial's folder on the host, whose `workspace` is bind-mounted into the container, is the
/// user's alone (mode 0700) while the harness runs: what it leaves there (a setuid binary, when
/// clawtest runs as root) is out of other local users' reach.
#[test]
fn a_trial_s_folder_on_the_host_is_the_user_s_alone_while_its_container_runs() {
    use std::os::unix::fs::PermissionsExt as _;
    let Some(ready) = ready() else { return };
    let task = probe_task("folder-mode", 300, &["never", "never"], &["nothing"]);
    let suite = probe_suite(&["/clawtest-probe", "sleep"], "", 1, "folder-mode", &task);
    // The run's own temporary folder: only its trial's folder is there to find.
    let temporary = tempfile::tempdir().expect("temporary folder");
    let mut child = Command::new(env!("CARGO_BIN_EXE_cargo-clawtest"))
        .args(["clawtest", "--backend", "docker"])
        .current_dir(suite.path())
        .env(shim::SHIM_VARIABLE, ready.binaries.join("clawtest-shim"))
        .env("TMPDIR", temporary.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("cargo-clawtest starts");
    let label = &owned_by(child.id());
    wait_for(
        || !containers_labelled(label).is_empty(),
        "a container to start",
    );
    let modes: Vec<(PathBuf, u32)> = std::fs::read_dir(temporary.path())
        .expect("temporary folder read")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.join("workspace").is_dir())
        .map(|path| {
            let mode = std::fs::metadata(&path).expect("mode").permissions().mode() & 0o777;
            (path, mode)
        })
        .collect();
    // SIGTERM: the run removes its container itself (a SIGKILL right after the container was
    // made can come before its shim holds the connection whose end would stop it).
    terminate(&mut child);
    assert_eq!(containers_labelled(label), Vec::<String>::new());
    assert_eq!(modes.len(), 1, "one trial folder: {modes:?}");
    assert_eq!(modes[0].1, 0o700, "{modes:?}");
}

/// Sends SIGTERM to a run (which then ends its trials and removes its containers itself)
/// and waits for it to end.
fn terminate(child: &mut std::process::Child) {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let _ = child.wait();
}

/// Polls `condition` until it holds; fails after two minutes.
fn wait_for(condition: impl Fn() -> bool, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !condition() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn checks_run_in_the_finished_container() {
    let Some(ready) = ready() else { return };
    let runtime = runtime();
    let sandbox = sandbox(ready, &runtime);
    let sockets = tempfile::tempdir().expect("socket folder");
    let interrupt = clawtest::interrupt::CancellationToken::new();
    let mut launch = probe_launch(
        "checks-probe",
        &["write", "answer.txt", "forty-two"],
        sockets.path(),
        Duration::from_secs(30),
    );
    let check = |words: &[&str], seconds| CheckCommand {
        command: words.iter().map(|word| word.to_string()).collect(),
        timeout: Duration::from_secs(seconds),
    };
    launch.checks = vec![
        check(&["/clawtest-probe", "exit", "3"], 30),
        check(&["/clawtest-probe", "env"], 30),
        check(&["/clawtest-probe", "sleep"], 1),
        check(&["/no-such-program"], 30),
    ];
    let finished = runtime
        .block_on(sandbox.run(launch, interrupt))
        .expect("trial ran");
    assert_eq!(finished.exit.code, Some(0));
    assert!(
        finished.workspace.contains_key("answer.txt"),
        "{:?}",
        finished.workspace
    );
    assert_eq!(finished.checks.len(), 4);
    assert_eq!(finished.checks[0].exit_code, Some(3));
    assert_eq!(finished.checks[1].exit_code, Some(0));
    assert!(
        finished.checks[1]
            .stdout
            .contains("CLAWTEST_WORKSPACE=/workspace"),
        "{}",
        finished.checks[1].stdout
    );
    assert!(finished.checks[2].timed_out, "{:?}", finished.checks[2]);
    assert_ne!(finished.checks[3].exit_code, Some(0));
    assert!(containers_labelled(&format!("clawtest.run={}", sandbox.run_id())).is_empty());
}

#[test]
fn an_interrupted_run_leaves_no_container() {
    stopped_run_leaves_no_container("-INT", 130);
}

#[test]
fn a_run_stopped_by_sigterm_leaves_no_container_and_exits_143() {
    stopped_run_leaves_no_container("-TERM", 143);
}

/// A run of two sleeping probes, stopped by `signal` once a container runs: it exits with
/// `code` and no container of it is left.
fn stopped_run_leaves_no_container(signal: &str, code: i32) {
    let Some(ready) = ready() else { return };
    let task_id = format!("interrupt-probe{signal}");
    let task = probe_task(&task_id, 300, &["never", "never"], &["nothing"]);
    let suite = probe_suite(&["/clawtest-probe", "sleep"], "", 2, &task_id, &task);
    let mut child = Command::new(env!("CARGO_BIN_EXE_cargo-clawtest"))
        .args(["clawtest", "--backend", "docker", "--no-build"])
        .current_dir(suite.path())
        .env(shim::SHIM_VARIABLE, ready.binaries.join("clawtest-shim"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cargo-clawtest starts");
    let label = &owned_by(child.id());
    let deadline = Instant::now() + Duration::from_secs(120);
    while containers_labelled(label).is_empty() {
        assert!(Instant::now() < deadline, "no container ever started");
        assert!(
            child.try_wait().expect("poll").is_none(),
            "the run ended before any container started"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let status = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let output = child.wait_with_output().expect("run ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(code), "{stderr}");
    assert_eq!(containers_labelled(label), Vec::<String>::new(), "{stderr}");
}

#[test]
fn links_planted_in_the_container_are_not_followed_and_the_read_back_folder_is_read_only() {
    let Some(ready) = ready() else { return };
    let runtime = runtime();
    let sandbox = sandbox(ready, &runtime);
    let interrupt = clawtest::interrupt::CancellationToken::new();
    let sockets = tempfile::tempdir().expect("socket folder");
    // Before: the host read the link and put its own environment (the real key) in the output.
    let planted = runtime
        .block_on(sandbox.run(
            probe_launch(
                "link-output",
                &["link", "/proc/self/environ", "agent_output.txt"],
                sockets.path(),
                Duration::from_secs(30),
            ),
            interrupt.clone(),
        ))
        .expect("trial ran");
    assert_eq!(planted.exit.code, Some(0), "{}", planted.stdout);
    assert!(
        planted.stdout.contains("linked agent_output.txt"),
        "{}",
        planted.stdout
    );
    assert_eq!(planted.output_file, None);
    assert!(
        planted
            .limits_reached
            .iter()
            .any(|note| note.contains("only a regular file is read")),
        "{:?}",
        planted.limits_reached
    );
    assert!(!planted.workspace.contains_key("agent_output.txt"));
    // Before: harness.stdout in a writable mount could be replaced by a link to any host file.
    let other_sockets = tempfile::tempdir().expect("socket folder");
    let replaced = runtime
        .block_on(sandbox.run(
            probe_launch(
                "plant-socket-folder",
                &["link", "/etc/hostname", "/clawtest/sockets/harness.stdout"],
                other_sockets.path(),
                Duration::from_secs(30),
            ),
            interrupt,
        ))
        .expect("trial ran");
    assert_eq!(replaced.exit.code, Some(1), "{}", replaced.stdout);
    assert!(
        replaced.stdout.contains("Read-only file system"),
        "{}",
        replaced.stdout
    );
}

#[test]
fn a_missing_image_is_an_infrastructure_error_that_says_what_to_do() {
    let Some(ready) = ready() else { return };
    let suite = demo_copy("");
    std::fs::write(
        suite.path().join("clawtest.toml"),
        "tasks = [\"tasks/**/*.yaml\"]\n[harness]\nimage = \"clawtest-no-such-image:none\"\ncommand = [\"/agent\"]\n",
    )
    .expect("config");
    let outcome = clawtest(ready, suite.path(), &["--backend", "docker"], &[]);
    assert_eq!(outcome.code, 102, "{}", outcome.stderr);
    assert!(
        outcome.stderr.contains("clawtest-no-such-image:none"),
        "{}",
        outcome.stderr
    );
    assert!(
        outcome.stderr.contains("--backend process"),
        "{}",
        outcome.stderr
    );
}

#[test]
fn clean_removes_containers_left_by_earlier_runs() {
    let Some(ready) = ready() else { return };
    // The run that left it behind: its own id, and a stand-in for its process, alive until the
    // container is seen, so that a `clean` of another run on this engine spares it until then.
    let run = format!("left-behind-by-test-{}", std::process::id());
    let label = &format!("{}={run}", docker::RUN_LABEL);
    let mut earlier_run = Command::new("sleep")
        .arg("600")
        .spawn()
        .expect("a stand-in for the earlier run's process");
    let owner = format!("{}/{}", host_name(), earlier_run.id());
    runtime().block_on(async {
        let engine = docker::connect().await.expect("engine");
        let body = bollard::models::ContainerCreateBody {
            image: Some(IMAGE.into()),
            cmd: Some(vec!["/clawtest-probe".into(), "sleep".into()]),
            labels: Some(std::collections::HashMap::from([
                (docker::RUN_LABEL.to_string(), run.clone()),
                (docker::OWNER_LABEL.to_string(), owner),
            ])),
            ..Default::default()
        };
        engine
            .create_container(None, body)
            .await
            .expect("container created");
    });
    assert_eq!(containers_labelled(label).len(), 1);
    earlier_run.kill().expect("the earlier run's process ends");
    earlier_run.wait().expect("reaped");
    // And the scratch folders of a run that was killed: marked, its process gone. A folder
    // without the marker is another program's, whatever its name.
    let temporary = tempfile::tempdir().expect("temporary folder");
    let orphan = temporary.path().join("clawtest-trial-orphan");
    let foreign = temporary.path().join("clawtest-trial-foreign");
    for folder in [&orphan, &foreign] {
        std::fs::create_dir_all(folder.join("workspace")).expect("folder");
    }
    std::fs::write(
        orphan.join(".clawtest-owner"),
        format!("{}/999999999", host_name()),
    )
    .expect("marker");
    let temporary_path = temporary.path().display().to_string();
    let outcome = clawtest(
        ready,
        &repository(),
        &["clean"],
        &[("TMPDIR", temporary_path.as_str())],
    );
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert!(containers_labelled(label).is_empty());
    assert!(
        outcome
            .stderr
            .contains("removed 1 clawtest temporary folder(s)"),
        "{}",
        outcome.stderr
    );
    assert!(!orphan.exists());
    assert!(foreign.exists());
}

/// This host's name, as the owner markers write it.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .expect("host name")
        .trim()
        .to_string()
}

/// The docker command of docs/sandbox.md: the demo's own `clawtest.docker.toml` builds the reference
/// agent static, copies it into its Dockerfile's folder and has clawtest build the image from
/// it, all before the backend starts; from a clean checkout (no binary there yet).
#[test]
fn the_demo_runs_on_docker_from_its_own_dockerfile_in_one_command() {
    let Some(ready) = ready() else { return };
    let demo = repository().join("examples/demo");
    let copied = demo.join("docker/reference-agent");
    let _ = std::fs::remove_file(&copied);
    let outcome = clawtest(ready, &demo, &["--config", "clawtest.docker.toml"], &[]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert!(copied.is_file(), "the build did not copy the agent");
    for expected in [
        "backend: docker (chosen; image clawtest-harness:",
        "4 task(s) × 3 trial(s) on docker: 4 passed, 0 failed",
        // Under the default faults, which the agent in the container recovers from.
        "gate min_robustness: 1.000 (threshold 0.9) held",
        "gate min_recovery.rate_limited: 1.000 (threshold 0.9) held",
    ] {
        assert!(outcome.stderr.contains(expected), "{}", outcome.stderr);
    }
}

/// The variables every backend sets besides the paths: plain wide output, the model and the
/// MCP endpoint as the container sees it.
#[test]
fn the_container_gets_plain_output_variables_the_model_and_the_mcp_url() {
    let Some(ready) = ready() else { return };
    let task = "task_id: env-setup\ntask_name: Probe\nprompt: probe\n\
tools:\n  - {name: list_tasks, service: todo, endpoint: /todo/tasks, method: POST, description: List the tasks}\n\
scoring_components:\n\
  - {name: plain, weight: 0.4, check: {type: keywords_present, keywords: [\"TERM=dumb\", \"NO_COLOR=1\", \"COLUMNS=200\"]}}\n\
  - {name: model, weight: 0.3, check: {type: keywords_present, keywords: [\"CLAWTEST_MODEL=m1\"]}}\n\
  - {name: mcp, weight: 0.3, check: {type: keywords_present, keywords: [\"CLAWTEST_MCP_URL=http://127.0.0.1:9100/mcp\"]}}\n\
safety_checks:\n  - {type: tool_not_called, tool_name: list_tasks, reason: not needed}\n";
    let suite = probe_suite(
        &["/clawtest-probe", "env"],
        "model = \"m1\"",
        1,
        "env-setup",
        task,
    );
    assert_eq!(score_on_docker(ready, suite.path(), "env-setup", &[]), 1.0);
}

/// `[harness] files` on docker: a workspace target is written, and so is a `~/` target (the
/// container's home is the trial's home folder, mounted, since it outlives a closed loop's
/// rounds), both filled in with the values as the container sees them.
#[test]
fn harness_files_go_to_the_workspace_and_the_home_folder_on_docker() {
    let Some(ready) = ready() else { return };
    let task = probe_task("files-probe", 60, &["written", "written"], &["missing"]);
    let template = "{\"mcp\": \"{mcp_url}\", \"workspace\": \"{workspace}\"}";
    let in_workspace = probe_suite(
        &["/clawtest-probe", "write", "agent.json.seen", "written"],
        "[harness.files]\n\"conf/agent.json\" = \"agent.json\"",
        1,
        "files-probe",
        &task,
    );
    std::fs::write(in_workspace.path().join("agent.json"), template).expect("template");
    let saved = in_workspace.path().join("saved");
    let outcome = clawtest(
        ready,
        in_workspace.path(),
        &[
            "--backend",
            "docker",
            "--trajectories",
            saved.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let trajectory: Value = std::fs::read_dir(saved.join("files-probe"))
        .expect("saved trajectories")
        .map(|entry| std::fs::read_to_string(entry.expect("entry").path()).expect("trajectory"))
        .find_map(|text| serde_json::from_str(&text).ok())
        .expect("a trajectory");
    // The SHA-256 of `{"mcp": "http://127.0.0.1:9100/mcp", "workspace": "/workspace"}`: the
    // template filled in with the values as the container sees them.
    assert_eq!(
        trajectory["workspace"]["conf/agent.json"]["sha256"],
        "86a5e7df0986c81e59126e3eb3285b71eb29ae154a343ffde1102deffc65e527",
        "{trajectory:#}"
    );

    // `remember` prints the home folder's file: the template as the container sees it.
    let home_task = probe_task(
        "files-probe",
        60,
        &[
            "\"mcp\": \"http://127.0.0.1:9100/mcp\"",
            "\"workspace\": \"/workspace\"",
        ],
        &["noted"],
    );
    let in_home = probe_suite(
        &["/clawtest-probe", "remember", ".agent.json"],
        "[harness.files]\n\"~/.agent.json\" = \"agent.json\"",
        1,
        "files-probe",
        &home_task,
    );
    std::fs::write(in_home.path().join("agent.json"), template).expect("template");
    let outcome = clawtest(ready, in_home.path(), &["--backend", "docker"], &[]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
}
