//! The simulated user: the next user message of a closed loop, from what the user may know
//! only — the public prompt, the supervisor's [`Handoff`] (verdict, score, recoverable, and the
//! public names and feedback of the checkpoints not met) and the agent's last answer. Never a
//! check, a hidden reference, or the supervisor's reasons: this module is not given them.
//!
//! `template` is deterministic: the task's fixed `messages` in order, then a message built from
//! the missing checkpoints' public words. `llm` asks a model through the trial's gateway
//! (recorded and replayed like the harness's calls) with `llm`'s one chat client: [`chat`]
//! says how, [`conversation`] what.

use super::supervisor::{Handoff, Missing};
use crate::config::Provider;
use crate::llm::client::{Chat, Message};
use crate::trajectory::rounds::RoundVerdict;

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
/// follow-up if the task has one, else one sentence per missing checkpoint (its feedback, or its
/// name in words), else [`CONTINUE`] while a checkpoint's round is still to come. Empty when
/// there is nothing to say.
pub(crate) fn template(messages: &[String], handoff: &Handoff, round: u32) -> String {
    if let Some(message) = messages.get(round.saturating_sub(2) as usize) {
        return message.trim().to_string();
    }
    let message = handoff
        .missing
        .iter()
        .map(sentence)
        .collect::<Vec<_>>()
        .join(" ");
    // A checkpoint whose round has not come has no words yet: the user asks to go on.
    match message.is_empty() && handoff.pending {
        true => CONTINUE.to_string(),
        false => message,
    }
}

/// What the template simulator says when a checkpoint's round has not come yet
/// (UniClawBench's continuation message).
pub(crate) const CONTINUE: &str = "Please continue from your current state.";

/// What the user says about one missing checkpoint.
fn sentence(missing: &Missing) -> String {
    match &missing.feedback {
        Some(feedback) => feedback.trim().to_string(),
        None => {
            let words = missing.name.replace(['_', '-'], " ");
            format!("This is not done yet: {}.", words.trim())
        }
    }
}

/// The llm simulator's conversation: the persona and the rules as the instructions, then the
/// public prompt, the agent's last answer and the handoff.
pub(crate) fn conversation(
    persona: &str,
    prompt: &str,
    last_answer: &str,
    handoff: &Handoff,
) -> Vec<Message> {
    let verdict = match handoff.verdict {
        RoundVerdict::Pass => "pass",
        RoundVerdict::Continue => "continue",
        RoundVerdict::Fail => "fail",
    };
    let missing: Vec<String> = handoff.missing.iter().map(sentence).collect();
    let user = format!(
        "## What you asked for\n{}\n\n## The assistant's last answer\n{}\n\n## Where it stands\nverdict: {verdict}\nscore: {:.2}\nrecoverable: {}\nnot done yet:\n{}\n\nWrite your next message to the assistant.",
        prompt.trim(),
        last_answer.trim(),
        handoff.score,
        handoff.recoverable,
        if missing.is_empty() {
            "(nothing named)".to_string()
        } else {
            missing
                .iter()
                .map(|line| format!("- {line}"))
                .collect::<Vec<_>>()
                .join("\n")
        },
    );
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

    fn handoff(missing: &[(&str, Option<&str>)]) -> Handoff {
        Handoff {
            verdict: RoundVerdict::Continue,
            recoverable: true,
            score: 0.5,
            missing: missing
                .iter()
                .map(|(name, feedback)| Missing {
                    name: name.to_string(),
                    feedback: feedback.map(str::to_string),
                })
                .collect(),
            pending: false,
        }
    }

    #[test]
    fn the_template_says_the_missing_names_or_their_feedback() {
        let message = template(
            &[],
            &handoff(&[("sent_the_summary", None), ("x", Some("Please CC Bob."))]),
            2,
        );
        assert_eq!(
            message,
            "This is not done yet: sent the summary. Please CC Bob."
        );
    }

    #[test]
    fn fixed_messages_come_first_in_order_then_the_template() {
        let messages = vec!["First.".to_string()];
        let missing = handoff(&[("a_goal", None)]);
        assert_eq!(template(&messages, &missing, 2), "First.");
        assert_eq!(
            template(&messages, &missing, 3),
            "This is not done yet: a goal."
        );
        assert_eq!(template(&[], &handoff(&[]), 2), "");
    }

    #[test]
    fn the_conversation_is_the_same_request_in_either_wire_format() {
        let conversation = conversation("A terse user.", "Say hi.", "hello", &handoff(&[]));
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
