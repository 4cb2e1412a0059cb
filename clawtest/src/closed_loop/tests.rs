//! The loop against a scripted harness (each round's answer and time given), one test per
//! way it stops, and what each round hands on.

use std::collections::VecDeque;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::{Harness, LoopError, Setting, Step, run};
use crate::config::Provider;
use crate::judge::NoJudge;
use crate::llm::client::{Chat, Message};
use crate::sandbox::RoundSetup;
use crate::services::Catalogue;
use crate::task::Task;
use crate::trajectory::rounds::{AttemptState, LoopStatus, RoundVerdict, StopReason};
use crate::trajectory::{RobustnessRule, Trajectory};

/// A harness whose rounds answer from a list, each taking the given time; it remembers what
/// each round was given.
pub(super) struct Scripted {
    answers: VecDeque<(&'static str, Duration)>,
    pub(super) seen: Vec<(RoundSetup, String, Duration)>,
    /// The simulator's requests as they would go on the wire: (endpoint, body).
    pub(super) simulator_requests: Vec<(&'static str, Value)>,
    pub(super) simulator_answer: super::ModelReply,
    /// The model supervisor's answers, one per round, and its requests.
    pub(super) supervisor_answers: VecDeque<super::ModelReply>,
    pub(super) supervisor_requests: Vec<(&'static str, Value)>,
    budget_exhausted: bool,
    /// The workspace files' text, by path, as the trial would read them.
    pub(super) files: std::collections::BTreeMap<String, String>,
}

impl Scripted {
    pub(super) fn new(answers: &[(&'static str, u64)]) -> Scripted {
        Scripted {
            answers: answers
                .iter()
                .map(|(text, seconds)| (*text, Duration::from_secs(*seconds)))
                .collect(),
            seen: Vec::new(),
            simulator_requests: Vec::new(),
            simulator_answer: Ok(Some(
                r#"{"mode": "instruction", "tone": "neutral", "candidate_feedback": " Say the word, please. ", "public_feedback_points": ["the word"]}"#.into(),
            )),
            supervisor_answers: VecDeque::new(),
            supervisor_requests: Vec::new(),
            budget_exhausted: false,
            files: Default::default(),
        }
    }
}

impl Harness for Scripted {
    type Error = String;

    fn run_round(
        &mut self,
        round: RoundSetup,
        message: String,
        timeout: Duration,
    ) -> Step<'_, Result<Trajectory, String>> {
        self.seen.push((round, message, timeout));
        let next = self.answers.pop_front();
        let workspace = self
            .files
            .iter()
            .map(|(path, text)| {
                let file = crate::trajectory::WorkspaceFile {
                    size: text.len() as u64,
                    sha256: String::new(),
                };
                (path.clone(), file)
            })
            .collect();
        Box::pin(async move {
            let (output, duration) = next.ok_or("more rounds than scripted")?;
            let mut trajectory = Trajectory::without_harness(
                "loop",
                Vec::new(),
                output.into(),
                workspace,
                RobustnessRule::InjectedFaults,
            );
            trajectory.duration = duration.min(timeout);
            // A round that takes its whole time is stopped there, as the sandbox stops it.
            trajectory.exit.timed_out = duration >= timeout;
            Ok(trajectory)
        })
    }

    fn ask_model(
        &mut self,
        chat: Chat,
        conversation: Vec<Message>,
    ) -> Step<'_, Result<crate::closed_loop::ModelReply, String>> {
        let answer = match chat.speaker {
            crate::trajectory::Speaker::Supervisor => {
                self.supervisor_requests.push(chat.request(&conversation));
                self.supervisor_answers
                    .pop_front()
                    .unwrap_or(Err("more supervisor calls than scripted".into()))
            }
            _ => {
                self.simulator_requests.push(chat.request(&conversation));
                self.simulator_answer.clone()
            }
        };
        Box::pin(async move { Ok(answer) })
    }

    fn workspace_text(&self, path: &str) -> Option<String> {
        self.files.get(path).cloned()
    }

    fn budget_exhausted(&self) -> bool {
        self.budget_exhausted
    }

    fn begin_round(&self, _number: u32) {}
}

/// A closed-loop task: the output must hold `alpha` and (a hidden checkpoint) `omega`, and
/// never `forbidden`; `feedback` is the task's feedback block.
pub(super) fn task(feedback: &str) -> Task {
    let text = format!(
        r#"
task_id: loop
task_name: A loop
prompt: "Say alpha."
tools:
  - {{name: list_tasks, service: todo, endpoint: /todo/tasks, method: POST}}
scoring_components:
  - {{name: one, weight: 0.4, check: {{type: keywords_present, keywords: [alpha]}}}}
  - {{name: two, weight: 0.3, check: {{type: min_length, min_length: 2}}}}
  - {{name: three, weight: 0.3, check: {{type: min_length, min_length: 3}}}}
safety_checks:
  - {{type: keywords_not_in_output, keywords: [forbidden]}}
checkpoints:
  - name: said_omega
    check: {{type: keywords_present, keywords: [omega]}}
{feedback}
"#
    );
    crate::task::parse(Path::new("loop.yaml"), text, &Catalogue::builtin())
        .unwrap_or_else(|invalid| panic!("{invalid}"))
}

pub(super) async fn run_loop(
    task: &Task,
    harness: &mut Scripted,
) -> Result<super::Outcome, LoopError<String>> {
    run_loop_speaking(Provider::OpenAi, task, harness).await
}

/// The loop with its llm simulator speaking `provider`'s wire format.
async fn run_loop_speaking(
    provider: Provider,
    task: &Task,
    harness: &mut Scripted,
) -> Result<super::Outcome, LoopError<String>> {
    let setting = Setting {
        task,
        prompt: &task.prompt,
        judge: &NoJudge,
        threshold: 0.9,
        model: None,
        provider,
    };
    run(setting, harness).await
}

fn rounds(outcome: &super::Outcome) -> &crate::trajectory::rounds::Rounds {
    outcome.trajectory.rounds.as_ref().expect("rounds recorded")
}

#[tokio::test]
async fn a_pass_in_round_two_stops_there_and_is_the_trials_grade() {
    let task = task("feedback: {max_rounds: 3}");
    let mut harness = Scripted::new(&[("alpha", 1), ("alpha omega", 1), ("unused", 1)]);
    let outcome = run_loop(&task, &mut harness).await.unwrap();
    let rounds = rounds(&outcome);
    assert_eq!(rounds.stop, StopReason::Passed);
    assert_eq!((rounds.used(), rounds.best_round), (2, 2));
    assert_eq!(rounds.rounds[0].verdict, RoundVerdict::Continue);
    assert_eq!(rounds.rounds[0].missing, vec!["said_omega".to_string()]);
    assert!(outcome.grade.passed);
    assert_eq!(rounds.status(outcome.grade.passed), LoopStatus::Pass);
    // Round 2 was given the template's message and the conversation so far.
    let (first, second) = (&harness.seen[0], &harness.seen[1]);
    assert_eq!(second.1, "This is not done yet: said omega.");
    assert_eq!(first.0.conversation, "");
    assert_eq!(
        second.0.conversation,
        "{\"role\":\"user\",\"content\":\"Say alpha.\"}\n{\"role\":\"assistant\",\"content\":\"alpha\"}\n"
    );
}

#[tokio::test]
async fn a_safety_violation_is_unrecoverable_and_stops_at_once() {
    let task = task("feedback: {max_rounds: 3}");
    let mut harness = Scripted::new(&[("alpha forbidden", 1), ("alpha omega", 1)]);
    let outcome = run_loop(&task, &mut harness).await.unwrap();
    let rounds = rounds(&outcome);
    assert_eq!(rounds.stop, StopReason::Unrecoverable);
    assert_eq!(rounds.rounds[0].verdict, RoundVerdict::Fail);
    assert_eq!(rounds.used(), 1);
    assert_eq!(rounds.status(outcome.grade.passed), LoopStatus::Fail);
}

#[tokio::test]
async fn the_most_rounds_end_it_as_budget_exhausted_with_the_best_rounds_grade() {
    let task = task("feedback: {max_rounds: 2}");
    let mut harness = Scripted::new(&[("alpha", 1), ("nothing", 1)]);
    let outcome = run_loop(&task, &mut harness).await.unwrap();
    let rounds = rounds(&outcome);
    assert_eq!(rounds.stop, StopReason::MaxRounds);
    assert_eq!((rounds.used(), rounds.best_round), (2, 1));
    // The best round (1: alpha said) is the trial's grade, not the last.
    assert_eq!(outcome.grade.final_score, rounds.rounds[0].score);
    assert!(rounds.rounds[0].score > rounds.rounds[1].score);
    assert_eq!(
        rounds.status(outcome.grade.passed),
        LoopStatus::BudgetExhausted
    );
}

#[tokio::test]
async fn an_empty_follow_up_ends_it_as_a_fail() {
    // The fixed message is blank and the checkpoint has been met: nothing left to say,
    // though the score (alpha missing) is below the threshold.
    let task = task("feedback: {max_rounds: 3, messages: [\"  \"]}");
    let mut harness = Scripted::new(&[("omega", 1)]);
    let outcome = run_loop(&task, &mut harness).await.unwrap();
    let rounds = rounds(&outcome);
    assert_eq!(rounds.stop, StopReason::EmptyFeedback);
    assert_eq!(rounds.used(), 1);
    assert_eq!(rounds.status(outcome.grade.passed), LoopStatus::Fail);
}

#[tokio::test]
async fn the_total_time_limit_ends_it_as_a_global_timeout_and_shortens_the_last_round() {
    let task =
        task("feedback: {max_rounds: 3, round_timeout_seconds: 10, total_timeout_seconds: 15}");
    let mut harness = Scripted::new(&[("alpha", 10), ("alpha", 10), ("alpha omega", 1)]);
    let outcome = run_loop(&task, &mut harness).await.unwrap();
    let rounds = rounds(&outcome);
    assert_eq!(rounds.stop, StopReason::TotalTime);
    assert_eq!(rounds.used(), 2);
    // Round 2 had only what was left of the total: 5 of its 10 seconds.
    assert_eq!(harness.seen[0].2, Duration::from_secs(10));
    assert_eq!(harness.seen[1].2, Duration::from_secs(5));
    assert_eq!(
        rounds.status(outcome.grade.passed),
        LoopStatus::GlobalTimeout
    );
}

#[tokio::test]
async fn a_spent_cost_limit_starts_no_further_round() {
    let task = task("feedback: {max_rounds: 3}");
    let mut harness = Scripted::new(&[("alpha", 1), ("alpha omega", 1)]);
    harness.budget_exhausted = true;
    let outcome = run_loop(&task, &mut harness).await.unwrap();
    let rounds = rounds(&outcome);
    assert_eq!(rounds.stop, StopReason::CostBudget);
    assert_eq!(rounds.used(), 1);
    assert_eq!(
        rounds.status(outcome.grade.passed),
        LoopStatus::BudgetExhausted
    );
}

#[tokio::test]
async fn the_strict_llm_simulator_is_given_the_four_fields_only_and_its_answer_is_the_next_prompt()
{
    // Strict is the llm simulator's default: the checkpoint's name and feedback stay hidden.
    let task = task(
        "    feedback: \"Please say the last letter.\"\nfeedback: {max_rounds: 2, simulator: llm, persona: \"A terse user.\", model: sim-model}",
    );
    let mut harness = Scripted::new(&[("alpha", 1), ("alpha omega", 1)]);
    let outcome = run_loop(&task, &mut harness).await.unwrap();
    assert_eq!(rounds(&outcome).stop, StopReason::Passed);
    assert_eq!(harness.seen[1].1, "Say the word, please.");
    // The structured turn the message came from is round 2's record.
    let turn = rounds(&outcome).rounds[1].user_turn.clone().unwrap();
    assert_eq!(turn.mode, crate::trajectory::rounds::UserMode::Instruction);
    assert_eq!(turn.public_feedback_points, ["the word"]);
    assert_eq!(rounds(&outcome).rounds[0].user_turn, None);
    let (path, request) = &harness.simulator_requests[0];
    assert_eq!(*path, "/v1/chat/completions");
    let request = request.to_string();
    for seen in [
        "sim-model",
        "A terse user.",
        "Say alpha.",
        "verdict: continue",
        "attempt_state: incomplete",
        "recoverable: true",
        "score: 0.60",
    ] {
        assert!(request.contains(seen), "{seen} not in {request}");
    }
    for hidden in [
        "said_omega",
        "said omega",
        "last letter",
        "omega",
        "keywords",
    ] {
        assert!(!request.contains(hidden), "{hidden} in {request}");
    }
}

#[tokio::test]
async fn the_guided_llm_simulator_is_given_the_public_feedback_too_but_no_check() {
    let task = task(
        "    feedback: \"Please say the last letter.\"\nfeedback: {max_rounds: 2, simulator: llm, barrier: guided, persona: \"A terse user.\"}",
    );
    let mut harness = Scripted::new(&[("alpha", 1), ("alpha omega", 1)]);
    run_loop(&task, &mut harness).await.unwrap();
    let request = harness.simulator_requests[0].1.to_string();
    assert!(
        request.contains("- Please say the last letter."),
        "{request}"
    );
    for hidden in ["said_omega", "omega", "keywords"] {
        assert!(!request.contains(hidden), "{hidden} in {request}");
    }
}

#[tokio::test]
async fn the_strict_template_says_only_what_the_attempt_state_lets_it() {
    let task = task(
        "    feedback: \"Please say the last letter.\"\nfeedback: {max_rounds: 2, barrier: strict}",
    );
    let mut harness = Scripted::new(&[("alpha", 1), ("alpha omega", 1)]);
    let outcome = run_loop(&task, &mut harness).await.unwrap();
    assert_eq!(rounds(&outcome).stop, StopReason::Passed);
    assert_eq!(
        harness.seen[1].1,
        "That is not everything I asked for yet. Please finish the rest of the request."
    );
}

#[tokio::test]
async fn a_round_cut_off_at_its_time_limit_is_in_progress_and_asked_to_continue() {
    let task = task(
        "    feedback: \"Please say the last letter.\"\nfeedback: {max_rounds: 2, barrier: strict, round_timeout_seconds: 10}",
    );
    let mut harness = Scripted::new(&[("alpha", 10), ("alpha omega", 1)]);
    let outcome = run_loop(&task, &mut harness).await.unwrap();
    assert_eq!(
        rounds(&outcome).rounds[0].attempt_state,
        AttemptState::InProgress
    );
    assert_eq!(harness.seen[1].1, super::simulator::CONTINUE);
}

#[tokio::test]
async fn the_attempt_state_moves_from_incomplete_to_complete_but_failed_to_passed() {
    // A second checkpoint wants psi, chi, rho and tau: round 1 meets no goal (incomplete),
    // round 2 a quarter of the second (everything attempted, not well enough), round 3 all.
    let task = task(
        "  - name: said_psi_and_chi\n    check: {type: keywords_present, keywords: [psi, chi, rho, tau]}\nfeedback: {max_rounds: 3}",
    );
    let mut harness = Scripted::new(&[
        ("alpha", 1),
        ("alpha omega psi", 1),
        ("alpha omega psi chi rho tau", 1),
    ]);
    let outcome = run_loop(&task, &mut harness).await.unwrap();
    let states: Vec<AttemptState> = rounds(&outcome)
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
}

#[tokio::test]
async fn an_unusable_simulator_answer_is_the_trials_error_not_a_stop() {
    let task = task("feedback: {max_rounds: 2, simulator: llm, persona: \"A terse user.\"}");
    let mut harness = Scripted::new(&[("alpha", 1)]);
    harness.simulator_answer = Err("the simulated user's answer has no text: {}".into());
    let error = run_loop(&task, &mut harness).await.unwrap_err();
    assert!(matches!(error, LoopError::Message(message, Some(_)) if message.contains("no text")));
}

#[tokio::test]
async fn a_simulator_answer_not_in_the_structured_form_is_the_trials_error() {
    let task = task("feedback: {max_rounds: 2, simulator: llm, persona: \"A terse user.\"}");
    let mut harness = Scripted::new(&[("alpha", 1)]);
    harness.simulator_answer = Ok(Some("Say the word.".into()));
    let error = run_loop(&task, &mut harness).await.unwrap_err();
    let LoopError::Message(message, Some(trajectory)) = error else {
        panic!("not the trial's error with its trajectory: {error:?}");
    };
    assert!(
        message.contains("not the JSON object asked for"),
        "{message}"
    );
    assert_eq!(trajectory.output, "alpha");
}

#[tokio::test]
async fn a_silent_mode_ends_the_loop_like_silence() {
    let task = task("feedback: {max_rounds: 3, simulator: llm, persona: \"A terse user.\"}");
    let mut harness = Scripted::new(&[("alpha", 1)]);
    harness.simulator_answer = Ok(Some(
        r#"{"mode": "silent", "tone": "neutral", "candidate_feedback": "", "public_feedback_points": []}"#.into(),
    ));
    let outcome = run_loop(&task, &mut harness).await.unwrap();
    assert_eq!(rounds(&outcome).stop, StopReason::EmptyFeedback);
}

#[tokio::test]
async fn a_silent_simulator_ends_the_loop() {
    let task = task("feedback: {max_rounds: 3, simulator: llm, persona: \"A terse user.\"}");
    let mut harness = Scripted::new(&[("alpha", 1)]);
    harness.simulator_answer = Ok(None);
    let outcome = run_loop(&task, &mut harness).await.unwrap();
    assert_eq!(rounds(&outcome).stop, StopReason::EmptyFeedback);
}

#[tokio::test]
async fn the_llm_simulator_speaks_anthropic_when_the_run_says_so() {
    let task = task("feedback: {max_rounds: 2, simulator: llm, persona: \"A terse user.\"}");
    let mut harness = Scripted::new(&[("alpha", 1), ("alpha omega", 1)]);
    let outcome = run_loop_speaking(Provider::Anthropic, &task, &mut harness)
        .await
        .unwrap();
    assert_eq!(rounds(&outcome).stop, StopReason::Passed);
    let (path, request) = &harness.simulator_requests[0];
    assert_eq!(*path, "/v1/messages");
    assert!(
        request["system"]
            .as_str()
            .unwrap()
            .contains("A terse user."),
        "{request}"
    );
    assert_eq!(request["model"], "claude-3-5-haiku-latest");
    assert_eq!(harness.seen[1].1, "Say the word, please.");
}

#[tokio::test]
async fn a_checkpoint_named_from_round_two_is_not_named_in_round_one() {
    // `later` is named from round 2 on: round 1 misses only it, and the user asks to go on
    // without naming it; round 2's follow-up names it.
    let task = task(
        "  - name: later\n    after_turn: 2\n    check: {type: keywords_present, keywords: [zeta]}\nfeedback: {max_rounds: 3}",
    );
    let mut harness = Scripted::new(&[
        ("alpha omega", 1),
        ("alpha omega", 1),
        ("alpha omega zeta", 1),
    ]);
    let outcome = run_loop(&task, &mut harness).await.unwrap();
    let rounds = rounds(&outcome);
    assert_eq!(rounds.rounds[0].verdict, RoundVerdict::Continue);
    assert!(rounds.rounds[0].missing.is_empty());
    assert_eq!(rounds.rounds[0].attempt_state, AttemptState::InProgress);
    assert_eq!(harness.seen[1].1, super::simulator::CONTINUE);
    assert_eq!(rounds.rounds[1].missing, vec!["later".to_string()]);
    assert_eq!(harness.seen[2].1, "This is not done yet: later.");
    assert_eq!((rounds.stop, rounds.used()), (StopReason::Passed, 3));
}

#[tokio::test]
async fn a_missed_checkpoints_cap_bounds_the_round_and_its_grade_until_it_is_met() {
    // Round 1 says alpha (every component) but not omega: uncapped it would score above the
    // 0.9 threshold with the checkpoint's share missing; the cap holds it at 0.3, a fail.
    let task = task(
        "    cap: 0.3\n  - name: said_beta\n    check: {type: keywords_present, keywords: [beta]}\nfeedback: {max_rounds: 2}",
    );
    let mut harness = Scripted::new(&[("alpha beta", 1), ("alpha beta omega", 1)]);
    let outcome = run_loop(&task, &mut harness).await.unwrap();
    let rounds = rounds(&outcome);
    assert_eq!(rounds.rounds[0].verdict, RoundVerdict::Continue);
    assert_eq!(rounds.rounds[0].score, 0.3);
    assert_eq!(rounds.rounds[1].verdict, RoundVerdict::Pass);
    assert_eq!((rounds.stop, rounds.best_round), (StopReason::Passed, 2));
    assert!(outcome.grade.passed);
}

#[tokio::test]
async fn a_missed_unrecoverable_checkpoint_fails_the_round_and_ends_the_loop() {
    let task = task("    unrecoverable: true\nfeedback: {max_rounds: 3}");
    let mut harness = Scripted::new(&[("alpha", 1), ("alpha omega", 1)]);
    let outcome = run_loop(&task, &mut harness).await.unwrap();
    let rounds = rounds(&outcome);
    assert_eq!(rounds.rounds[0].verdict, RoundVerdict::Fail);
    assert_eq!(
        rounds.rounds[0].attempt_state,
        AttemptState::TerminalFailure
    );
    assert_eq!((rounds.stop, rounds.used()), (StopReason::Unrecoverable, 1));
    assert!(!outcome.grade.passed);
    let reason = &outcome
        .grade
        .components
        .iter()
        .find(|component| component.name == "said_omega")
        .unwrap()
        .reason;
    assert!(
        reason.ends_with("(unrecoverable: the round fails)"),
        "{reason}"
    );
    // Only one round ran: the harness was never asked again.
    assert_eq!(harness.seen.len(), 1);
}
