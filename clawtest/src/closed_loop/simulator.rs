//! The simulated user: the next user message of a closed loop, from what a user may know
//! only — the public prompt, the agent's last answer and the supervisor's [`Briefing`]
//! (UniClawBench's four-field handoff; under the guided barrier also the public words of the
//! checkpoints not met). Never a check, a hidden reference, or the supervisor's reasons: this
//! module is not given them.
//!
//! `template` is deterministic: the task's fixed `messages` in order, then the briefing's
//! public points, else a sentence for the attempt's state. `llm` asks a model through the
//! trial's gateway (recorded and replayed like the harness's calls) with `llm`'s one chat
//! client: [`chat`] says how, [`conversation`] what.

use super::supervisor::Briefing;
use crate::config::Provider;
use crate::llm::client::{Chat, Message};
use crate::trajectory::rounds::{AttemptState, RoundVerdict};

/// The model the llm simulator asks in `provider`'s wire format when neither the task nor the
/// harness names one.
pub(crate) fn default_model(provider: Provider) -> &'static str {
    match provider {
        Provider::OpenAi => "gpt-4o-mini",
        Provider::Anthropic => "claude-3-5-haiku-latest",
    }
}

/// The llm simulator's client: `model` in `provider`'s wire format, its calls marked as the
/// simulated user's.
pub(crate) fn chat(provider: Provider, model: Option<&str>) -> Chat {
    Chat {
        provider,
        model: model.unwrap_or(default_model(provider)).to_string(),
        // The user's message is a few sentences; the provider's default length is enough.
        max_tokens: None,
        speaker: "the simulated user",
        simulated_user: true,
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

/// The llm simulator's conversation: the persona and the rules as the instructions, then the
/// public prompt, the agent's last answer and the briefing.
pub(crate) fn conversation(
    persona: &str,
    prompt: &str,
    last_answer: &str,
    briefing: &Briefing,
) -> Vec<Message> {
    let handoff = &briefing.handoff;
    let verdict = match handoff.verdict {
        RoundVerdict::Pass => "pass",
        RoundVerdict::Continue => "continue",
        RoundVerdict::Fail => "fail",
    };
    let mut user = format!(
        "## What you asked for\n{}\n\n## The assistant's last answer\n{}\n\n## Where it stands\nverdict: {verdict}\nattempt_state: {}\nrecoverable: {}\nscore: {:.2}\n",
        prompt.trim(),
        last_answer.trim(),
        handoff.attempt_state.name(),
        handoff.recoverable,
        handoff.score,
    );
    if !briefing.points.is_empty() {
        user.push_str("not done yet:\n");
        for point in &briefing.points {
            user.push_str(&format!("- {point}\n"));
        }
    }
    user.push_str("\nWrite your next message to the assistant.");
    vec![
        Message::system(format!(
            "{}\n\nYou are the user of an AI assistant, talking to it in your own words. Say what is still missing from what you asked for, in at most three sentences. Never invent requirements. Reply with the message only; reply with nothing if there is nothing to add.",
            persona.trim()
        )),
        Message::user(user),
    ]
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::closed_loop::supervisor::Handoff;

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
            "hello",
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
}
