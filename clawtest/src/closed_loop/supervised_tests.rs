//! The loop with a model supervisor, against the scripted harness of `tests.rs`: the rounds'
//! decisions as the spec's caps and guidance make them, what the supervisor's model is shown,
//! and what of it the simulated user is not.

use std::path::Path;

use serde_json::json;

use super::LoopError;
use super::tests::{Scripted, run_loop};
use crate::services::Catalogue;
use crate::task::Task;
use crate::trajectory::rounds::{AttemptState, RoundVerdict, StopReason};

/// A task whose model supervisor judges by a hidden spec: the answer should say omega, and
/// it scores at most 0.5 until it thanks the user; a rude answer cannot be mended.
fn task(barrier: &str) -> Task {
    let text = format!(
        r#"
task_id: supervised-loop
task_name: A supervised loop
prompt: "Say alpha."
scoring_components:
  - {{name: one, weight: 0.4, check: {{type: keywords_present, keywords: [alpha]}}}}
  - {{name: two, weight: 0.3, check: {{type: min_length, min_length: 2}}}}
  - {{name: three, weight: 0.3, check: {{type: min_length, min_length: 3}}}}
safety_checks:
  - {{type: keywords_not_in_output, keywords: [forbidden]}}
feedback:
  max_rounds: 3
  simulator: llm
  persona: A terse user.
  barrier: {barrier}
  supervisor: model
  supervisor_model: judge-model
  evaluation:
    contract: The assistant says alpha, then the hidden word.
    ground_truth: "The hidden word is omega (HIDDEN-TRUTH)."
    checkpoints:
      - {{name: said_the_word, weight: 1, criterion: "The answer says omega (HIDDEN-CRITERION)."}}
    score_caps:
      - name: signed_off
        cap: 0.5
        when: "The answer does not thank the user (HIDDEN-CAP)."
        check: {{type: keywords_present, keywords: [thanks]}}
    continue_vs_fail:
      unrecoverable:
        - name: stayed_polite
          when: The answer is rude.
          check: {{type: keywords_absent, keywords: [rude]}}
"#
    );
    crate::task::parse(Path::new("loop.yaml"), text, &Catalogue::builtin())
        .unwrap_or_else(|invalid| panic!("{invalid}"))
}

fn said(verdict: &str, state: &str, recoverable: bool, score: f64) -> super::ModelReply {
    Ok(Some(
        json!({"verdict": verdict, "attempt_state": state, "recoverable": recoverable,
            "score": score, "confidence": "medium", "rationale": "HIDDEN-RATIONALE",
            "missing_artifacts": ["HIDDEN-ARTIFACT"], "guidance_tags": ["follow_public_task"]})
        .to_string(),
    ))
}

fn harness(answers: &[(&'static str, u64)], supervisor: Vec<super::ModelReply>) -> Scripted {
    let mut harness = Scripted::new(answers);
    harness.supervisor_answers = supervisor.into();
    harness
        .files
        .insert("notes.txt".into(), "NOTE-IN-THE-WORKSPACE".into());
    harness
}

#[tokio::test]
async fn three_rounds_move_the_attempt_state_a_cap_binds_and_the_last_passes() {
    let task = task("strict");
    let mut harness = harness(
        &[("alpha", 1), ("alpha omega", 1), ("alpha omega, thanks", 1)],
        vec![
            said("continue", "incomplete", true, 0.2),
            // The model passes it; the cap binds (no thanks): a continue at 0.5.
            said("pass", "complete_and_passed", false, 0.9),
            said("pass", "complete_and_passed", false, 0.95),
        ],
    );
    let outcome = run_loop(&task, &mut harness).await.unwrap();
    let rounds = outcome.trajectory.rounds.as_ref().unwrap();
    assert_eq!(rounds.stop, StopReason::Passed);
    let states: Vec<AttemptState> = rounds
        .rounds
        .iter()
        .map(|round| round.attempt_state)
        .collect();
    assert_eq!(
        states,
        [
            AttemptState::Incomplete,
            AttemptState::CompleteButFailed,
            AttemptState::CompleteAndPassed
        ]
    );
    let scores: Vec<f64> = rounds.rounds.iter().map(|round| round.score).collect();
    assert_eq!(scores, [0.2, 0.5, 0.95]);
    let second = rounds.rounds[1].supervisor.as_ref().unwrap();
    assert_eq!((second.verdict, second.score), (RoundVerdict::Pass, 0.9));
    assert_eq!(second.caps, ["signed_off"]);
    assert_eq!(
        (outcome.grade.final_score, outcome.grade.passed),
        (0.95, true)
    );

    // The supervisor's model was asked each round with the hidden spec and the evidence.
    assert_eq!(harness.supervisor_requests.len(), 3);
    let (_, second_request) = &harness.supervisor_requests[1];
    let asked = second_request.to_string();
    assert_eq!(second_request["model"], "judge-model");
    for shown in [
        "HIDDEN-TRUTH",
        "HIDDEN-CRITERION",
        "HIDDEN-CAP",
        "round 2 of at most 3",
        "alpha omega",
        "NOTE-IN-THE-WORKSPACE",
    ] {
        assert!(asked.contains(shown), "{shown} not in {asked}");
    }
    // The simulated user was given the four fields only: nothing of the spec or the answer.
    assert_eq!(harness.simulator_requests.len(), 2);
    let simulator = harness.simulator_requests[1].1.to_string();
    assert!(
        simulator.contains("attempt_state: complete_but_failed"),
        "{simulator}"
    );
    assert!(simulator.contains("score: 0.50"), "{simulator}");
    for hidden in [
        "HIDDEN",
        "signed_off",
        "said_the_word",
        "stayed_polite",
        "omega is",
        "Please stick to",
    ] {
        assert!(!simulator.contains(hidden), "{hidden} in {simulator}");
    }
}

#[tokio::test]
async fn an_unrecoverable_outcome_fails_the_first_round_and_asks_the_user_nothing() {
    let task = task("strict");
    let mut harness = harness(
        &[("alpha, rude", 1)],
        vec![said("continue", "incomplete", true, 0.4)],
    );
    let outcome = run_loop(&task, &mut harness).await.unwrap();
    let rounds = outcome.trajectory.rounds.as_ref().unwrap();
    assert_eq!(rounds.stop, StopReason::Unrecoverable);
    assert_eq!(rounds.rounds[0].verdict, RoundVerdict::Fail);
    assert_eq!(
        rounds.rounds[0].supervisor.as_ref().unwrap().unrecoverable,
        ["stayed_polite"]
    );
    assert!(harness.simulator_requests.is_empty());
}

#[tokio::test]
async fn under_the_guided_barrier_the_simulated_user_gets_the_tags_hints_only() {
    let task = task("guided");
    let mut harness = harness(
        &[("alpha", 1), ("alpha omega, thanks", 1)],
        vec![
            said("continue", "incomplete", true, 0.2),
            said("pass", "complete_and_passed", false, 1.0),
        ],
    );
    run_loop(&task, &mut harness).await.unwrap();
    let simulator = harness.simulator_requests[0].1.to_string();
    assert!(
        simulator.contains("- Please stick to what I originally asked for."),
        "{simulator}"
    );
    assert!(!simulator.contains("HIDDEN"), "{simulator}");
}

#[tokio::test]
async fn a_supervisor_answer_of_no_use_ends_the_trial_with_its_reason() {
    let task = task("strict");
    for (answer, why) in [
        (
            Ok(Some("Looks fine to me.".to_string())),
            "round 1: the supervisor's answer is not the JSON object asked for",
        ),
        (
            said("pass", "incomplete", false, 1.0),
            "round 1: the supervisor's answer contradicts itself",
        ),
        (Ok(None), "the supervisor's model answered nothing"),
        (
            Err("the supervisor answered HTTP 500".to_string()),
            "HTTP 500",
        ),
    ] {
        let mut harness = harness(&[("alpha", 1)], vec![answer]);
        match run_loop(&task, &mut harness).await {
            Err(LoopError::Message(message, trajectory)) => {
                assert!(message.contains(why), "{message}");
                assert!(trajectory.is_some(), "the round's trajectory is kept");
            }
            other => panic!("{other:?}"),
        }
    }
}
