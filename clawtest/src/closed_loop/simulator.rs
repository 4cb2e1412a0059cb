//! The simulated user: the next user message of a closed loop, from what a user may know
//! only — the public prompt, the agent's last answer and the supervisor's [`Briefing`]
//! (UniClawBench's four-field handoff; under the guided barrier also the public words of the
//! checkpoints not met). Never a check, a hidden reference, or the supervisor's reasons: this
//! module is not given them.
//!
//! `template` is deterministic: the task's fixed `messages` in order, then the briefing's
//! public points, else a sentence for the attempt's state. `llm` asks a model through the
//! trial's gateway (recorded and replayed like the harness's calls) with `llm`'s one chat
//! client: [`chat`] says how, [`conversation`] what (the persona, the public task, the
//! visible trajectory — earlier turns, this round's tool calls and results, the answer —
//! bounded, and the briefing); [`user_turn`] reads its structured answer (UniClawBench's
//! `mode`, `tone`, `candidate_feedback`, `public_feedback_points`) into the next message.

use std::fmt::Write;

use serde::Deserialize;

use super::supervisor::Briefing;
use super::visible::{ANSWER_CHARACTERS, EARLIER_CHARACTERS, Visible, head, tail};
use crate::config::Provider;
use crate::llm::client::{Chat, Message};
use crate::trajectory::Speaker;
use crate::trajectory::rounds::{AttemptState, RoundVerdict, UserMode, UserTone, UserTurn};

/// The model the llm simulator asks in `provider`'s wire format when neither the task nor the
/// harness names one.
pub(crate) fn default_model(provider: Provider) -> &'static str {
    crate::llm::client::default_model(provider)
}

/// The llm simulator's client: `model` in `provider`'s wire format, its calls marked as the
/// simulated user's.
pub(crate) fn chat(provider: Provider, model: Option<&str>) -> Chat {
    Chat {
        provider,
        model: model.unwrap_or(default_model(provider)).to_string(),
        // The user's message is a few sentences; the provider's default length is enough.
        max_tokens: None,
        speaker: Speaker::SimulatedUser,
    }
}

/// The template simulator's message before round `round` (from 2): the fixed message for that
/// follow-up if the task has one, else the briefing's public points (guided), else what a user
/// who sees only where the attempt stands says ([`by_state`]). Empty when there is nothing to
/// say.
pub(crate) fn template(messages: &[String], briefing: &Briefing, round: u32) -> String {
    if let Some(message) = messages.get(round.saturating_sub(2) as usize) {
        return message.trim().to_string();
    }
    match briefing.points.is_empty() {
        false => briefing.points.join(" "),
        true => by_state(briefing.handoff.attempt_state).to_string(),
    }
}

/// What the template simulator says when a checkpoint's round has not come yet, or the
/// harness was cut off (UniClawBench's continuation message).
pub(crate) const CONTINUE: &str = "Please continue from your current state.";

/// What a user who knows only the attempt's state says next: nothing once it passed or
/// failed for good.
fn by_state(state: AttemptState) -> &'static str {
    match state {
        AttemptState::InProgress => CONTINUE,
        AttemptState::Incomplete => {
            "That is not everything I asked for yet. Please finish the rest of the request."
        }
        AttemptState::CompleteButFailed => {
            "Something in that is not right yet. Please check your work against my request and fix it."
        }
        AttemptState::CompleteAndPassed | AttemptState::TerminalFailure => "",
    }
}

/// The instructions of the llm simulator: its persona, the rules of a user who knows only
/// what users know, and the structured answer UniClawBench's user simulator gives.
const RULES: &str = "You are the user of an AI assistant. You know what you asked for and what you can see the assistant did (its messages, the tools it used and what they returned), nothing more. Judge from that whether you got what you asked for, then write your next message in your own words: what is still missing or wrong, at most three sentences. Never invent requirements beyond your request. Answer with one JSON object and nothing else: {\"mode\": \"silent\" | \"nudge\" | \"instruction\", \"tone\": \"neutral\" | \"firm\" | \"urgent\", \"candidate_feedback\": \"<your message to the assistant>\", \"public_feedback_points\": [\"<each point you make>\"]}. Use mode silent, with an empty candidate_feedback, when there is nothing to add.";

/// The llm simulator's conversation: the persona and the rules as the instructions, then the
/// public prompt, the visible trajectory and the briefing.
pub(crate) fn conversation(
    persona: &str,
    prompt: &str,
    visible: &Visible<'_>,
    briefing: &Briefing,
) -> Vec<Message> {
    let handoff = &briefing.handoff;
    let verdict = match handoff.verdict {
        RoundVerdict::Pass => "pass",
        RoundVerdict::Continue => "continue",
        RoundVerdict::Fail => "fail",
    };
    let mut user = format!("## What you asked for\n{}\n\n", prompt.trim());
    if !visible.earlier.is_empty() {
        user.push_str("## The conversation before\n");
        user.push_str(&tail(visible.earlier.trim(), EARLIER_CHARACTERS));
        user.push_str("\n\n");
    }
    user.push_str("## What the assistant did this round\n");
    visible.write_tool_calls(&mut user);
    let _ = write!(
        user,
        "\n## The assistant's last answer\n{}\n\n## Where it stands\nverdict: {verdict}\nattempt_state: {}\nrecoverable: {}\nscore: {:.2}\n",
        head(visible.answer.trim(), ANSWER_CHARACTERS),
        handoff.attempt_state.name(),
        handoff.recoverable,
        handoff.score,
    );
    if !briefing.points.is_empty() {
        user.push_str("not done yet:\n");
        for point in &briefing.points {
            let _ = writeln!(user, "- {point}");
        }
    }
    user.push_str("\nAnswer with the JSON object.");
    vec![
        Message::system(format!("{}\n\n{RULES}", persona.trim())),
        Message::user(user),
    ]
}

/// The llm simulator's answer as written: all four fields, nothing else.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    mode: UserMode,
    tone: UserTone,
    candidate_feedback: String,
    public_feedback_points: Vec<String>,
}

/// The most points a simulated user's answer may make, and their characters.
const MOST_POINTS: usize = 20;

/// A model's answer with a Markdown code fence around it (```` ```json ````) taken off, trimmed.
pub(crate) fn unfenced(text: &str) -> &str {
    let trimmed = text.trim();
    trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|inner| inner.trim_end().strip_suffix("```"))
        .unwrap_or(trimmed)
        .trim()
}

/// The next message and the structured turn it came from, out of the llm simulator's answer
/// `text`: one JSON object (a Markdown code fence around it is allowed); the message is its
/// `candidate_feedback` (UniClawBench's default `candidate_only` rewrite), empty when the
/// mode is `silent`. Anything else is the reason the answer is of no use.
pub(crate) fn user_turn(text: &str) -> Result<(String, UserTurn), String> {
    let trimmed = text.trim();
    let answer: Answer = serde_json::from_str(unfenced(trimmed)).map_err(|error| {
        format!(
            "the simulated user's answer is not the JSON object asked for ({error}): {}; expected {{\"mode\": \"silent\"|\"nudge\"|\"instruction\", \"tone\": \"neutral\"|\"firm\"|\"urgent\", \"candidate_feedback\": \"…\", \"public_feedback_points\": [\"…\"]}}",
            head(trimmed, 200)
        )
    })?;
    if answer.public_feedback_points.len() > MOST_POINTS {
        return Err(format!(
            "the simulated user's answer makes {} public_feedback_points, more than {MOST_POINTS}",
            answer.public_feedback_points.len()
        ));
    }
    let message = match answer.mode {
        UserMode::Silent => String::new(),
        UserMode::Nudge | UserMode::Instruction => answer.candidate_feedback.trim().to_string(),
    };
    let turn = UserTurn {
        mode: answer.mode,
        tone: answer.tone,
        public_feedback_points: answer.public_feedback_points,
    };
    Ok((message, turn))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::closed_loop::supervisor::Handoff;
    use crate::trajectory::AuditEntry;

    fn briefing(state: AttemptState, points: &[&str]) -> Briefing {
        Briefing {
            handoff: Handoff {
                verdict: RoundVerdict::Continue,
                attempt_state: state,
                recoverable: true,
                score: 0.5,
            },
            points: points.iter().map(|point| point.to_string()).collect(),
        }
    }

    #[test]
    fn the_guided_template_says_the_public_points() {
        let guided = briefing(
            AttemptState::Incomplete,
            &["This is not done yet: sent the summary.", "Please CC Bob."],
        );
        assert_eq!(
            template(&[], &guided, 2),
            "This is not done yet: sent the summary. Please CC Bob."
        );
    }

    #[test]
    fn the_strict_template_speaks_from_the_attempt_state_only() {
        let said = |state| template(&[], &briefing(state, &[]), 2);
        assert_eq!(said(AttemptState::InProgress), CONTINUE);
        assert!(said(AttemptState::Incomplete).contains("not everything"));
        assert!(said(AttemptState::CompleteButFailed).contains("not right yet"));
        assert_eq!(said(AttemptState::CompleteAndPassed), "");
        assert_eq!(said(AttemptState::TerminalFailure), "");
    }

    #[test]
    fn fixed_messages_come_first_in_order_then_the_template() {
        let messages = vec!["First.".to_string()];
        let missing = briefing(AttemptState::Incomplete, &["A goal."]);
        assert_eq!(template(&messages, &missing, 2), "First.");
        assert_eq!(template(&messages, &missing, 3), "A goal.");
    }

    #[test]
    fn the_conversation_is_the_same_request_in_either_wire_format() {
        let conversation = conversation(
            "A terse user.",
            "Say hi.",
            &Visible {
                earlier: "",
                tool_calls: &[],
                answer: "hello",
            },
            &briefing(AttemptState::Incomplete, &[]),
        );
        let (path, openai) = chat(Provider::OpenAi, None).request(&conversation);
        assert_eq!(path, "/v1/chat/completions");
        assert_eq!(openai["model"], "gpt-4o-mini");
        assert_eq!(openai["messages"][0]["role"], "system");
        assert!(openai.get("max_tokens").is_none(), "{openai}");
        let (path, anthropic) = chat(Provider::Anthropic, Some("c")).request(&conversation);
        assert_eq!(path, "/v1/messages");
        assert_eq!(anthropic["model"], "c");
        // Anthropic: the instructions beside the messages, and a length it requires.
        assert_eq!(anthropic["system"], openai["messages"][0]["content"]);
        assert_eq!(anthropic["messages"], json!([openai["messages"][1]]));
        assert!(anthropic["max_tokens"].as_u64().is_some(), "{anthropic}");
    }

    #[test]
    fn the_structured_answer_gives_the_message_and_a_silent_one_nothing() {
        let (message, turn) = user_turn(
            "```json\n{\"mode\": \"nudge\", \"tone\": \"firm\", \"candidate_feedback\": \" Add the reboot task. \", \"public_feedback_points\": [\"reboot task\"]}\n```",
        )
        .unwrap();
        assert_eq!(message, "Add the reboot task.");
        assert_eq!((turn.mode, turn.tone), (UserMode::Nudge, UserTone::Firm));
        assert_eq!(turn.public_feedback_points, ["reboot task"]);
        let (message, turn) = user_turn(
            r#"{"mode": "silent", "tone": "neutral", "candidate_feedback": "ignored", "public_feedback_points": []}"#,
        )
        .unwrap();
        assert_eq!((message.as_str(), turn.mode), ("", UserMode::Silent));
    }

    #[test]
    fn an_answer_that_is_not_the_structured_form_is_a_clear_error() {
        for bad in [
            "Please add the reboot task.",
            r#"{"mode": "shout", "tone": "neutral", "candidate_feedback": "", "public_feedback_points": []}"#,
            r#"{"mode": "nudge", "tone": "neutral", "candidate_feedback": "x"}"#,
            r#"{"mode": "nudge", "tone": "neutral", "candidate_feedback": "x", "public_feedback_points": [], "score": 1}"#,
        ] {
            let error = user_turn(bad).unwrap_err();
            assert!(error.contains("not the JSON object asked for"), "{error}");
        }
    }

    #[test]
    fn the_visible_trajectory_is_bounded() {
        let entry: AuditEntry = serde_json::from_value(json!({
            "seq": 1, "service": "todo", "action": "list_tasks", "endpoint": "/todo/tasks",
            "params": {"q": "x".repeat(5000)}, "status": 200, "response": {"tasks": []},
            "at": "2026-01-01T00:00:00Z"
        }))
        .unwrap();
        let calls = vec![entry; 100];
        let long = "y".repeat(100_000);
        let conversation = conversation(
            "A user.",
            "Do it.",
            &Visible {
                earlier: &long,
                tool_calls: &calls,
                answer: &long,
            },
            &briefing(AttemptState::Incomplete, &[]),
        );
        let asked = &conversation[1].text;
        assert!(asked.contains("- list_tasks: {\"q\":\"xxx"), "{asked}");
        assert!(asked.contains("and 70 more tool calls"), "{asked}");
        assert!(asked.chars().count() < 40_000, "{}", asked.len());
    }
}
