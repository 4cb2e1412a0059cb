//! The process backend's tests: launches, deadlines, escaped children, cgroups and their reuse.

use std::time::Duration;

use super::*;
use crate::sandbox::CheckCommand;
use crate::sandbox::contain::cgroups_here;

fn words(text: &[&str]) -> Vec<String> {
    text.iter().map(|word| word.to_string()).collect()
}

/// A launch of `command` (task `task_id`) in `folder`, served nowhere, with `checks` to
/// run after.
fn launch(
    folder: &tempfile::TempDir,
    task_id: &str,
    command: &[&str],
    timeout: Duration,
    checks: Vec<CheckCommand>,
) -> Launch {
    Launch {
        task_id: task_id.into(),
        trial: 0,
        command: words(command),
        prompt: "p".into(),
        tools: "[]".into(),
        eval_tools: String::new(),
        skill: String::new(),
        mcp_config: String::new(),
        setup: Default::default(),
        files: Vec::new(),
        folder: folder.path().to_path_buf(),
        endpoints: Endpoints::Loopback {
            services_url: "http://127.0.0.1:9".into(),
            gateway_url: "http://127.0.0.1:9".into(),
        },
        passthrough: Vec::new(),
        timeout,
        max_turns: 1,
        limits: crate::config::LimitsConfig::default(),
        checks,
    }
}

#[tokio::test]
async fn checks_run_after_the_harness_in_its_workspace() {
    let check = |command: &[&str], timeout| CheckCommand {
        command: words(command),
        timeout,
    };
    let trial = tempfile::tempdir().unwrap();
    let launch = launch(
        &trial,
        "checks",
        &["sh", "-c", "printf forty-two > answer.txt"],
        Duration::from_secs(30),
        vec![
            check(&["sh", "-c", "exit 3"], Duration::from_secs(30)),
            check(
                &["sh", "-c", "cat answer.txt; echo \" $CLAWTEST_TASK_ID\""],
                Duration::from_secs(30),
            ),
            check(&["sleep", "30"], Duration::from_millis(200)),
            check(&["/no/such/program"], Duration::from_secs(30)),
        ],
    );
    let interrupt = CancellationToken::new();
    let finished = ProcessSandbox::default()
        .run(launch, interrupt)
        .await
        .unwrap();
    assert_eq!(finished.exit.code, Some(0));
    assert_eq!(finished.checks.len(), 4);
    assert_eq!(finished.checks[0].exit_code, Some(3));
    assert_eq!(finished.checks[1].exit_code, Some(0));
    assert_eq!(finished.checks[1].stdout.trim(), "forty-two checks");
    assert!(finished.checks[2].timed_out);
    assert_eq!(finished.checks[2].exit_code, None);
    assert_eq!(finished.checks[3].exit_code, None);
    assert!(finished.checks[3].stderr.contains("/no/such/program"));
}

/// True once none of the processes listed in `file` runs (a zombie counts as gone).
fn gone(file: &Path) -> bool {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .all(
            |pid| match std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())) {
                Err(_) => true,
                Ok(stat) => stat
                    .rsplit_once(')')
                    .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
            },
        )
}

#[tokio::test]
async fn in_a_cgroup_one_deadline_holds_for_the_harness_its_escaped_children_and_its_checks() {
    if cgroups_here() {
        escaped_children_die_at_the_deadline(Mechanism::Cgroup, Launcher::Clone).await;
    }
}

#[tokio::test]
async fn forked_into_a_cgroup_one_deadline_holds_for_the_escaped_children_too() {
    if cgroups_here() {
        escaped_children_die_at_the_deadline(Mechanism::Cgroup, Launcher::Fork).await;
    }
}

#[tokio::test]
async fn by_the_mark_one_deadline_holds_for_the_harness_its_escaped_children_and_its_checks() {
    escaped_children_die_at_the_deadline(Mechanism::Mark, Launcher::Clone).await;
}

#[tokio::test]
async fn forked_and_marked_one_deadline_holds_for_the_escaped_children_too() {
    escaped_children_die_at_the_deadline(Mechanism::Mark, Launcher::Fork).await;
}

/// A harness and two checks each leave a `setsid` grandchild (`sleep 600`) holding their
/// stdout; the harness and one check outlive their time limits. All of them, escaped or
/// not, must be gone when the trial has ended, held by `mechanism`.
async fn escaped_children_die_at_the_deadline(mechanism: Mechanism, launcher: Launcher) {
    let folder = tempfile::tempdir().unwrap();
    let pids = folder.path().join("pids");
    let cgroups = folder.path().join("cgroups");
    // Each command leaves a `setsid` child holding its stdout: without one deadline for
    // child and pipes, the trial would last as long as that child (600 s).
    let escape =
        "setsid sleep 600 & echo $! >> \"$PID_FILE\"; cat /proc/$!/cgroup >> \"$CGROUP_FILE\";";
    let check = |command: String, timeout| CheckCommand {
        command: words(&["sh", "-c", &command]),
        timeout,
    };
    let started = format!("{escape} echo started; exec sleep 600");
    let trial = tempfile::tempdir().unwrap();
    let mut launch = launch(
        &trial,
        "escapes",
        &["sh", "-c", &started],
        Duration::from_millis(500),
        vec![
            check(format!("{escape} echo checked"), Duration::from_secs(600)),
            check(
                format!("{escape} exec sleep 600"),
                Duration::from_millis(300),
            ),
        ],
    );
    launch.passthrough = vec![
        ("PID_FILE".into(), pids.display().to_string()),
        ("CGROUP_FILE".into(), cgroups.display().to_string()),
    ];
    let interrupt = CancellationToken::new();
    let finished = ProcessSandbox::holding_by(mechanism, launcher)
        .run(launch, interrupt)
        .await
        .unwrap();
    assert!(finished.exit.timed_out, "{:?}", finished.exit);
    assert_eq!(finished.stdout.trim(), "started");
    assert_eq!(finished.checks[0].exit_code, Some(0));
    assert_eq!(finished.checks[0].stdout.trim(), "checked");
    assert!(finished.checks[1].timed_out);
    assert_eq!(std::fs::read_to_string(&pids).unwrap().lines().count(), 3);
    // Each escaped child was held the way asked: in a trial's group, or outside any.
    let cgroups = std::fs::read_to_string(&cgroups).unwrap();
    let held = cgroups
        .lines()
        .filter(|line| line.starts_with("0::") && line.contains("/clawtest-"))
        .count();
    let expected = if mechanism == Mechanism::Cgroup { 3 } else { 0 };
    assert_eq!(held, expected, "{cgroups}");
    for _ in 0..200 {
        if gone(&pids) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("an escaped child outlived its trial");
}

#[tokio::test]
async fn a_trial_leaves_no_cgroup_behind() {
    if !cgroups_here() {
        return;
    }
    let containment = Containment::new(Mechanism::Cgroup);
    let directory = containment.group_directories()[0].clone();
    run_held(&containment, "setsid sleep 600 & exit 0").await;
    let procs = std::fs::read_to_string(directory.join("cgroup.procs")).unwrap();
    assert_eq!(
        procs.lines().count(),
        1,
        "the escaped sleep is in the group: {procs}"
    );
    containment.release().await;
    assert!(!directory.exists(), "{} is left", directory.display());
}

/// Runs `script` through `containment` and waits for it.
async fn run_held(containment: &Containment, script: &str) {
    let here = std::env::current_dir().unwrap();
    let mut command = Spawn::new("/bin/sh", ["-c", script], &here);
    command.env("PATH", std::env::var_os("PATH").unwrap());
    containment
        .start(&mut command)
        .unwrap()
        .wait()
        .await
        .unwrap();
}

#[tokio::test]
async fn a_group_its_processes_left_serves_the_next_trial_and_a_killed_one_is_removed() {
    if !cgroups_here() {
        return;
    }
    let pool = Arc::new(GroupPool::default());
    let draw = || Containment::drawing_on(Mechanism::Cgroup, Some(Arc::clone(&pool)));
    // Every process ended by itself: the backend's kill after the harness finds the
    // group empty and leaves it unkilled, and the next trial is born in it.
    let first = draw();
    let group = first.group_directories()[0].clone();
    run_held(&first, "exit 0").await;
    first.kill();
    first.release().await;
    assert!(group.is_dir(), "{} was removed", group.display());
    let second = draw();
    assert_eq!(second.group_directories(), vec![group.clone()]);
    // A process that escaped is killed with its group, which is never born into again.
    run_held(&second, "setsid sleep 600 & exit 0").await;
    second.kill();
    let third = draw();
    assert_ne!(third.group_directories(), vec![group.clone()]);
    second.release().await;
    // Removed: a group with a process in it cannot be.
    assert!(!group.exists(), "{} is left", group.display());
    let kept = third.group_directories()[0].clone();
    run_held(&third, "exit 0").await;
    third.release().await;
    assert!(kept.is_dir());
    // The pool's groups go with it.
    drop(pool);
    assert!(!kept.exists(), "{} outlived the pool", kept.display());
}

#[tokio::test]
async fn a_signal_that_ends_the_harness_is_recorded() {
    let trial = tempfile::tempdir().unwrap();
    let launch = launch(
        &trial,
        "crash",
        &["sh", "-c", "echo answer; kill -SEGV $$"],
        Duration::from_secs(30),
        Vec::new(),
    );
    let interrupt = CancellationToken::new();
    let finished = ProcessSandbox::default()
        .run(launch, interrupt)
        .await
        .unwrap();
    assert_eq!(finished.exit.code, None);
    assert_eq!(
        finished.exit.signal,
        Some(rustix::process::Signal::SEGV.as_raw())
    );
    assert!(!finished.exit.timed_out);
    assert_eq!(finished.exit.describe(), "killed by signal 11");
}
