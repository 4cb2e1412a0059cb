//! The LLM judge, as far as grading is concerned: planning the judge request of each
//! `llm_judge` component (pure: the same trajectory always plans the same requests, with the
//! same cache key) and reading a judge's reply into a score. Asking a model is not done here:
//! [`crate::judge`] answers planned requests, and the answers are folded in by
//! [`super::grade`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::task::{Check, Task};
use crate::trajectory::Trajectory;

/// How much of the agent's output the judge sees (ClawEnvKit's limit).
const OUTPUT_LIMIT: usize = 3000;

/// The anchor scale the judge scores against.
const SCALE: &str = "Score on this scale:\n\
1.0 = fully meets the rubric\n\
0.9 = meets it with a trivial omission\n\
0.7 = mostly meets it; a minor part missing or wrong\n\
0.5 = meets about half of it\n\
0.3 = addresses it only superficially\n\
0.0 = does not meet it at all";

/// One question to the judge: the rubric of one component applied to one trajectory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JudgeRequest {
    /// The component this answers.
    pub component: String,
    /// The component's `rubric`, as the task file gives it.
    pub rubric: String,
    /// The full text sent to the judge.
    pub prompt: String,
    /// SHA-256 of the prompt: the cache key (the same question is never paid for twice).
    pub key: String,
}

/// The judge's answer to one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeAnswer {
    /// 0..=1.
    pub score: f64,
    /// The judge's explanation: the reply's `reasoning`, or the whole reply when it held no
    /// JSON `score`.
    pub reasoning: String,
}

/// Answers by component name.
pub type JudgeAnswers = BTreeMap<String, JudgeAnswer>;

/// The judge requests a trajectory needs, one per `llm_judge` component, in task order.
pub(crate) fn plan(task: &Task, trajectory: &Trajectory) -> Vec<JudgeRequest> {
    task.components
        .iter()
        .filter_map(|component| match &component.check {
            Check::LlmJudge { rubric } => {
                let prompt = prompt(task, trajectory, rubric);
                let key = Sha256::digest(prompt.as_bytes())
                    .iter()
                    .map(|byte| format!("{byte:02x}"))
                    .collect();
                Some(JudgeRequest {
                    component: component.name.clone(),
                    rubric: rubric.clone(),
                    prompt,
                    key,
                })
            }
            _ => None,
        })
        .collect()
}

fn prompt(task: &Task, trajectory: &Trajectory, rubric: &str) -> String {
    let output: String = trajectory.output.chars().take(OUTPUT_LIMIT).collect();
    let cut = if trajectory.output.chars().count() > OUTPUT_LIMIT {
        "\n[output truncated]"
    } else {
        ""
    };
    format!(
        "You are grading an AI agent's work on a task.\n\n## Task\n{}\n\n## Rubric\n{rubric}\n\n## Actions taken by the agent\n{}\n\n## The agent's final output\n{output}{cut}\n\n## Instructions\n{SCALE}\n\nRespond with JSON only: {{\"score\": <number between 0 and 1>, \"reasoning\": \"<one or two sentences>\"}}",
        task.prompt.trim(),
        action_summary(trajectory)
    )
}

/// One line per service, in first-use order: `todo: list_tasks, update_task (2 calls)`.
fn action_summary(trajectory: &Trajectory) -> String {
    let mut services: Vec<(&str, Vec<&str>)> = Vec::new();
    for entry in trajectory
        .audit
        .iter()
        .filter(|entry| entry.reached_service())
    {
        match services
            .iter_mut()
            .find(|(service, _)| *service == entry.service)
        {
            Some((_, actions)) => actions.push(&entry.action),
            None => services.push((&entry.service, vec![&entry.action])),
        }
    }
    if services.is_empty() {
        return "(no tool calls)".into();
    }
    services
        .iter()
        .map(|(service, actions)| {
            format!(
                "{service}: {} ({} calls)",
                actions.join(", "),
                actions.len()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Reads a judge's reply: a JSON object with `score` (fences and prose around it tolerated),
/// else the first number in the text. The score is clamped to [0, 1]. A reply with no number
/// at all is an error, never a default score.
pub(crate) fn parse_reply(reply: &str) -> Result<JudgeAnswer, NoScore> {
    if let (Some(start), Some(end)) = (reply.find('{'), reply.rfind('}'))
        && start < end
        && let Ok(value) = serde_json::from_str::<serde_json::Value>(&reply[start..=end])
    {
        let score = value.get("score").and_then(|score| {
            score
                .as_f64()
                .or_else(|| score.as_str().and_then(|text| text.trim().parse().ok()))
        });
        if let Some(score) = score {
            let reasoning = value
                .get("reasoning")
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
                .to_string();
            return Ok(JudgeAnswer {
                score: score.clamp(0.0, 1.0),
                reasoning,
            });
        }
    }
    let number: String = reply
        .char_indices()
        .find(|(_, character)| character.is_ascii_digit())
        .map(|(start, _)| {
            reply[start..]
                .chars()
                .take_while(|character| character.is_ascii_digit() || *character == '.')
                .collect()
        })
        .unwrap_or_default();
    match number.trim_end_matches('.').parse::<f64>() {
        Ok(score) => Ok(JudgeAnswer {
            score: score.clamp(0.0, 1.0),
            reasoning: reply.trim().to_string(),
        }),
        Err(_) => Err(NoScore {
            start: reply.chars().take(200).collect(),
        }),
    }
}

/// A judge's reply without a number in it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the judge's reply has no score: {start:?}")]
pub(crate) struct NoScore {
    /// The reply's first 200 characters.
    start: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_read_as_json_then_as_a_number_and_clamped() {
        assert_eq!(
            parse_reply("{\"score\": 0.7, \"reasoning\": \"ok\"}").unwrap(),
            JudgeAnswer {
                score: 0.7,
                reasoning: "ok".into()
            }
        );
        assert_eq!(
            parse_reply("```json\n{\"score\": \"0.9\"}\n```")
                .unwrap()
                .score,
            0.9
        );
        assert_eq!(parse_reply("I'd say 0.5 overall.").unwrap().score, 0.5);
        assert_eq!(parse_reply("{\"score\": 3}").unwrap().score, 1.0);
        assert!(parse_reply("no idea").is_err());
    }
}
