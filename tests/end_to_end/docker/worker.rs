//! Worker containers: trials one after another in one container (`[docker] reuse`, the
//! default), and what a trial can see of the one before it there: nothing (no process, no
//! file in `/tmp`, `$HOME`, `/dev/shm`, `/dev` or the workspace, no System V segment, no
//! variable), proven by a hostile probe that leaves all of them behind.

use std::time::Duration;

use clawtest::sandbox::docker::DockerSandbox;
use clawtest::sandbox::{CheckCommand, Finished, Sandbox, TrialFolder};

use super::{
    containers_labelled, owned_by, probe_launch, probe_suite, probe_task, ready, runtime, sandbox,
};

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
    let finished = in_folder(
        runtime, sandbox, &folder, arguments, passed, timeout, checks,
    );
    drop(folder);
    finished
}

/// [`in_worker`] in a folder already lent, kept lent.
fn in_folder(
    runtime: &tokio::runtime::Runtime,
    sandbox: &DockerSandbox,
    folder: &TrialFolder,
    arguments: &[&str],
    passed: &str,
    timeout: Duration,
    checks: Vec<CheckCommand>,
) -> Finished {
    let sockets = folder.sockets().expect("a worker names its socket folder");
    let mut launch = probe_launch("worker-probe", arguments, sockets, timeout);
    launch.folder = folder.path().to_path_buf();
    launch.passthrough = vec![("CLAWTEST_PASSED".into(), passed.into())];
    launch.checks = checks;
    runtime
        .block_on(sandbox.run(launch, clawtest::interrupt::CancellationToken::new()))
        .expect("the trial ran")
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

#[test]
fn once_every_trial_has_started_a_worker_goes_when_its_trial_gives_it_back() {
    let Some(ready) = ready() else { return };
    let runtime = runtime();
    let sandbox = sandbox(ready, &runtime);
    let label = format!("clawtest.run={}", sandbox.run_id());
    let minute = Duration::from_secs(60);
    let look = |folder: &TrialFolder| {
        let finished = in_folder(
            &runtime,
            &sandbox,
            folder,
            &["look"],
            "x",
            minute,
            Vec::new(),
        );
        host(&finished.stdout).to_string()
    };
    // Folders are given back from within the run's runtime, as a trial's task gives them.
    let _inside = runtime.enter();
    let first = sandbox.trial_folder(0).expect("a worker's folder");
    let second = sandbox.trial_folder(0).expect("another worker's folder");
    let first_host = look(&first);
    look(&second);
    assert_eq!(containers_labelled(&label).len(), 2, "two workers");
    // Given back before the last trial started: kept for it.
    drop(first);
    sandbox.all_trials_started();
    let last = sandbox.trial_folder(0).expect("the idle worker's folder");
    assert_eq!(
        look(&last),
        first_host,
        "the last trial ran in the idle worker"
    );
    assert_eq!(
        containers_labelled(&label).len(),
        2,
        "no worker made for it"
    );
    // Given back after: nothing will ask for it, it goes while the last trial holds its own.
    drop(second);
    super::wait_for(
        || containers_labelled(&label).len() == 1,
        "the second worker to go",
    );
    drop(last);
    runtime.block_on(sandbox.settle());
    assert!(containers_labelled(&label).is_empty());
}

/// The run tells the backend when its last trial has started: with two jobs, the worker of the
/// trial that ends first goes while the other trial still runs, not at the run's end.
#[test]
fn a_run_removes_a_worker_once_no_trial_is_left_for_it() {
    use std::process::{Command, Stdio};
    let Some(ready) = ready() else { return };
    let never = &["never", "never"];
    let short = probe_task("short", 1, never, &["nothing"]);
    let suite = probe_suite(&["/clawtest-probe", "sleep"], "", 1, "short", &short);
    // The long trial lasts until the test interrupts the run (or, failing, its time limit).
    let long = probe_task("long", 60, never, &["nothing"]);
    super::add_task(suite.path(), "long", &long, 1);
    let mut child = Command::new(env!("CARGO_BIN_EXE_cargo-clawtest"))
        .args(["clawtest", "--backend", "docker", "--jobs", "2"])
        .current_dir(suite.path())
        .env(
            clawtest::sandbox::docker::shim::SHIM_VARIABLE,
            ready.binaries.join("clawtest-shim"),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("cargo-clawtest starts");
    let label = &owned_by(child.id());
    let mut seen = std::collections::BTreeSet::new();
    let gone_early = loop {
        let running = containers_labelled(label);
        seen.extend(running.iter().cloned());
        if seen.len() == 2 && running.len() == 1 {
            break true;
        }
        if child.try_wait().expect("the run's state").is_some() {
            break false;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    super::terminate(&mut child);
    assert!(
        gone_early,
        "both workers stayed until the run ended: {seen:?}"
    );
    assert_eq!(containers_labelled(label), Vec::<String>::new());
}
