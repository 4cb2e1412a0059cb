//! Worker containers: trials one after another in one container (`[docker] reuse`, the
//! default), and what a trial can see of the one before it there: nothing (no process, no
//! file in `/tmp`, `$HOME`, `/dev/shm`, `/dev` or the workspace, no System V segment, no
//! variable), proven by a hostile probe that leaves all of them behind.

use std::time::Duration;

use clawtest::sandbox::docker::DockerSandbox;
use clawtest::sandbox::{CheckCommand, Finished, Sandbox};

use super::{containers_labelled, probe_launch, ready, runtime, sandbox};

/// Runs the probe with `arguments` in a folder the sandbox lends (a worker's), with
/// `CLAWTEST_PASSED=passed` and `checks`, and gives the folder back.
fn in_worker(
    runtime: &tokio::runtime::Runtime,
    sandbox: &DockerSandbox,
    arguments: &[&str],
    passed: &str,
    timeout: Duration,
    checks: Vec<CheckCommand>,
) -> Finished {
    let folder = sandbox.trial_folder(0).expect("a worker's folder");
    let sockets = folder.sockets().expect("a worker names its socket folder");
    let mut launch = probe_launch("worker-probe", arguments, sockets, timeout);
    launch.folder = folder.path().to_path_buf();
    launch.passthrough = vec![("CLAWTEST_PASSED".into(), passed.into())];
    launch.checks = checks;
    let finished = runtime
        .block_on(sandbox.run(launch, clawtest::interrupt::CancellationToken::new()))
        .expect("the trial ran");
    drop(folder);
    finished
}

/// The container's host name as `look` printed it.
fn host(looked: &str) -> &str {
    looked
        .lines()
        .find_map(|line| line.strip_prefix("host "))
        .unwrap_or_default()
}

#[test]
fn a_trial_in_a_worker_sees_nothing_the_trial_before_it_left() {
    let Some(ready) = ready() else { return };
    let runtime = runtime();
    let sandbox = sandbox(ready, &runtime);
    let minute = Duration::from_secs(60);
    let first = in_worker(&runtime, &sandbox, &["look"], "first", minute, Vec::new());
    assert!(first.stdout.contains("looked"), "{}", first.stdout);
    assert!(!first.stdout.contains("found"), "{}", first.stdout);
    // A check run after the harness, in the same container, sees what it left: the look
    // would find leftovers if any were there.
    let look = CheckCommand {
        command: vec!["/clawtest-probe".into(), "look".into()],
        timeout: minute,
    };
    let left = in_worker(&runtime, &sandbox, &["leave"], "second", minute, vec![look]);
    assert!(left.stdout.contains("left"), "{}", left.stdout);
    let seen = &left.checks[0].stdout;
    for leftover in [
        "found /tmp/left-behind",
        "found /dev/shm/left-behind",
        "found /home/clawtest/left-behind",
        "found ./left-behind",
        "linger",
        "found the shared memory segment",
    ] {
        assert!(seen.contains(leftover), "{leftover} not seen: {seen}");
    }
    let after = in_worker(&runtime, &sandbox, &["look"], "third", minute, Vec::new());
    assert!(after.stdout.contains("looked"), "{}", after.stdout);
    assert!(!after.stdout.contains("found"), "{}", after.stdout);
    assert!(after.stdout.contains("passed=third"), "{}", after.stdout);
    // The same container all along: its host name did not change.
    assert!(!host(&first.stdout).is_empty(), "{}", first.stdout);
    assert_eq!(host(&after.stdout), host(&first.stdout));
    runtime.block_on(sandbox.settle());
    assert!(containers_labelled(&format!("clawtest.run={}", sandbox.run_id())).is_empty());
}

#[test]
fn a_worker_s_harness_past_its_limit_is_killed_and_the_worker_serves_the_next_trial() {
    let Some(ready) = ready() else { return };
    let runtime = runtime();
    let sandbox = sandbox(ready, &runtime);
    let stopped = in_worker(
        &runtime,
        &sandbox,
        &["sleep"],
        "first",
        Duration::from_secs(1),
        Vec::new(),
    );
    assert!(stopped.exit.timed_out, "{:?}", stopped.exit);
    let after = in_worker(
        &runtime,
        &sandbox,
        &["look"],
        "second",
        Duration::from_secs(60),
        Vec::new(),
    );
    assert!(!after.stdout.contains("found"), "{}", after.stdout);
    assert!(after.stdout.contains("looked"), "{}", after.stdout);
    runtime.block_on(sandbox.settle());
    assert!(containers_labelled(&format!("clawtest.run={}", sandbox.run_id())).is_empty());
}

#[test]
fn a_worker_s_root_file_system_is_read_only() {
    let Some(ready) = ready() else { return };
    let runtime = runtime();
    let sandbox = sandbox(ready, &runtime);
    let refused = in_worker(
        &runtime,
        &sandbox,
        &["write", "/left-behind", "x"],
        "first",
        Duration::from_secs(60),
        Vec::new(),
    );
    assert_eq!(refused.exit.code, Some(1), "{}", refused.stderr);
    assert!(
        refused.stderr.contains("Read-only file system"),
        "{}",
        refused.stderr
    );
    runtime.block_on(sandbox.settle());
}

#[test]
fn a_worker_that_ended_while_idle_is_replaced_before_the_next_trial() {
    let Some(ready) = ready() else { return };
    let runtime = runtime();
    let sandbox = sandbox(ready, &runtime);
    let minute = Duration::from_secs(60);
    let first = in_worker(&runtime, &sandbox, &["look"], "first", minute, Vec::new());
    let label = format!("clawtest.run={}", sandbox.run_id());
    // Killed from outside while no trial runs in it (the engine then removes it).
    let workers = containers_labelled(&label);
    assert_eq!(workers.len(), 1, "one worker: {workers:?}");
    runtime.block_on(async {
        let engine = clawtest::sandbox::docker::connect().await.expect("engine");
        for id in workers {
            let options = bollard::query_parameters::KillContainerOptionsBuilder::default()
                .signal("SIGKILL")
                .build();
            engine
                .kill_container(&id, Some(options))
                .await
                .expect("killed");
        }
    });
    super::wait_for(
        || containers_labelled(&label).is_empty(),
        "the worker to go",
    );
    let next = in_worker(&runtime, &sandbox, &["look"], "second", minute, Vec::new());
    assert!(next.stdout.contains("passed=second"), "{}", next.stdout);
    assert_ne!(host(&next.stdout), host(&first.stdout), "a new container");
    runtime.block_on(sandbox.settle());
}
