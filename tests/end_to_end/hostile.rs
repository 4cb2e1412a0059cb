//! Hostile harnesses on the process backend (issue #15), through the real binary: a run in
//! which harnesses that escape their time limit, flood stdout, crash, exit non-zero or flood
//! the services run next to a normal task; and a run stopped by SIGTERM or SIGHUP as CI
//! cancels one. Each harness writes the ids of what it started into a pid file, so "nothing
//! left running" is checked by id, not by name.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::good_triage;
use crate::support::{Suite, junit, reference_agent};

/// One harness for the whole suite: it picks its behaviour by task id.
fn dispatching_harness() -> String {
    format!(
        r#"#!/bin/sh
case "$CLAWTEST_TASK_ID" in
  todo-triage) exec {agent:?} ;;
  escapes-limit)
    setsid sleep 600 >/dev/null 2>&1 &
    echo $! >> "$PID_FILE"
    # The escaped child keeps our stdout too: it must not hold the trial open.
    setsid sleep 600 &
    echo $! >> "$PID_FILE"
    exec sleep 600 ;;
  huge-stdout)
    head -c 3000000 /dev/zero | tr '\0' x
    echo
    echo "FINAL-ANSWER at the very end" ;;
  crashes)
    echo "the answer, FINAL-ANSWER, then a crash"
    echo "segfault coming" >&2
    kill -SEGV $$ ;;
  exits-three)
    echo "FINAL-ANSWER"
    echo "could not reach the model: connection refused" >&2
    exit 3 ;;
  floods-audit)
    url=${{CLAWTEST_SERVICES_URL#http://}}
    hostport=${{url%%/*}}
    prefix=/${{url#*/}}
    i=0
    while [ $i -lt 40 ]; do
      curl -s -o /dev/null -X POST -H 'content-type: application/json' -d '{{}}' "$CLAWTEST_SERVICES_URL/todo/tasks"
      i=$((i + 1))
    done
    echo "FINAL-ANSWER after $i calls to $hostport$prefix" ;;
esac
"#,
        agent = reference_agent().display().to_string()
    )
}

/// A task with the todo service whose one component looks for `FINAL-ANSWER`.
fn answer_task(task_id: &str, timeout_seconds: u32) -> String {
    format!(
        "task_id: {task_id}\ntask_name: Hostile {task_id}\nprompt: Answer.\nlimits:\n  timeout_seconds: {timeout_seconds}\n\
tools:\n  - {{name: list_tasks, service: todo, endpoint: /todo/tasks, method: POST, description: List the tasks}}\n\
scoring_components:\n- {{name: answered, weight: 0.6, check: {{type: keywords_present, keywords: [FINAL-ANSWER]}}}}\n\
  - {{name: no_password, weight: 0.2, check: {{type: keywords_absent, keywords: [password]}}}}\n\
  - {{name: no_secret, weight: 0.2, check: {{type: keywords_absent, keywords: [secret]}}}}\n\
safety_checks:\n  - {{type: keywords_not_in_output, keywords: [hunter2]}}\n"
    )
}

/// True once no process of `pids` is alive (a zombie counts as gone).
fn all_gone(pids: &[i32]) -> bool {
    pids.iter().all(|pid| {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            // The state follows the command in parentheses: `pid (comm) S …`.
            Ok(stat) => stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        }
    })
}

fn pids_in(file: &Path) -> Vec<i32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect()
}

/// Waits (bounded) until `condition` holds; panics naming `what` if it never does.
fn eventually(what: &str, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !condition() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The first trial of `task`'s verdict in JSON `results`.
fn first_trial(results: &Value, task: &str) -> Value {
    results["verdicts"]
        .as_array()
        .expect("verdicts")
        .iter()
        .find(|verdict| verdict["task_id"] == task)
        .unwrap_or_else(|| panic!("no verdict for {task}"))["trials"][0]
        .clone()
}

fn hostile_suite() -> Suite {
    let suite = Suite::new();
    let script = suite.path("harness.sh");
    let mut suite = suite
        .file("harness.sh", &dispatching_harness())
        .config(&format!(
            "tasks = [\"tasks/*.yaml\"]\n[harness]\ncommand = [\"sh\", {:?}]\nenv = [\"PID_FILE\"]\n[limits]\noutput_bytes = 65536\naudit_entries = 20\n",
            script.display().to_string()
        ))
        .demo_task("todo-triage", false)
        .cassette("todo-triage", vec![good_triage()]);
    for (task_id, timeout) in [
        ("escapes-limit", 2),
        ("huge-stdout", 60),
        ("crashes", 60),
        ("exits-three", 60),
        ("floods-audit", 60),
    ] {
        suite = suite
            .task(task_id, &answer_task(task_id, timeout))
            .cassette(task_id, vec![json!([])]);
    }
    suite
}

#[test]
fn hostile_harnesses_fail_or_error_clearly_next_to_a_task_that_passes_and_leave_nothing_running() {
    let suite = hostile_suite();
    let pid_file = suite.path("pids");
    let mut command = crate::support::command_in(
        suite.folder.path(),
        &suite,
        &[
            "--trials",
            "1",
            "--jobs",
            "6",
            "--json",
            "results.json",
            "--junit",
            "junit.xml",
        ],
    );
    let output = command
        .env("PID_FILE", &pid_file)
        .output()
        .expect("cargo-clawtest runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(102),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(suite.path("results.json")).unwrap())
            .unwrap();
    let verdicts = results["verdicts"].as_array().unwrap();
    assert_eq!(verdicts.len(), 6, "every task has a verdict");
    let trial = |task: &str| first_trial(&results, task);

    assert_eq!(trial("todo-triage")["passed"], true, "{stdout}");

    let escaped = trial("escapes-limit");
    assert_eq!(
        escaped["harness_exit"], "killed at the time limit",
        "{escaped}"
    );
    assert_eq!(escaped["passed"], false);

    let huge = trial("huge-stdout");
    assert_eq!(
        huge["passed"], true,
        "the answer at the end was kept: {huge}"
    );
    assert!(
        huge["limits_reached"][0]
            .as_str()
            .unwrap()
            .contains("stdout: 3000030 bytes, only the last 65536 kept"),
        "{huge}"
    );
    assert!(stdout.contains("limit reached: stdout:"), "{stdout}");

    let crashed = trial("crashes");
    assert_eq!(crashed["status"], "error", "{crashed}");
    let message = crashed["message"].as_str().unwrap();
    assert!(message.contains("killed by signal 11"), "{message}");
    assert!(message.contains("segfault coming"), "{message}");

    let three = trial("exits-three");
    assert_eq!(three["status"], "error", "{three}");
    let message = three["message"].as_str().unwrap();
    assert!(message.contains("exited with code 3"), "{message}");
    assert!(message.contains("could not reach the model"), "{message}");

    let flood = trial("floods-audit");
    assert_eq!(flood["status"], "error", "{flood}");
    assert!(
        flood["message"]
            .as_str()
            .unwrap()
            .contains("past the audit's caps"),
        "{flood}"
    );
    assert!(
        flood["limits_reached"][0]
            .as_str()
            .unwrap()
            .contains("20 call(s) answered but not recorded past 20 entries"),
        "{flood}"
    );

    let report = junit(&suite.path("junit.xml"));
    assert_eq!(report.test_suites[0].test_cases.len(), 6);

    let pids = pids_in(&pid_file);
    assert_eq!(
        pids.len(),
        2,
        "the escaping harness wrote its children's ids"
    );
    eventually(
        "a process the escaping harness started is still running",
        || all_gone(&pids),
    );
}

/// Runs `cargo-clawtest ARGUMENTS` on `suite` with `PID_FILE` set, sends `signal` once the
/// pid file lists `started` ids, and returns the exit code and the ids.
fn signalled(suite: &Suite, arguments: &[&str], started: usize, signal: &str) -> (i32, Vec<i32>) {
    let pid_file = suite.path("pids");
    // The run's trial folders go in the suite's own temporary folder: what a run killed
    // before its destructors leaves is removed with the suite, not left in the machine's.
    let temporary = suite.path("tmp");
    std::fs::create_dir_all(&temporary).unwrap();
    let mut child = crate::support::command_in(suite.folder.path(), suite, arguments)
        .env("PID_FILE", &pid_file)
        .env("TMPDIR", &temporary)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("cargo-clawtest starts");
    eventually("what should write the pid file never started", || {
        pids_in(&pid_file).len() >= started
    });
    let sent = std::process::Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = child.wait().expect("cargo-clawtest exits");
    (status.code().unwrap_or(-1), pids_in(&pid_file))
}

/// A run whose two harnesses each write their id (and an escaped child's) and sleep, stopped
/// by `signal` once both run: the exit code, with the suite and the ids.
fn stopped_by(signal: &str) -> (i32, Suite, Vec<i32>) {
    let suite = Suite::new()
        .config("tasks = [\"tasks/*.yaml\"]\n[harness]\ncommand = [\"sh\", \"-c\", \"setsid sleep 600 & echo $! >> \\\"$PID_FILE\\\"; echo $$ >> \\\"$PID_FILE\\\"; exec sleep 600\"]\nenv = [\"PID_FILE\"]\n")
        .demo_task("todo-triage", true);
    let arguments = [
        "--trials",
        "2",
        "--jobs",
        "2",
        "--json",
        "results.json",
        "--junit",
        "junit.xml",
    ];
    let (code, pids) = signalled(&suite, &arguments, 4, signal);
    (code, suite, pids)
}

#[test]
fn sigterm_stops_the_run_like_ctrl_c_writes_partial_results_exits_143_and_kills_every_harness() {
    let (code, suite, pids) = stopped_by("-TERM");
    assert_eq!(code, 143);
    let results: Value = serde_json::from_str(
        &std::fs::read_to_string(suite.path("results.json")).expect("partial results written"),
    )
    .unwrap();
    assert_eq!(results["status"], "interrupted");
    assert_eq!(results["verdicts"][0]["trials"][0]["status"], "interrupted");
    let report = junit(&suite.path("junit.xml"));
    assert_eq!(report.test_suites[0].test_cases.len(), 1);
    eventually("a harness or its escaped child outlived the run", || {
        all_gone(&pids)
    });
}

#[test]
fn sighup_stops_the_run_too_and_exits_129() {
    let (code, suite, pids) = stopped_by("-HUP");
    assert_eq!(code, 129);
    assert!(suite.path("results.json").exists());
    eventually("a harness or its escaped child outlived the run", || {
        all_gone(&pids)
    });
}

#[test]
fn the_key_is_not_in_clawtests_environment_for_a_harness_to_read() {
    let leak = tempfile::tempdir().unwrap();
    let leaked = leak.path().join("leaked.txt");
    let suite = Suite::new()
        .config("tasks = [\"tasks/*.yaml\"]\n[harness]\ncommand = [\"sh\", \"-c\", \"cat /proc/$PPID/environ > \\\"$LEAK_FILE\\\" 2>&1; cat /proc/$PPID/cmdline > /dev/null; exit 0\"]\nenv = [\"LEAK_FILE\"]\n[llm.openai]\nbase_url = \"http://127.0.0.1:9\"\napi_key_env = \"CLAWTEST_TEST_SECRET_KEY\"\n")
        .task("leak", &answer_task("leak", 30))
        .cassette("leak", vec![json!([])]);
    let output = crate::support::command_in(suite.folder.path(), &suite, &["--trials", "1"])
        .env("LEAK_FILE", &leaked)
        .env("CLAWTEST_TEST_SECRET_KEY", "sk-do-not-leak-4242")
        .output()
        .expect("cargo-clawtest runs");
    assert_eq!(output.status.code(), Some(100), "{output:?}");
    let read = std::fs::read_to_string(&leaked).expect("the harness ran");
    assert!(!read.contains("sk-do-not-leak-4242"), "{read}");
}

#[test]
fn a_build_past_its_time_limit_stops_the_run_naming_the_setting() {
    let suite = Suite::new()
        .config(&format!(
            "tasks = [\"tasks/*.yaml\"]\n[harness]\ncommand = [{:?}]\nbuild = [\"sh\", \"-c\", \"exec sleep 600\"]\nbuild_timeout_seconds = 1\n",
            reference_agent().display().to_string()
        ))
        .demo_task("todo-triage", true);
    let outcome = suite.run(&["--trials", "1"]);
    assert_eq!(outcome.code, 102, "{outcome:#?}");
    // (The message may be wrapped.)
    assert!(
        outcome.stderr.contains("did not finish within 1 s")
            && outcome.stderr.contains("harness.build_timeout_seconds"),
        "{outcome:#?}"
    );
}

#[test]
fn ctrl_c_stops_the_harness_build_and_still_writes_results() {
    let suite = Suite::new()
        .config(&format!(
            "tasks = [\"tasks/*.yaml\"]\n[harness]\ncommand = [{:?}]\nbuild = [\"sh\", \"-c\", \"echo $$ >> \\\"$PID_FILE\\\"; exec sleep 600\"]\nenv = [\"PID_FILE\"]\n",
            reference_agent().display().to_string()
        ))
        .demo_task("todo-triage", true);
    let (code, pids) = signalled(
        &suite,
        &["--trials", "1", "--json", "results.json"],
        1,
        "-INT",
    );
    assert_eq!(code, 130);
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(suite.path("results.json")).unwrap())
            .unwrap();
    assert_eq!(results["status"], "interrupted");
    eventually("the build outlived the run", || all_gone(&pids));
}

#[test]
fn sigterm_stops_the_build_of_a_harness_built_into_its_image() {
    // With `dockerfile`, the build runs before the backend (and the image) is chosen.
    let suite = Suite::new()
        .config(&format!(
            "tasks = [\"tasks/*.yaml\"]\n[harness]\ncommand = [{:?}]\ndockerfile = \"Dockerfile\"\nbuild = [\"sh\", \"-c\", \"echo $$ >> \\\"$PID_FILE\\\"; exec sleep 600\"]\nenv = [\"PID_FILE\"]\n",
            reference_agent().display().to_string()
        ))
        .file("Dockerfile", "FROM scratch\n")
        .demo_task("todo-triage", true);
    let (code, pids) = signalled(&suite, &["--trials", "1"], 1, "-TERM");
    assert_eq!(code, 143);
    eventually("the build outlived the run", || all_gone(&pids));
}

#[test]
fn a_killed_run_takes_its_harnesses_with_it() {
    // SIGKILL: no handler runs; the harness's death signal (PR_SET_PDEATHSIG) ends it.
    let suite = Suite::new()
        .config("tasks = [\"tasks/*.yaml\"]\n[harness]\ncommand = [\"sh\", \"-c\", \"echo $$ >> \\\"$PID_FILE\\\"; exec sleep 600\"]\nenv = [\"PID_FILE\"]\n")
        .demo_task("todo-triage", true);
    let (_, pids) = signalled(&suite, &["--trials", "1"], 1, "-KILL");
    eventually("a harness outlived the clawtest that started it", || {
        all_gone(&pids)
    });
    // Killed before its destructors, the run leaves its trial's folder (`cargo clawtest
    // clean` removes it): in the temporary folder it was given, never elsewhere.
    let left: Vec<String> = std::fs::read_dir(suite.path("tmp"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        left.iter().any(|name| name.starts_with("clawtest-trial-")),
        "{left:?}"
    );
}

/// Harnesses that fill their workspace past a 1 MiB cap: one big file (its writer is ended by
/// the kernel, the harness goes on), many small files, and a harness that is itself the
/// writer. Each trial must be stopped long before its time limit and end as an error that
/// names the setting and its value, beside a task that passes.
#[test]
fn a_harness_filling_its_workspace_is_stopped_at_the_disk_cap_with_an_error_naming_it() {
    let harness = format!(
        r#"#!/bin/sh
case "$CLAWTEST_TASK_ID" in
  todo-triage) exec {agent:?} ;;
  one-big-file)
    head -c 3000000 /dev/zero > big.bin
    echo FINAL-ANSWER
    exec sleep 600 ;;
  many-files)
    i=0
    while [ $i -lt 12 ]; do head -c 200000 /dev/zero > part-$i; i=$((i + 1)); done
    echo FINAL-ANSWER
    exec sleep 600 ;;
  writer-itself)
    exec head -c 3000000 /dev/zero > big.bin ;;
esac
"#,
        agent = reference_agent().display().to_string()
    );
    let mut suite = Suite::new()
        .program("fill.sh", &harness)
        .config("tasks = [\"tasks/*.yaml\"]\n[harness]\ncommand = [\"./fill.sh\"]\n[limits]\nworkspace_disk_bytes = 1048576\n")
        .demo_task("todo-triage", false)
        .cassette("todo-triage", vec![good_triage()]);
    let filling = ["one-big-file", "many-files", "writer-itself"];
    for task_id in filling {
        suite = suite
            .task(task_id, &answer_task(task_id, 600))
            .cassette(task_id, vec![json!([])]);
    }
    let outcome = suite.run(&["--trials", "1", "--jobs", "4", "--json", "results.json"]);
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(suite.path("results.json")).unwrap())
            .unwrap_or_else(|error| panic!("{error}: {}{}", outcome.stdout, outcome.stderr));
    let trial = |task: &str| first_trial(&results, task);
    assert_eq!(trial("todo-triage")["passed"], true, "{}", outcome.stdout);
    for task_id in filling {
        let filled = trial(task_id);
        assert_eq!(filled["status"], "error", "{task_id}: {filled}");
        assert_ne!(
            filled["harness_exit"], "killed at the time limit",
            "{task_id}: {filled}"
        );
        let message = filled["message"].as_str().unwrap();
        assert!(
            message.contains("limits.workspace_disk_bytes = 1048576 (1.0 MiB)")
                && message.contains("raise `workspace_disk_bytes` under [limits]"),
            "{task_id}: {message}"
        );
        assert!(
            filled["limits_reached"]
                .as_array()
                .unwrap()
                .iter()
                .any(|note| note.as_str().unwrap().contains("workspace_disk_bytes")),
            "{task_id}: {filled}"
        );
    }
    assert!(
        outcome.stdout.contains("workspace_disk_bytes"),
        "the report names the cap: {}",
        outcome.stdout
    );
}

/// Opens connections to `address` until `stop`, each sending part of a request head and no
/// more (no token, never finished), holding the newest 400: a slowloris flood.
fn flood(
    address: std::net::SocketAddr,
    stop: &std::sync::atomic::AtomicBool,
    opened: &std::sync::atomic::AtomicUsize,
) {
    use std::io::Write as _;
    use std::sync::atomic::Ordering;
    let mut held = std::collections::VecDeque::new();
    while !stop.load(Ordering::Relaxed) {
        if let Ok(mut connection) = std::net::TcpStream::connect(address) {
            let _ = connection.write_all(b"GET /todo/tasks HTTP/1.1\r\nHost: x\r\n");
            held.push_back(connection);
            if held.len() > 400 {
                held.pop_front();
            }
            opened.fetch_add(1, Ordering::Relaxed);
        }
        // Paced, so that the flood does not take the machine's CPU from the trial.
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Issue #28 item 12 end to end: a slowloris flood of another agent's connections against a
/// trial's services and gateway, started before its agent makes a call and kept up while it
/// runs, does not fail it. The harness says where its listeners are and waits for the flood
/// (300 connections on each) before it starts the reference agent.
#[test]
fn a_slowloris_flood_against_a_trial_s_listeners_does_not_fail_its_agent() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let harness = format!(
        r#"#!/bin/sh
printf '%s\n%s\n' "$CLAWTEST_SERVICES_URL" "$OPENAI_BASE_URL" > "$SYNC/urls.part"
mv "$SYNC/urls.part" "$SYNC/urls"
i=0
while [ ! -f "$SYNC/go" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done
exec {agent:?}
"#,
        agent = reference_agent().display().to_string()
    );
    let suite = Suite::new()
        .program("victim.sh", &harness)
        .config("tasks = [\"tasks/*.yaml\"]\n[harness]\ncommand = [\"./victim.sh\"]\nenv = [\"SYNC\"]\n")
        .demo_task("todo-triage", false)
        .cassette("todo-triage", vec![good_triage()]);
    let sync = suite.path("sync");
    std::fs::create_dir(&sync).unwrap();
    let run = crate::support::command_in(
        suite.folder.path(),
        &suite,
        &["--trials", "1", "--json", "results.json"],
    )
    .env("SYNC", &sync)
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .expect("cargo-clawtest starts");
    eventually("the harness never said where its listeners are", || {
        sync.join("urls").exists()
    });
    let addresses: Vec<std::net::SocketAddr> = std::fs::read_to_string(sync.join("urls"))
        .unwrap()
        .lines()
        .map(|url| {
            let rest = url.strip_prefix("http://").expect("a loopback URL");
            rest.split('/').next().unwrap().parse().expect("HOST:PORT")
        })
        .collect();
    assert_eq!(addresses.len(), 2, "{addresses:?}");
    let stop = AtomicBool::new(false);
    let opened: Vec<AtomicUsize> = addresses.iter().map(|_| AtomicUsize::new(0)).collect();
    let output = std::thread::scope(|scope| {
        for (address, opened) in addresses.iter().zip(&opened) {
            let stop = &stop;
            scope.spawn(move || flood(*address, stop, opened));
        }
        eventually("the flood never opened 300 connections a listener", || {
            opened
                .iter()
                .all(|count| count.load(Ordering::Relaxed) >= 300)
        });
        std::fs::write(sync.join("go"), "").unwrap();
        let output = run.wait_with_output().expect("cargo-clawtest runs");
        stop.store(true, Ordering::Relaxed);
        output
    });
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(suite.path("results.json")).unwrap())
            .unwrap();
    assert_eq!(
        results["verdicts"][0]["trials"][0]["passed"], true,
        "{stdout}"
    );
}
