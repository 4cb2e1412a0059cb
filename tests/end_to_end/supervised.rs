//! The model supervisor end to end, and its barrier: a task whose hidden evaluation spec (a
//! file beside the task) carries a canary in every section, run by a harness that sends the
//! model all it was given, with the supervisor's and the simulated user's answers replayed
//! from the cassette. The spec reaches the supervisor's model and nothing else: not the
//! harness (its environment, files, tool lists, model requests), not the simulated user's
//! model; under `guided`, only the guidance tags' public hints do.

use serde_json::{Value, json};

use crate::closed_loop::{COMMON, TELL_ALL, answer};
use crate::support::Suite;

/// Every hidden part of the evaluation spec, and of the supervisor's answer, carries one.
const CANARIES: [&str; 12] = [
    "CANARYPHILOSOPHY",
    "CANARYCONTRACT",
    "CANARYTRUTH",
    "CANARYCHECKPOINT",
    "CANARYCRITERION",
    "CANARYCAP",
    "CANARYCAPWORD",
    "CANARYOUTCOME",
    "CANARYREFERENCES",
    "CANARYINSTRUCTIONS",
    "CANARYRATIONALE",
    "CANARYARTIFACT",
];

const SPEC: &str = r#"philosophy: "CANARYPHILOSOPHY: judge the forecast."
contract: "CANARYCONTRACT: the assistant tells the user the weather."
ground_truth: {forecast: "CANARYTRUTH: rain in the afternoon"}
checkpoints:
  - {name: CANARYCHECKPOINT, weight: 1, criterion: "CANARYCRITERION: mentions the rain"}
score_caps:
  - name: CANARYCAP
    cap: 0.4
    when: "The answer never says CANARYCAPWORD."
    check: {type: keywords_present, keywords: [CANARYCAPWORD]}
continue_vs_fail:
  continue: ["The forecast is vague."]
  unrecoverable:
    - name: CANARYOUTCOME
      when: The assistant deleted a task.
      check: {type: audit_count_equals, service: todo, action: delete_task, count: 0}
references: "CANARYREFERENCES: the met office page"
instructions: "CANARYINSTRUCTIONS: be strict about rain."
"#;

const TASK: &str = r#"
task_id: supervised
task_name: What the harness and the simulated user may see of a model supervisor
prompt: "Tell me about the weather."
{COMMON}feedback:
  max_rounds: 2
  simulator: llm
  persona: "A busy user who writes short messages."
  supervisor: model
  evaluation: supervised.eval.yml
{BARRIER}"#;

/// The supervisor's answer for a round: continue, with a canary in each hidden field.
fn supervised() -> Value {
    answer(
        &json!({"verdict": "continue", "attempt_state": "incomplete", "recoverable": true,
            "score": 0.3, "confidence": "medium", "rationale": "CANARYRATIONALE: no rain",
            "missing_artifacts": ["CANARYARTIFACT"], "guidance_tags": ["follow_public_task"]})
        .to_string(),
    )
}

/// The requests of a run of the task behind `barrier` (a line of its `feedback` block, or
/// nothing for the default), by speaker.
struct Run {
    harness: Vec<String>,
    simulator: Vec<String>,
    supervisor: Vec<String>,
    rounds: Value,
}

fn run(barrier: &str) -> Run {
    let model = json!({"model": "gpt-4o-mini"});
    let cassette = json!({"version": 3, "task_id": "supervised", "trials": [{"interactions": [
        {"round": 1, "request": {"body": model}, "response": answer("Sunny all day.")},
        {"round": 1, "speaker": "supervisor", "request": {"body": model}, "response": supervised()},
        {"round": 2, "speaker": "simulated_user", "request": {"body": model}, "response": answer(r#"{"mode": "instruction", "tone": "firm", "candidate_feedback": "Is it going to rain?", "public_feedback_points": ["rain"]}"#)},
        {"round": 2, "request": {"body": model}, "response": answer("Still sunny.")},
        {"round": 2, "speaker": "supervisor", "request": {"body": model}, "response": supervised()},
    ]}]});
    let suite = Suite::new();
    let script = suite.path("tell_all.py");
    let task = TASK
        .replace("{COMMON}", COMMON)
        .replace("{BARRIER}", barrier);
    let suite = suite
        .config(&format!(
            "tasks = [\"tasks/*.yaml\"]\n[harness]\ncommand = [\"python3\", {script:?}]\n[run]\ntrials = 1\n"
        ))
        .file("tell_all.py", TELL_ALL)
        .task("supervised", &task)
        .file("tasks/supervised.eval.yml", SPEC)
        .file("cassettes/supervised.yaml", &cassette.to_string());
    let trajectories = suite.path("trajectories");
    let outcome = suite.run(&["--trajectories", trajectories.to_str().unwrap()]);
    // Neither round passes: the loop ends at its most rounds.
    assert_eq!(outcome.code, 100, "{outcome:#?}");
    let trajectory: Value = serde_json::from_str(
        &std::fs::read_to_string(trajectories.join("supervised/trial-0.json")).expect("saved"),
    )
    .unwrap();
    assert_eq!(trajectory["rounds"]["stop"], "max_rounds", "{trajectory:#}");
    let of = |speaker: &str| -> Vec<String> {
        trajectory["model_calls"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|call| call["speaker"].as_str().unwrap_or("harness") == speaker)
            .map(|call| call["request"].to_string())
            .collect()
    };
    Run {
        harness: of("harness"),
        simulator: of("simulated_user"),
        supervisor: of("supervisor"),
        rounds: trajectory["rounds"].clone(),
    }
}

/// What every run shows, whatever its barrier: the harness told the model all it was given,
/// the supervisor's model was given the spec and the round's evidence, its decision is the
/// rounds' (the cap binding), and no canary reached the harness or the simulated user.
fn assert_only_the_supervisor_sees_the_spec(run: &Run) {
    assert_eq!(
        (run.harness.len(), run.simulator.len(), run.supervisor.len()),
        (2, 1, 2)
    );
    let round_two = &run.harness[1];
    for seen in [
        "CLAWTEST_ROUND=2",
        "tools.json",
        "mcp.json",
        "Is it going to rain?",
    ] {
        assert!(round_two.contains(seen), "{seen} not in {round_two}");
    }
    let judged = &run.supervisor[1];
    for seen in [
        "CANARYTRUTH",
        "CANARYCRITERION",
        "CANARYCAP",
        "Still sunny.",
        "round 2 of at most 2",
    ] {
        assert!(judged.contains(seen), "{seen} not in {judged}");
    }
    let first = &run.rounds["rounds"][0];
    assert_eq!(first["score"], 0.3, "{first:#}");
    assert_eq!(first["attempt_state"], "incomplete");
    assert_eq!(first["supervisor"]["caps"], json!(["CANARYCAP"]));
    for request in run.harness.iter().chain(&run.simulator) {
        for canary in CANARIES {
            assert!(!request.contains(canary), "{canary} reached {request}");
        }
        assert!(
            !request.contains("supervised.eval.yml"),
            "the spec's file name reached {request}"
        );
    }
}

#[test]
fn under_the_strict_barrier_nothing_of_the_evaluation_spec_reaches_the_harness_or_the_simulated_user()
 {
    let run = run("");
    assert_only_the_supervisor_sees_the_spec(&run);
    let asked = &run.simulator[0];
    for seen in [
        "verdict: continue",
        "attempt_state: incomplete",
        "score: 0.30",
    ] {
        assert!(asked.contains(seen), "{seen} not in {asked}");
    }
    assert!(!asked.contains("Please stick to"), "{asked}");
}

#[test]
fn under_the_guided_barrier_only_the_guidance_tags_public_hints_reach_the_simulated_user() {
    let run = run("  barrier: guided\n");
    assert_only_the_supervisor_sees_the_spec(&run);
    let asked = &run.simulator[0];
    assert!(
        asked.contains("- Please stick to what I originally asked for."),
        "{asked}"
    );
    for request in &run.harness {
        assert!(
            !request.contains("Please stick to"),
            "the hint reached {request}"
        );
    }
}
