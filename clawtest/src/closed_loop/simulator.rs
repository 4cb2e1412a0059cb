//! The simulated user: the next user message of a closed loop, from what the user may know
//! only — the public prompt, the supervisor's [`Handoff`] (verdict, score, recoverable, and the
//! public names and feedback of the checkpoints not met) and the agent's last answer. Never a
//! check, a hidden reference, or the supervisor's reasons: this module is not given them.
//!
//! `template` is deterministic: the task's fixed `messages` in order, then a message built from
//! the missing checkpoints' public words. `llm` asks a model through the trial's gateway
//! (recorded and replayed like the harness's calls): [`request`] builds its request, [`reply`]
//! reads the answer.

use serde_json::{Value, json};

use super::supervisor::{Handoff, Missing};
use crate::trajectory::rounds::RoundVerdict;

/// The model the llm simulator asks when neither the task nor the harness names one.
pub(crate) const DEFAULT_MODEL: &str = "gpt-4o-mini";

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

/// The llm simulator's chat request: the persona and the rules as the system message, then
/// the public prompt, the agent's last answer and the handoff.
pub(crate) fn request(
    model: &str,
    persona: &str,
    prompt: &str,
    last_answer: &str,
    handoff: &Handoff,
) -> Value {
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
    json!({
        "model": model,
        "temperature": 0,
        "messages": [
            {"role": "system", "content": format!(
                "{}\n\nYou are the user of an AI assistant, talking to it in your own words. Say what is still missing from what you asked for, in at most three sentences. Never invent requirements. Reply with the message only; reply with nothing if there is nothing to add.",
                persona.trim()
            )},
            {"role": "user", "content": user},
        ],
    })
}

/// The message in the llm simulator's answer (`choices[0].message.content`, trimmed), or why
/// the answer has none.
pub(crate) fn reply(answer: &Value) -> Result<String, String> {
    match answer.pointer("/choices/0/message/content") {
        Some(Value::String(text)) => Ok(text.trim().to_string()),
        Some(Value::Null) => Ok(String::new()),
        _ => Err(format!(
            "the simulator's model answered without choices[0].message.content: {}",
            answer.to_string().chars().take(300).collect::<String>()
        )),
    }
}

#[cfg(test)]
mod tests {
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
    fn a_reply_without_a_message_is_an_error_and_null_is_silence() {
        assert_eq!(
            reply(&json!({"choices": [{"message": {"content": " Hi "}}]})),
            Ok("Hi".into())
        );
        assert_eq!(
            reply(&json!({"choices": [{"message": {"content": null}}]})),
            Ok(String::new())
        );
        assert!(reply(&json!({"error": "x"})).is_err());
    }
}
