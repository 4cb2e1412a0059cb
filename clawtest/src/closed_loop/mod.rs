//! Closed-loop tasks (UniClawBench's Executor, Hidden Supervisor and User Simulator): round 1
//! runs the harness on the prompt; the supervisor (`supervisor.rs`, or with `supervisor:
//! model` a model reading the hidden evaluation spec, `model_supervisor.rs`) grades the round
//! on the World's audit and the output so far and says `pass`, `continue` or `fail`; on `continue`
//! the simulated user (`simulator.rs`) writes the next message from what a user may know; the
//! harness runs again on the same World and workspace. The loop stops on a pass, an
//! unrecoverable fail, the most rounds, an empty follow-up, the total time, or the run's cost
//! limit; the trial's grade is its best round's.
//!
//! The loop owns the order of things and the budgets; running one round (the sandbox, the
//! gateway, the World) is the executor's, behind [`Harness`].

pub(crate) mod model_supervisor;
mod seam;
pub(crate) mod simulator;
pub(crate) mod supervisor;
pub(crate) mod visible;

pub(crate) use seam::{Harness, ModelReply, Step};

use std::time::Duration;

use serde_json::json;

use crate::config::Provider;
use crate::grade::Grade;
use crate::judge::Judge;
use crate::sandbox::RoundSetup;
use crate::task::{Feedback, SimulatorKind, Task};
use crate::trajectory::Trajectory;
use crate::trajectory::rounds::{Round, RoundVerdict, Rounds, StopReason, UserTurn};

/// The loop's result: the best round's grade, and the last round's trajectory with the
/// rounds in it.
#[derive(Debug)]
pub(crate) struct Outcome {
    pub(crate) grade: Grade,
    pub(crate) trajectory: Trajectory,
}

/// Why the loop could not finish.
#[derive(Debug)]
pub(crate) enum LoopError<E> {
    /// A round failed in the trial (sandbox, gateway, harness): the trial's error.
    Round(E),
    /// The judge could not answer a rubric, or the simulator's or the supervisor's model
    /// answered nothing usable.
    Message(String, Option<Box<Trajectory>>),
}

/// Whether `task` runs as a closed loop: it has checkpoints or feedback.
pub(crate) fn applies(task: &Task) -> bool {
    !task.checkpoints.is_empty() || task.feedback.is_some()
}

/// The feedback block `task` runs with (the defaults when it has checkpoints only).
pub(crate) fn feedback(task: &Task) -> Feedback {
    task.feedback.clone().unwrap_or_default()
}

/// What one loop runs with besides its harness.
pub(crate) struct Setting<'a> {
    pub(crate) task: &'a Task,
    /// The prompt as the harness is given it in round 1 (its tier's additions included).
    pub(crate) prompt: &'a str,
    pub(crate) judge: &'a dyn Judge,
    pub(crate) threshold: f64,
    /// The model the llm simulator and the model supervisor ask when the task names none
    /// (`harness.model`).
    pub(crate) model: Option<&'a str>,
    /// The wire format the llm simulator and the model supervisor speak (see
    /// `ModelAccess::simulator_provider`).
    pub(crate) provider: Provider,
}

/// Runs the rounds of `setting.task` (see the module documentation).
pub(crate) async fn run<H: Harness>(
    setting: Setting<'_>,
    harness: &mut H,
) -> Result<Outcome, LoopError<H::Error>> {
    let task = setting.task;
    let feedback = feedback(task);
    let round_limit = feedback.round_timeout.unwrap_or(task.limits.timeout);
    let total_limit = feedback
        .total_timeout
        .unwrap_or_else(|| round_limit.saturating_mul(feedback.max_rounds));
    // Every round is graded as the supervisor sees the task: with its checkpoints, or the
    // model supervisor's caps and unrecoverable outcomes.
    let supervised = match &feedback.evaluation {
        Some(evaluation) => model_supervisor::supervised_task(task, evaluation),
        None => supervisor::supervised_task(task),
    };
    let mut rounds: Vec<Round> = Vec::new();
    let mut conversation = String::new();
    let mut message = setting.prompt.to_string();
    let mut elapsed = Duration::ZERO;
    let mut best: Option<(u32, Grade)> = None;
    let mut calls_before = 0;
    let mut audit_before = 0;
    let mut user_turn = None;
    let mut number = 1;
    let (stop, trajectory) = loop {
        harness.begin_round(number);
        let timeout = round_limit.min(total_limit.saturating_sub(elapsed));
        let setup = RoundSetup {
            number,
            conversation: conversation.clone(),
            // The trial links its kept session, when the harness keeps one.
            session: None,
        };
        let trajectory = harness
            .run_round(setup, message.clone(), timeout)
            .await
            .map_err(LoopError::Round)?;
        elapsed += trajectory.duration;
        let tool_calls = trajectory.audit.get(audit_before..).unwrap_or_default();
        let asked = Asked {
            number,
            message: &message,
            conversation: &conversation,
            tool_calls,
        };
        let supervision = supervise(
            &setting,
            &feedback,
            &supervised,
            harness,
            &trajectory,
            asked,
        )
        .await
        .map_err(|error| error.with_trajectory(&trajectory))?;
        rounds.push(record(
            number,
            (&message, user_turn.take()),
            &supervision,
            &trajectory,
            calls_before,
        ));
        calls_before = trajectory.model_calls.len();
        audit_before = trajectory.audit.len();
        if best
            .as_ref()
            .is_none_or(|(_, grade)| supervision.grade.final_score > grade.final_score)
        {
            best = Some((number, supervision.grade.clone()));
        }
        let spent = Spent {
            rounds: number,
            elapsed,
            budget_exhausted: harness.budget_exhausted(),
        };
        let stop = stop_reason(supervision.handoff.verdict, &feedback, spent, total_limit);
        if let Some(stop) = stop {
            break (stop, trajectory);
        }
        // The follow-up belongs to the next round: the llm simulator's call is recorded there.
        harness.begin_round(number + 1);
        let visible = visible::Visible {
            earlier: &conversation,
            tool_calls,
            answer: &trajectory.output,
        };
        let (next, turn) = follow_up(
            &setting,
            &feedback,
            harness,
            number + 1,
            &visible,
            &supervision,
        )
        .await
        .map_err(|error| error.with_trajectory(&trajectory))?;
        if next.is_empty() {
            break (StopReason::EmptyFeedback, trajectory);
        }
        user_turn = turn;
        for (role, content) in [
            ("user", message.as_str()),
            ("assistant", &trajectory.output),
        ] {
            conversation.push_str(&json!({"role": role, "content": content}).to_string());
            conversation.push('\n');
        }
        message = next;
        number += 1;
    };
    let Some((best_round, grade)) = best else {
        return Err(LoopError::Message(
            "no round ran".into(),
            Some(Box::new(trajectory)),
        ));
    };
    let mut trajectory = trajectory;
    trajectory.rounds = Some(Rounds {
        rounds,
        stop,
        best_round,
    });
    Ok(Outcome { grade, trajectory })
}

/// What round `number` asked of the harness: its message, the conversation before it, and
/// the tool calls it made.
struct Asked<'a> {
    number: u32,
    message: &'a str,
    conversation: &'a str,
    tool_calls: &'a [crate::trajectory::AuditEntry],
}

/// Grades round `asked.number` as the supervisor sees the task (`supervised`) and decides:
/// by the checkpoints, or by the supervisor's model through the trial's gateway. A judge that
/// cannot answer, or a supervisor's answer of no use, is the loop's error.
async fn supervise<H: Harness>(
    setting: &Setting<'_>,
    feedback: &Feedback,
    supervised: &Task,
    harness: &mut H,
    trajectory: &Trajectory,
    asked: Asked<'_>,
) -> Result<supervisor::Supervision, LoopError<H::Error>> {
    let grade =
        crate::judge::grade_trajectory(supervised, trajectory, setting.judge, setting.threshold)
            .await
            .map_err(|error| LoopError::Message(error.to_string(), None))?;
    let Some(evaluation) = &feedback.evaluation else {
        return Ok(supervisor::supervise(
            setting.task,
            grade,
            asked.number,
            trajectory.exit.timed_out,
        ));
    };
    let evidence = model_supervisor::Evidence {
        round: (asked.number, feedback.max_rounds),
        message: asked.message,
        visible: visible::Visible {
            earlier: asked.conversation,
            tool_calls: asked.tool_calls,
            answer: &trajectory.output,
        },
        files: evidence_files(harness, trajectory),
    };
    let chat = model_supervisor::chat(
        setting.provider,
        feedback.supervisor_model.as_deref().or(setting.model),
    );
    let conversation = model_supervisor::conversation(evaluation, &setting.task.prompt, &evidence);
    let text = match harness.ask_model(chat, conversation).await {
        Err(error) => return Err(LoopError::Round(error)),
        Ok(Ok(Some(text))) => text,
        Ok(Ok(None)) => {
            return Err(LoopError::Message(
                "the supervisor's model answered nothing (an empty message); it must answer the JSON object".into(),
                None,
            ));
        }
        Ok(Err(message)) => return Err(LoopError::Message(message, None)),
    };
    let answer = model_supervisor::answer(&text).map_err(|message| {
        LoopError::Message(format!("round {}: {message}", asked.number), None)
    })?;
    Ok(model_supervisor::decide(evaluation, grade, answer))
}

/// The workspace's files as the model supervisor is shown them: every one listed, the text
/// of the first few read through the trial (never through a link, bounded); a file that is
/// not text is listed only.
fn evidence_files<H: Harness>(
    harness: &H,
    trajectory: &Trajectory,
) -> Vec<model_supervisor::EvidenceFile> {
    let mut read = 0;
    trajectory
        .workspace
        .iter()
        .map(|(path, file)| {
            let text = (read < model_supervisor::READ_FILES)
                .then(|| harness.workspace_text(path))
                .flatten()
                .filter(|text| !text.contains(['\0', '\u{FFFD}']));
            read += usize::from(text.is_some());
            model_supervisor::EvidenceFile {
                path: path.clone(),
                size: file.size,
                text,
            }
        })
        .collect()
}

/// What the loop has used after a round.
struct Spent {
    rounds: u32,
    elapsed: Duration,
    budget_exhausted: bool,
}

/// Why the loop stops after a round with `verdict`, if it does: the verdict, else the most
/// rounds, the total time, or the run's cost limit.
fn stop_reason(
    verdict: RoundVerdict,
    feedback: &Feedback,
    spent: Spent,
    total_limit: Duration,
) -> Option<StopReason> {
    match verdict {
        RoundVerdict::Pass => Some(StopReason::Passed),
        RoundVerdict::Fail => Some(StopReason::Unrecoverable),
        RoundVerdict::Continue if spent.rounds >= feedback.max_rounds => {
            Some(StopReason::MaxRounds)
        }
        RoundVerdict::Continue if spent.elapsed >= total_limit => Some(StopReason::TotalTime),
        RoundVerdict::Continue if spent.budget_exhausted => Some(StopReason::CostBudget),
        RoundVerdict::Continue => None,
    }
}

/// The record of round `number`, asked with `message` (and the simulated user's structured
/// turn it came from); `calls_before` model calls were made before it.
fn record(
    number: u32,
    (message, user_turn): (&str, Option<UserTurn>),
    supervision: &supervisor::Supervision,
    trajectory: &Trajectory,
    calls_before: usize,
) -> Round {
    Round {
        number,
        message: message.to_string(),
        user_turn,
        verdict: supervision.handoff.verdict,
        attempt_state: supervision.handoff.attempt_state,
        score: supervision.grade.final_score,
        missing: supervision
            .missing
            .iter()
            .map(|missing| missing.name.clone())
            .collect(),
        supervisor: supervision.model.clone(),
        duration_ms: Some(trajectory.duration.as_millis() as u64),
        // The harness's own: the simulated user's, the supervisor's and the judge's calls since
        // the last round are the gateway's too, not the round's.
        model_calls: trajectory
            .model_calls
            .get(calls_before..)
            .unwrap_or_default()
            .iter()
            .filter(|call| call.speaker.is_harness())
            .count(),
    }
}

/// The simulated user's message for round `next` (empty: nothing more to say), from what the
/// user could see and the briefing the task's barrier draws only: the template's, or the llm
/// simulator's structured answer through the trial's gateway (with that answer's turn).
async fn follow_up<H: Harness>(
    setting: &Setting<'_>,
    feedback: &Feedback,
    harness: &mut H,
    next: u32,
    visible: &visible::Visible<'_>,
    supervision: &supervisor::Supervision,
) -> Result<(String, Option<UserTurn>), LoopError<H::Error>> {
    let briefing = supervision.briefing(feedback.barrier);
    match feedback.simulator {
        SimulatorKind::Template => Ok((
            simulator::template(&feedback.messages, &briefing, next),
            None,
        )),
        SimulatorKind::Llm => {
            let chat = simulator::chat(
                setting.provider,
                feedback.model.as_deref().or(setting.model),
            );
            let conversation = simulator::conversation(
                feedback.persona.as_deref().unwrap_or_default(),
                &setting.task.prompt,
                visible,
                &briefing,
            );
            match harness.ask_model(chat, conversation).await {
                Err(error) => Err(LoopError::Round(error)),
                Ok(Ok(None)) => Ok((String::new(), None)),
                Ok(Ok(Some(text))) => match simulator::user_turn(&text) {
                    Ok((message, turn)) => Ok((message, Some(turn))),
                    Err(message) => Err(LoopError::Message(message, None)),
                },
                Ok(Err(message)) => Err(LoopError::Message(message, None)),
            }
        }
    }
}

impl<E> LoopError<E> {
    /// The error with `trajectory` as the trial's, when it has none yet.
    fn with_trajectory(self, trajectory: &Trajectory) -> LoopError<E> {
        match self {
            LoopError::Message(message, None) => {
                LoopError::Message(message, Some(Box::new(trajectory.clone())))
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod supervised_tests;
#[cfg(test)]
mod tests;
