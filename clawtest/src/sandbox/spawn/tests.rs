use std::time::Duration;

use super::*;
use crate::sandbox::capture::read_tail;
use crate::sandbox::contain::{Containment, Mechanism, cgroups_here};

/// What a child wrote to stdout, and how it ended.
async fn output(mut child: Child) -> (String, ExitStatus) {
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let read = read_tail(stdout, 1 << 20, std::future::pending());
    let (tail, _, status) = tokio::join!(
        read,
        read_tail(stderr, 1 << 20, std::future::pending()),
        child.wait()
    );
    (tail.finish("stdout").0, status.unwrap())
}

/// The child's own view of itself, from the program itself (no shell in between): its
/// cgroup, stdin, process group, file size limit, blocked and ignored signals, environment.
async fn own_view(containment: &Containment) -> (String, Made) {
    let folder = tempfile::tempdir().unwrap();
    let script = "cat /proc/self/cgroup; readlink /proc/self/fd/0; \
                  grep -E '^(SigBlk|SigIgn)' /proc/self/status; grep 'Max file size' /proc/self/limits; \
                  echo \"pgrp $(cut -d' ' -f5 /proc/self/stat) sh $$ $(cut -d' ' -f5 /proc/$$/stat)\"; \
                  pwd; echo environment:; env";
    let mut spawn = Spawn::new("sh", ["-c", script], folder.path());
    spawn
        .env("PATH", std::env::var_os("PATH").unwrap())
        .env("ONLY", "this")
        .cap_file_size(1 << 20);
    let child = containment.start(&mut spawn).unwrap();
    let made = child.made();
    let (stdout, status) = output(child).await;
    assert!(status.success(), "{status:?}: {stdout}");
    let folder = folder.path().canonicalize().unwrap();
    assert!(
        stdout.contains(&format!("\n{}\n", folder.display())),
        "{stdout}"
    );
    (stdout, made)
}

fn assert_the_steps_before_exec_were_taken(stdout: &str) {
    assert!(stdout.contains("\n/dev/null\n"), "{stdout}");
    assert!(stdout.contains("SigBlk:\t0000000000000000"), "{stdout}");
    // The Rust runtime ignores SIGPIPE; its children must not (bit 13).
    let ignored = stdout
        .lines()
        .find_map(|line| line.strip_prefix("SigIgn:\t"))
        .map(|mask| u64::from_str_radix(mask.trim(), 16).unwrap())
        .unwrap();
    assert_eq!(ignored & (1 << (libc::SIGPIPE - 1)), 0, "{stdout}");
    assert!(
        stdout.lines().any(|line| line.starts_with("Max file size")
            && line
                .split_whitespace()
                .filter(|word| *word == "1048576")
                .count()
                == 2),
        "{stdout}"
    );
    // The shell leads its own group (the `cut` it runs is in it too).
    let pgrp = stdout
        .lines()
        .find(|line| line.starts_with("pgrp "))
        .unwrap();
    let words: Vec<&str> = pgrp.split_whitespace().collect();
    assert_eq!(words[1], words[3], "{pgrp}");
    assert_eq!(words[3], words[4], "{pgrp}");
    // Exactly the environment given (the shell adds PWD, and SHLVL and `_` for some shells).
    let (_, environment) = stdout.split_once("environment:\n").unwrap();
    let environment: Vec<&str> = environment
        .lines()
        .filter(|line| {
            !["PWD=", "SHLVL=", "_="]
                .iter()
                .any(|shell| line.starts_with(shell))
        })
        .collect();
    assert_eq!(environment.len(), 2, "{environment:?}");
    assert!(environment.contains(&"ONLY=this"), "{environment:?}");
}

#[tokio::test]
async fn a_cloned_child_is_born_in_the_trials_cgroup_and_takes_every_step_before_its_program() {
    if !cgroups_here() {
        return;
    }
    for launcher in [Launcher::Clone, Launcher::Fork] {
        let containment = Containment::new(Mechanism::Cgroup).made_by(launcher);
        let group = containment.group_directories()[0].clone();
        let name = group.file_name().unwrap().to_string_lossy().to_string();
        let (stdout, made) = own_view(&containment).await;
        // The program itself (the shell, and `cat` it started) is in the trial's group.
        let line = stdout.lines().find(|line| line.starts_with("0::")).unwrap();
        assert!(line.ends_with(&name), "{line}");
        assert_the_steps_before_exec_were_taken(&stdout);
        let expected = if launcher == Launcher::Clone && clones() {
            Made::ClonedIntoGroup
        } else {
            Made::Forked
        };
        assert_eq!(made, expected, "{launcher:?}");
        containment.release().await;
    }
}

#[tokio::test]
async fn a_child_held_by_the_mark_takes_every_step_before_its_program_whichever_way_it_is_made() {
    for launcher in [Launcher::Clone, Launcher::Fork] {
        let containment = Containment::new(Mechanism::Mark).made_by(launcher);
        let (stdout, made) = own_view(&containment).await;
        assert!(stdout.contains("\nCLAWTEST_TRIAL_MARK="), "{stdout}");
        let stdout = stdout
            .lines()
            .filter(|line| !line.starts_with("CLAWTEST_TRIAL_MARK="))
            .collect::<Vec<_>>()
            .join("\n");
        assert_the_steps_before_exec_were_taken(&stdout);
        let expected = if launcher == Launcher::Clone && clones() {
            Made::Cloned
        } else {
            Made::Forked
        };
        assert_eq!(made, expected, "{launcher:?}");
        containment.release().await;
    }
}

#[tokio::test]
async fn this_machine_clones_its_children() {
    // On x86-64 Linux with clone3 allowed, children are not forked: the other tests then
    // exercise the clone path. `CLAWTEST_REQUIRE_CGROUP=1` (.ci/run) also requires it.
    let folder = tempfile::tempdir().unwrap();
    let containment = Containment::new(Mechanism::default());
    let child = containment
        .start(&mut Spawn::new(
            "/bin/true",
            Vec::<String>::new(),
            folder.path(),
        ))
        .unwrap();
    let made = child.made();
    let _ = output(child).await;
    assert_eq!(made == Made::Forked, !clones());
    if std::env::var("CLAWTEST_REQUIRE_CGROUP").as_deref() == Ok("1")
        && cfg!(target_arch = "x86_64")
    {
        assert!(
            clones(),
            "CLAWTEST_REQUIRE_CGROUP=1 but children were forked"
        );
    }
}

#[tokio::test]
async fn exit_codes_signals_and_missing_programs_are_reported_whichever_way_a_child_is_made() {
    let folder = tempfile::tempdir().unwrap();
    for launcher in [Launcher::Clone, Launcher::Fork] {
        let start = |program: &str, arguments: &[&str]| {
            let mut spawn = Spawn::new(program, arguments.to_vec(), folder.path());
            spawn.env("PATH", "/usr/bin:/bin");
            spawn.start(launcher, None)
        };
        let (_, status) = output(start("sh", &["-c", "exit 3"]).unwrap()).await;
        assert_eq!(status.code(), Some(3), "{launcher:?}");
        let (_, status) = output(start("sh", &["-c", "kill -SEGV $$"]).unwrap()).await;
        assert_eq!(status.signal(), Some(libc::SIGSEGV), "{launcher:?}");
        for missing in ["no-such-program-clawtest", "/no/such/program"] {
            let error = start(missing, &[]).unwrap_err();
            assert_eq!(
                error.kind(),
                std::io::ErrorKind::NotFound,
                "{launcher:?} {missing}"
            );
        }
        let mut spawn = Spawn::new(
            "/bin/true",
            Vec::<String>::new(),
            &folder.path().join("gone"),
        );
        assert!(
            spawn.env("PATH", "/bin").start(launcher, None).is_err(),
            "{launcher:?}"
        );
        let error = Spawn::new("/bin/true", ["a\0b"], folder.path())
            .start(launcher, None)
            .unwrap_err();
        assert_eq!(
            error.kind(),
            std::io::ErrorKind::InvalidInput,
            "{launcher:?}"
        );
    }
}

#[tokio::test]
async fn a_child_dropped_while_it_runs_is_killed() {
    let folder = tempfile::tempdir().unwrap();
    for launcher in [Launcher::Clone, Launcher::Fork] {
        let child = Spawn::new("/bin/sleep", ["600"], folder.path())
            .start(launcher, None)
            .unwrap();
        let pid = child.id();
        drop(child);
        let mut running = true;
        for _ in 0..200 {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            running = state
                .rsplit_once(')')
                .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'));
            if !running {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(!running, "{launcher:?}: the dropped child still runs");
    }
}

#[tokio::test]
async fn a_child_started_after_a_kill_runs_in_a_new_group_and_release_removes_them_all() {
    if !cgroups_here() {
        return;
    }
    let folder = tempfile::tempdir().unwrap();
    for launcher in [Launcher::Clone, Launcher::Fork] {
        let containment = Containment::new(Mechanism::Cgroup).made_by(launcher);
        for round in 0..3 {
            // A process left running, so that the kill below has something to kill (a group
            // already empty is not killed, and is born into again).
            let mut spawn = Spawn::new(
                "/bin/sh",
                [
                    "-c",
                    "/bin/cat /proc/self/cgroup; /bin/sleep 600 >/dev/null 2>&1 &",
                ],
                folder.path(),
            );
            let (stdout, status) = output(containment.start(&mut spawn).unwrap()).await;
            // Not killed at birth for being cloned into a group killed before.
            assert_eq!(
                status.code(),
                Some(0),
                "{launcher:?} round {round}: {status:?}"
            );
            let directories = containment.group_directories();
            let last = directories.last().unwrap().file_name().unwrap();
            let line = stdout.lines().find(|line| line.starts_with("0::")).unwrap();
            assert!(line.ends_with(&*last.to_string_lossy()), "{line}");
            containment.kill();
        }
        let directories = containment.group_directories();
        assert_eq!(directories.len(), 3, "{launcher:?}");
        containment.release().await;
        for directory in directories {
            assert!(!directory.exists(), "{} is left", directory.display());
        }
    }
}
