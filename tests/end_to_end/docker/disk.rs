//! The trial folder's disk cap (`[limits] workspace_disk_bytes`) on the docker backend: the
//! workspace is a bind mount of the trial's folder, measured on the host while the container
//! runs, and one file is bounded by the container's `fsize` ulimit.

use std::time::Duration;

use clawtest::sandbox::Sandbox;
use clawtest::sandbox::disk::Seen;

use super::{
    containers_labelled, probe_launch, probe_suite, probe_task, ready, results_on_docker, runtime,
    sandbox,
};

#[test]
fn a_container_filling_its_workspace_with_many_files_is_stopped_with_an_error_naming_the_cap() {
    let Some(ready) = ready() else { return };
    let task = probe_task("fills-disk", 600, &["filled", "filled"], &["nothing"]);
    let suite = probe_suite(
        &["/clawtest-probe", "fill", "12", "200000"],
        "[limits]\nworkspace_disk_bytes = 1048576",
        1,
        "fills-disk",
        &task,
    );
    let (outcome, document) = results_on_docker(ready, suite.path());
    let trial = &document["verdicts"][0]["trials"][0];
    assert_eq!(trial["status"], "error", "{}\n{trial}", outcome.stderr);
    assert_ne!(trial["harness_exit"], "killed at the time limit", "{trial}");
    let message = trial["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("limits.workspace_disk_bytes = 1048576 (1.0 MiB)"),
        "{message}"
    );
    assert!(containers_labelled(&outcome.owner).is_empty());
}

#[test]
fn one_file_past_the_cap_is_refused_in_the_container() {
    let Some(ready) = ready() else { return };
    let runtime = runtime();
    let sandbox = sandbox(ready, &runtime);
    let sockets = tempfile::tempdir().expect("socket folder");
    let mut launch = probe_launch(
        "one-big-file",
        &["fill", "1", "3000000"],
        sockets.path(),
        Duration::from_secs(600),
    );
    launch.limits.workspace_disk_bytes = 1 << 20;
    let interrupt = clawtest::interrupt::CancellationToken::new();
    let finished = runtime
        .block_on(sandbox.run(launch, interrupt))
        .expect("trial ran");
    assert!(!finished.exit.timed_out, "{:?}", finished.exit);
    let full = finished.disk_full.expect("the disk cap was reached");
    assert_eq!(full.cap, 1 << 20);
    // The probe was ended by SIGXFSZ with its file at the cap, or stopped by the watch.
    assert!(
        matches!(full.seen, Seen::OneFile | Seen::Bytes(_)),
        "{full:?}"
    );
    let written = finished
        .workspace
        .get("fill-0")
        .map(|file| file.size)
        .unwrap_or_default();
    assert!(written <= 1 << 20, "the file grew past the cap: {written}");
    assert!(containers_labelled(&format!("clawtest.run={}", sandbox.run_id())).is_empty());
}
