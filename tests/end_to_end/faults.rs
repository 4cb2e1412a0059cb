//! Faults on by default: a ClawEnvKit-format task with no `error_injection` gets about a
//! quarter of its calls faulted, the same in every run; an agent that stops retrying fails the
//! per-kind recovery gates, which name the kinds it gave up on; a run without faults shows no
//! robustness at all; a cassette recorded under other faults says so when it diverges.

use serde_json::Value;

use crate::support::{Suite, reference_agent};

/// The demo's four tasks and cassettes, its gates, run by the reference agent with `extra`
/// arguments.
fn demo_suite(arguments: &str) -> Suite {
    demo_suite_gated(
        arguments,
        "min_robustness = 0.9\n[gates.min_recovery]\nrate_limited = 0.9\nserver_error = 0.9\n",
    )
}

/// The demo's suite with `gates` as its `[gates]` section.
fn demo_suite_gated(arguments: &str, gates: &str) -> Suite {
    let agent = reference_agent().display().to_string();
    let config = format!(
        "tasks = [\"tasks/*.yaml\"]\n[harness]\ncommand = [{agent:?}{arguments}]\n\
         [gates]\n{gates}[faults]\nslow_ms = [100, 300]\n"
    );
    ["gmail-reply", "inbox-to-todo", "todo-flaky", "todo-triage"]
        .into_iter()
        .fold(Suite::new().config(&config), |suite, task| {
            suite.demo_task(task, true)
        })
}

fn results(suite: &Suite, file: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(suite.path(file)).expect("results written"))
        .expect("results are JSON")
}

#[test]
fn an_agent_that_stops_retrying_fails_the_recovery_gates_naming_the_kinds_it_gave_up_on() {
    let careful = demo_suite("");
    let outcome = careful.run(&["--json", "results.json"]);
    assert_eq!(outcome.code, 0, "{outcome:#?}");

    let careless = demo_suite(", \"--no-retries\"");
    let outcome = careless.run(&["--json", "results.json"]);
    assert_eq!(outcome.code, 100, "{outcome:#?}");
    // The same faults were injected (seeded), and now given up on: each kind's gate fails.
    for line in [
        "gate min_recovery.rate_limited: 0.000 (threshold 0.9) FAILED",
        "gate min_recovery.server_error: 0.500 (threshold 0.9) FAILED",
        "gate min_robustness: 0.375 (threshold 0.9) FAILED",
        "(suite)        429 rate limited         1          0        1       1     0.000",
        "(suite)        500 server error         4          2        2       2     0.500",
    ] {
        assert!(outcome.stdout.contains(line), "{line}\n{}", outcome.stdout);
    }
    let json = results(&careless, "results.json");
    assert_eq!(
        json["recovery"]["rate_limited"]["gave_up"], 1,
        "{}",
        json["recovery"]
    );
    assert_eq!(
        json["recovery"]["server_error"]["gave_up"], 2,
        "{}",
        json["recovery"]
    );
    // Its answers (the recorded ones, written for a run whose calls succeeded) say all went
    // well: every fault given up on was hidden from the user.
    assert_eq!(
        json["recovery"]["server_error"]["hidden"], 2,
        "{}",
        json["recovery"]
    );
    let gates: Vec<(&str, bool)> = json["gates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|gate| {
            (
                gate["name"].as_str().unwrap(),
                gate["passed"].as_bool().unwrap(),
            )
        })
        .collect();
    assert!(
        gates.contains(&("min_recovery.rate_limited", false)),
        "{gates:?}"
    );
    // The task whose 500 was given up on says which call it was.
    let gmail = json["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|verdict| verdict["task_id"] == "gmail-reply")
        .unwrap();
    assert_eq!(
        gmail["trials"][0]["unrecovered_faults"][0],
        "gmail.send_email"
    );
}

#[test]
fn a_recovery_gate_given_on_the_command_line_fails_the_run_like_the_configured_one() {
    let careless = demo_suite_gated(", \"--no-retries\"", "");
    let outcome = careless.run(&["--min-recovery", "server_error=0.9"]);
    assert_eq!(outcome.code, 100, "{outcome:#?}");
    assert!(
        outcome
            .stdout
            .contains("gate min_recovery.server_error: 0.500 (threshold 0.9) FAILED"),
        "{}",
        outcome.stdout
    );
    // Only the kind asked for is gated.
    assert!(
        !outcome.stdout.contains("gate min_recovery.rate_limited"),
        "{}",
        outcome.stdout
    );
    // A slow answer has nothing to recover from; a gate on it is refused, saying why.
    let outcome = careless.run(&["--min-recovery", "slow=0.5"]);
    assert_eq!(outcome.code, 2, "{outcome:#?}");
    assert!(
        outcome.stderr.contains("nothing to recover from"),
        "{}",
        outcome.stderr
    );
}

/// Every service call of every trial of a saved run: (trial file, fault or null).
fn faults_of(folder: &std::path::Path) -> Vec<(String, Value)> {
    let mut files: Vec<_> = std::fs::read_dir(folder)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    let mut faults = Vec::new();
    for file in files {
        let trajectory: Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        for entry in trajectory["audit"].as_array().unwrap() {
            faults.push((
                file.file_name().unwrap().to_string_lossy().into_owned(),
                entry["fault"].clone(),
            ));
        }
    }
    faults
}

#[test]
fn a_clawenvkit_task_without_error_injection_gets_a_quarter_of_its_calls_faulted_the_same_every_run()
 {
    // todo-triage is in ClawEnvKit's format, with no error_injection block; the suite says
    // nothing of faults but for short slow answers. The oracle plays it, retrying as it must.
    let suite = Suite::new()
        .config("tasks = [\"tasks/*.yaml\"]\n[faults]\nslow_ms = [1, 5]\n")
        .demo_task("todo-triage", false);
    let text = std::fs::read_to_string(suite.path("tasks/todo-triage.yaml")).unwrap();
    assert!(!text.contains("error_injection"));
    let mut runs = Vec::new();
    for saved in ["first", "second"] {
        let outcome = suite.run(&[
            "--oracle",
            "--trials",
            "40",
            "--jobs",
            if saved == "first" { "1" } else { "4" },
            "--trajectories",
            saved,
        ]);
        assert_eq!(outcome.code, 0, "{outcome:#?}");
        runs.push(faults_of(&suite.path(&format!("{saved}/todo-triage"))));
    }
    let faults = &runs[0];
    let faulted: Vec<&Value> = faults
        .iter()
        .map(|(_, fault)| fault)
        .filter(|fault| !fault.is_null())
        .collect();
    let share = faulted.len() as f64 / faults.len() as f64;
    eprintln!(
        "{} of {} calls faulted ({share:.3})",
        faulted.len(),
        faults.len()
    );
    assert!(
        (0.18..=0.32).contains(&share),
        "{} of {} calls faulted ({share:.3})",
        faulted.len(),
        faults.len()
    );
    for kind in ["rate_limited", "server_error", "slow"] {
        assert!(
            faulted.iter().any(|fault| *fault == kind),
            "no {kind} among {faulted:?}"
        );
    }
    // The same seed, whatever the job count: the same faults on the same calls.
    assert_eq!(runs[0], runs[1]);
}

#[test]
fn a_run_without_faults_shows_no_robustness_and_its_robustness_gate_fails() {
    let suite = Suite::new()
        .config("tasks = [\"tasks/*.yaml\"]\n[gates]\nmin_robustness = 0.5\n[faults]\nslow_ms = [1, 5]\n")
        .demo_task("todo-triage", false);
    let outcome = suite.run(&[
        "--oracle",
        "--error-rate",
        "0",
        "-v",
        "--json",
        "results.json",
    ]);
    assert_eq!(outcome.code, 100, "{outcome:#?}");
    for line in [
        "robustness n/a (no fault to recover from)",
        "gate min_robustness: n/a (threshold 0.5) FAILED",
    ] {
        assert!(outcome.stdout.contains(line), "{line}\n{}", outcome.stdout);
    }
    let json = results(&suite, "results.json");
    assert_eq!(json["mean_robustness"], Value::Null);
    assert_eq!(json["gates"][0]["actual"], Value::Null);
    // A task's own rate wins over --error-rate.
    let text = std::fs::read_to_string(suite.path("tasks/todo-triage.yaml")).unwrap()
        + "error_injection: {rate: 1, reason: \"every call fails: the oracle retries\"}\n";
    let suite = suite.task("todo-triage", &text);
    let outcome = suite.run(&["--oracle", "--error-rate", "0", "--json", "results.json"]);
    let json = results(&suite, "results.json");
    let trial = &json["verdicts"][0]["trials"][0];
    assert!(
        trial["faults_injected"].as_u64().unwrap() > 0,
        "{outcome:#?}"
    );
}

#[test]
fn a_replay_that_diverges_under_other_faults_names_both_settings() {
    let cassette = |header: &str| {
        format!(
            "version: 1\ntask_id: todo-triage\n{header}trials:\n  - interactions:\n      - request: {{body: {{model: gpt-4o-mini}}}}\n        response:\n          body: {{choices: [{{index: 0, finish_reason: tool_calls, message: {{role: assistant, content: null, tool_calls: [{{id: call_1, type: function, function: {{name: list_tasks, arguments: '{{}}'}}}}]}}}}]}}\n"
        )
    };
    let run = |header: &str| {
        let suite = Suite::new()
            .demo_task("todo-triage", false)
            .file("cassettes/todo-triage.yaml", &cassette(header));
        suite.run(&["--trials", "1"])
    };
    // The recording ends after one call: the agent's second is past its end.
    let recorded_elsewhere =
        run("faults: {rate: 0.5, mode: burst, mix: {rate_limited: 1, server_error: 0, slow: 0}}\n");
    assert_eq!(recorded_elsewhere.code, 102, "{recorded_elsewhere:#?}");
    assert!(
        recorded_elsewhere.stdout.contains(
            "the fault settings changed: the cassette was recorded with rate 0.5, burst, seed 0, mix 429 1 / 500 0 / slow 0 and this run injects rate 0.25, uniform, seed 0, mix 429 0.35 / 500 0.35 / slow 0.3"
        ),
        "{}",
        recorded_elsewhere.stdout
    );
    // Recorded under the same settings (or by hand, without any): the divergence alone.
    for header in ["", "faults: {rate: 0.25}\n"] {
        let outcome = run(header);
        assert_eq!(outcome.code, 102, "{outcome:#?}");
        assert!(
            !outcome.stdout.contains("fault settings"),
            "{}",
            outcome.stdout
        );
    }
}
