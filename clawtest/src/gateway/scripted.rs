//! A scripted model server for tests and examples: speaks OpenAI chat completions
//! (`/v1/chat/completions`) and Anthropic messages (`/v1/messages`), whole or streamed
//! (`"stream": true`), and answers from a [`Script`] instead of a model, so a harness can be
//! driven end to end without one.
//!
//! The answer to a request is the script's turn number *n*, where *n* is the number of
//! assistant messages already in the request's conversation. The server keeps no
//! conversation state, so concurrent trials each get the whole script, and the same request
//! always gets the same answer (recordings of it are reproducible byte for byte).

use std::sync::Mutex;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::http::{Handler, HttpRequest, HttpResponse, Reply, ResponseBody};

/// What the model says, turn by turn.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// The answers, in order: turn *n* answers a conversation with *n* assistant messages.
    pub turns: Vec<ScriptTurn>,
}

/// One answer: tool calls, or a final text.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum ScriptTurn {
    /// The model asks for these tool calls (`tool_calls:` in the script).
    ToolCalls(Vec<ScriptedCall>),
    /// The model's final answer (`text:` in the script).
    Text(String),
}

/// One tool call of a turn.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    /// The tool's name, as the harness offered it.
    pub name: String,
    /// The call's arguments, a JSON object (default `{}`).
    #[serde(default = "empty_object")]
    pub arguments: Value,
}

fn empty_object() -> Value {
    json!({})
}

impl Script {
    /// Reads a script from YAML (or JSON) text.
    pub fn parse(text: &str) -> Result<Script, String> {
        serde_saphyr::from_str(text).map_err(|error| error.to_string())
    }
}

/// The server: a [`Handler`] to serve with [`crate::http::serve`].
#[derive(Debug)]
pub struct ScriptedModel {
    script: Script,
    /// Statuses to answer with before answering normally (to exercise retries).
    failures: Mutex<Vec<u16>>,
}

impl ScriptedModel {
    /// A server that answers from `script`, with no failures first.
    pub fn new(script: Script) -> ScriptedModel {
        ScriptedModel {
            script,
            failures: Mutex::default(),
        }
    }

    /// Answers the next requests with these statuses, in order, before answering normally.
    pub fn failing_first(self, statuses: &[u16]) -> ScriptedModel {
        *self
            .failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = statuses.to_vec();
        self
    }

    fn next_failure(&self) -> Option<u16> {
        let mut failures = self
            .failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        (!failures.is_empty()).then(|| failures.remove(0))
    }

    /// The answer to one request.
    pub fn answer(&self, path: &str, body: &[u8]) -> HttpResponse {
        if let Some(status) = self.next_failure() {
            return HttpResponse::json(
                status,
                &json!({"error": {"type": "scripted_failure", "message": "scripted failure"}}),
            );
        }
        let Ok(request) = serde_json::from_slice::<Value>(body) else {
            return error(400, "the request body is not JSON");
        };
        let anthropic = match path {
            "/v1/messages" => true,
            "/v1/chat/completions" => false,
            other => return error(404, &format!("the scripted model does not serve {other}")),
        };
        let messages = request["messages"].as_array().cloned().unwrap_or_default();
        let turn_index = messages
            .iter()
            .filter(|message| message["role"] == "assistant")
            .count();
        let Some(turn) = self.script.turns.get(turn_index) else {
            return error(
                400,
                &format!(
                    "the script has {} turn(s); the conversation asks for turn {}",
                    self.script.turns.len(),
                    turn_index + 1
                ),
            );
        };
        let model = request["model"].as_str().unwrap_or("scripted").to_string();
        // Deterministic stand-ins for token counts: about four characters a token.
        let input_tokens = (body.len() / 4) as u64;
        let output_tokens = (serde_json::to_string(&turn_text(turn))
            .unwrap_or_default()
            .len()
            / 4) as u64
            + 1;
        let answer = Answer {
            turn_index,
            turn,
            model: &model,
            input_tokens,
            output_tokens,
        };
        let streamed = request["stream"] == true;
        match (anthropic, streamed) {
            (false, false) => HttpResponse::json(200, &answer.openai()),
            (true, false) => HttpResponse::json(200, &answer.anthropic()),
            (false, true) => events(answer.openai_events()),
            (true, true) => events(answer.anthropic_events()),
        }
    }
}

fn turn_text(turn: &ScriptTurn) -> Value {
    match turn {
        ScriptTurn::Text(text) => json!(text),
        ScriptTurn::ToolCalls(calls) => json!(
            calls
                .iter()
                .map(|call| json!([call.name, call.arguments]))
                .collect::<Vec<_>>()
        ),
    }
}

fn error(status: u16, message: &str) -> HttpResponse {
    HttpResponse::json(
        status,
        &json!({"error": {"type": "invalid_request_error", "message": message}}),
    )
}

fn events(events: Vec<String>) -> HttpResponse {
    let (sender, receiver) = tokio::sync::mpsc::channel(events.len().max(1));
    for event in events {
        // The channel holds every event: this never waits or fails.
        let _ = sender.try_send(event.into());
    }
    HttpResponse {
        status: 200,
        headers: vec![("content-type".into(), "text/event-stream".into())],
        body: ResponseBody::Chunks(receiver),
    }
}

fn data(value: &Value) -> String {
    format!("data: {value}\n\n")
}

fn named(name: &str, value: &Value) -> String {
    format!("event: {name}\ndata: {value}\n\n")
}

struct Answer<'a> {
    turn_index: usize,
    turn: &'a ScriptTurn,
    model: &'a str,
    input_tokens: u64,
    output_tokens: u64,
}

impl Answer<'_> {
    fn call_id(&self, index: usize, prefix: &str) -> String {
        format!("{prefix}_{}_{index}", self.turn_index + 1)
    }

    fn openai_tool_calls(&self, calls: &[ScriptedCall]) -> Vec<Value> {
        calls
            .iter()
            .enumerate()
            .map(|(index, call)| {
                json!({"id": self.call_id(index, "call"), "type": "function",
                       "function": {"name": call.name, "arguments": call.arguments.to_string()}})
            })
            .collect()
    }

    fn openai(&self) -> Value {
        let (message, finish) = match self.turn {
            ScriptTurn::Text(text) => (json!({"role": "assistant", "content": text}), "stop"),
            ScriptTurn::ToolCalls(calls) => (
                json!({"role": "assistant", "content": null, "tool_calls": self.openai_tool_calls(calls)}),
                "tool_calls",
            ),
        };
        json!({
            "id": format!("chatcmpl-scripted-{}", self.turn_index + 1),
            "object": "chat.completion",
            "created": 0,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": self.input_tokens, "completion_tokens": self.output_tokens,
                      "total_tokens": self.input_tokens + self.output_tokens},
        })
    }

    fn openai_events(&self) -> Vec<String> {
        let id = format!("chatcmpl-scripted-{}", self.turn_index + 1);
        let chunk = |delta: Value, finish: Value| {
            data(
                &json!({"id": id, "object": "chat.completion.chunk", "created": 0, "model": self.model,
                          "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
            )
        };
        let mut events = vec![chunk(
            json!({"role": "assistant", "content": ""}),
            Value::Null,
        )];
        let finish = match self.turn {
            ScriptTurn::Text(text) => {
                for piece in pieces(text) {
                    events.push(chunk(json!({"content": piece}), Value::Null));
                }
                "stop"
            }
            ScriptTurn::ToolCalls(calls) => {
                for (index, tool_call) in self.openai_tool_calls(calls).into_iter().enumerate() {
                    let mut tool_call = tool_call;
                    tool_call["index"] = json!(index);
                    events.push(chunk(json!({"tool_calls": [tool_call]}), Value::Null));
                }
                "tool_calls"
            }
        };
        events.push(chunk(json!({}), json!(finish)));
        events.push(data(&json!({"id": id, "object": "chat.completion.chunk", "created": 0, "model": self.model, "choices": [],
            "usage": {"prompt_tokens": self.input_tokens, "completion_tokens": self.output_tokens,
                      "total_tokens": self.input_tokens + self.output_tokens}})));
        events.push("data: [DONE]\n\n".into());
        events
    }

    fn anthropic_content(&self) -> (Vec<Value>, &'static str) {
        match self.turn {
            ScriptTurn::Text(text) => (vec![json!({"type": "text", "text": text})], "end_turn"),
            ScriptTurn::ToolCalls(calls) => (
                calls
                    .iter()
                    .enumerate()
                    .map(|(index, call)| {
                        json!({"type": "tool_use", "id": self.call_id(index, "toolu"),
                               "name": call.name, "input": call.arguments})
                    })
                    .collect(),
                "tool_use",
            ),
        }
    }

    fn anthropic(&self) -> Value {
        let (content, stop) = self.anthropic_content();
        json!({
            "id": format!("msg_scripted_{}", self.turn_index + 1),
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": null,
            "usage": {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens},
        })
    }

    fn anthropic_events(&self) -> Vec<String> {
        let (content, stop) = self.anthropic_content();
        let mut events = vec![named(
            "message_start",
            &json!({"type": "message_start", "message": {
                "id": format!("msg_scripted_{}", self.turn_index + 1), "type": "message", "role": "assistant",
                "model": self.model, "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": self.input_tokens, "output_tokens": 1}}}),
        )];
        for (index, block) in content.iter().enumerate() {
            let (start, deltas) = if block["type"] == "text" {
                let text = block["text"].as_str().unwrap_or_default();
                (
                    json!({"type": "text", "text": ""}),
                    pieces(text)
                        .into_iter()
                        .map(|piece| json!({"type": "text_delta", "text": piece}))
                        .collect::<Vec<_>>(),
                )
            } else {
                (
                    json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                    vec![
                        json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
                    ],
                )
            };
            events.push(named(
                "content_block_start",
                &json!({"type": "content_block_start", "index": index, "content_block": start}),
            ));
            for delta in deltas {
                events.push(named(
                    "content_block_delta",
                    &json!({"type": "content_block_delta", "index": index, "delta": delta}),
                ));
            }
            events.push(named(
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": index}),
            ));
        }
        events.push(named(
            "message_delta",
            &json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
                    "usage": {"output_tokens": self.output_tokens}}),
        ));
        events.push(named("message_stop", &json!({"type": "message_stop"})));
        events
    }
}

/// A text in a few pieces, as a streaming model sends it (split after spaces).
fn pieces(text: &str) -> Vec<String> {
    let mut pieces: Vec<String> = text.split_inclusive(' ').map(str::to_string).collect();
    if pieces.is_empty() {
        pieces.push(String::new());
    }
    pieces
}

impl Handler for ScriptedModel {
    fn handle(&self, request: HttpRequest) -> Reply<'_> {
        Box::pin(async move { self.answer(&request.path, &request.body) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> ScriptedModel {
        ScriptedModel::new(
            Script::parse(
                "turns:\n  - tool_calls:\n      - name: list_tasks\n        arguments: {status: open}\n  - text: All done now\n",
            )
            .unwrap(),
        )
    }

    fn whole(response: HttpResponse) -> Value {
        match response.body {
            ResponseBody::Whole(bytes) => serde_json::from_slice(&bytes).unwrap(),
            ResponseBody::Chunks(_) => panic!("expected a whole body"),
        }
    }

    fn streamed(response: HttpResponse) -> Vec<String> {
        match response.body {
            ResponseBody::Chunks(mut receiver) => {
                let mut events = Vec::new();
                while let Ok(bytes) = receiver.try_recv() {
                    events.push(String::from_utf8(bytes.to_vec()).unwrap());
                }
                events
            }
            ResponseBody::Whole(_) => panic!("expected a stream"),
        }
    }

    #[test]
    fn the_turn_follows_the_assistant_messages_of_the_conversation() {
        let first = whole(model().answer(
            "/v1/chat/completions",
            br#"{"model":"m","messages":[{"role":"user","content":"go"}]}"#,
        ));
        let call = &first["choices"][0]["message"]["tool_calls"][0];
        assert_eq!(call["function"]["name"], "list_tasks");
        assert_eq!(call["function"]["arguments"], r#"{"status":"open"}"#);
        let second = whole(model().answer(
            "/v1/chat/completions",
            br#"{"model":"m","messages":[{"role":"user","content":"go"},{"role":"assistant","content":null},{"role":"tool","content":"[]"}]}"#,
        ));
        assert_eq!(second["choices"][0]["message"]["content"], "All done now");
        assert_eq!(second["choices"][0]["finish_reason"], "stop");
    }

    #[test]
    fn anthropic_messages_get_tool_use_blocks() {
        let answer = whole(model().answer(
            "/v1/messages",
            br#"{"model":"claude","max_tokens":10,"messages":[{"role":"user","content":"go"}]}"#,
        ));
        assert_eq!(answer["content"][0]["type"], "tool_use");
        assert_eq!(answer["content"][0]["input"]["status"], "open");
        assert_eq!(answer["stop_reason"], "tool_use");
    }

    #[test]
    fn streams_carry_the_text_and_the_usage() {
        let events = streamed(model().answer(
            "/v1/messages",
            br#"{"model":"claude","stream":true,"messages":[{"role":"user","content":"go"},{"role":"assistant","content":"x"}]}"#,
        ));
        assert!(events[0].starts_with("event: message_start\n"));
        assert!(events.last().unwrap().starts_with("event: message_stop\n"));
        let text: String = events
            .iter()
            .filter_map(|event| event.split("data: ").nth(1))
            .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
            .filter_map(|value| value["delta"]["text"].as_str().map(str::to_string))
            .collect();
        assert_eq!(text, "All done now");
        assert!(crate::gateway::usage::of_events(&events).output > 0);
        let openai = streamed(model().answer(
            "/v1/chat/completions",
            br#"{"model":"m","stream":true,"messages":[]}"#,
        ));
        assert_eq!(openai.last().unwrap(), "data: [DONE]\n\n");
    }

    #[test]
    fn scripted_failures_come_first() {
        let model = model().failing_first(&[429]);
        assert_eq!(model.answer("/v1/chat/completions", b"{}").status, 429);
        assert_eq!(model.answer("/v1/chat/completions", b"{}").status, 200);
    }

    #[test]
    fn a_conversation_longer_than_the_script_is_refused() {
        let response = model().answer(
            "/v1/chat/completions",
            br#"{"messages":[{"role":"assistant"},{"role":"assistant"}]}"#,
        );
        assert_eq!(response.status, 400);
    }
}
