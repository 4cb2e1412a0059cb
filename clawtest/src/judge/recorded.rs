//! A re-grade's judge ([`Recorded`]): the answers a trajectory's own judge calls hold. A
//! trial's judge questions are logged in its trajectory with speaker `judge`, so a saved
//! trajectory re-graded against the same rubrics needs neither the judge nor a cache; a
//! question the trajectory never asked (a rubric changed since) goes to the judge behind it.

use super::{Answer, Judge, JudgeError};
use crate::config::Provider;
use crate::grade::judge::{JudgeRequest, parse_reply};
use crate::trajectory::{ModelCall, Speaker};

/// The judge answers of a trajectory's calls, in front of another judge.
pub(crate) struct Recorded<'a> {
    calls: &'a [ModelCall],
    then: &'a dyn Judge,
}

impl<'a> Recorded<'a> {
    /// The answers among `calls`, else `then`'s.
    pub(crate) fn new(calls: &'a [ModelCall], then: &'a dyn Judge) -> Recorded<'a> {
        Recorded { calls, then }
    }

    /// The text a judge call of the trajectory answered `prompt` with, if one asked it.
    fn answered(&self, prompt: &str) -> Option<String> {
        self.calls
            .iter()
            .filter(|call| call.speaker == Speaker::Judge && (200..300).contains(&call.status))
            .find(|call| call.request["messages"][0]["content"].as_str() == Some(prompt))
            .and_then(|call| {
                let provider = match call.path.as_str() {
                    "/v1/messages" => Provider::Anthropic,
                    _ => Provider::OpenAi,
                };
                crate::llm::client::reply_text(provider, &call.response)
            })
    }
}

impl Judge for Recorded<'_> {
    fn answer<'a>(&'a self, request: &'a JudgeRequest) -> Answer<'a> {
        match self.answered(&request.prompt) {
            Some(text) => Box::pin(async move {
                parse_reply(&text).map_err(|error| JudgeError(error.to_string()))
            }),
            None => self.then.answer(request),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::judge::NoJudge;

    fn judge_call(path: &str, prompt: &str, response: serde_json::Value) -> ModelCall {
        ModelCall {
            index: 0,
            path: path.into(),
            request: json!({"model": "m", "messages": [{"role": "user", "content": prompt}]})
                .into(),
            status: 200,
            response: response.into(),
            events: None,
            retried: Vec::new(),
            input_tokens: 0,
            output_tokens: 0,
            cost_usd: None,
            speaker: Speaker::Judge,
        }
    }

    fn request(prompt: &str) -> JudgeRequest {
        JudgeRequest {
            component: "quality".into(),
            rubric: "r".into(),
            prompt: prompt.into(),
            key: "k".into(),
        }
    }

    #[tokio::test]
    async fn a_question_the_trajectory_asked_gets_its_answer_and_another_goes_to_the_judge() {
        let verdict = r#"{"score": 0.4, "reasoning": "half"}"#;
        let calls = [
            judge_call(
                "/v1/chat/completions",
                "asked",
                crate::llm::client::answer_body(Provider::OpenAi, verdict),
            ),
            judge_call(
                "/v1/messages",
                "asked of claude",
                crate::llm::client::answer_body(Provider::Anthropic, verdict),
            ),
        ];
        let judge = Recorded::new(&calls, &NoJudge);
        for prompt in ["asked", "asked of claude"] {
            let answer = judge.answer(&request(prompt)).await.unwrap();
            assert_eq!((answer.score, answer.reasoning.as_str()), (0.4, "half"));
        }
        let error = judge.answer(&request("never asked")).await.unwrap_err();
        assert!(error.0.contains("configure [judge]"), "{error}");
        // The harness's calls are never a judge's answer.
        let mut harness = calls[0].clone();
        harness.speaker = Speaker::Harness;
        let harness = [harness];
        let judge = Recorded::new(&harness, &NoJudge);
        assert!(judge.answer(&request("asked")).await.is_err());
    }
}
