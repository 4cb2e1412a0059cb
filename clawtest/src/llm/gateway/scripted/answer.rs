//! The scripted model's answers in each wire format: OpenAI chat completions, OpenAI
//! responses and Anthropic messages, whole or as the events the provider streams.

use serde_json::{Value, json};

use super::{ScriptTurn, ScriptedCall};
use crate::llm::gateway::sse::named;

pub(super) struct Answer<'a> {
    /// The model turns already in the conversation: the answer's ids are numbered by it, so
    /// a repeated script turn (`retry_on`) gets ids of its own.
    pub(super) turn_index: usize,
    pub(super) turn: &'a ScriptTurn,
    pub(super) model: &'a str,
    pub(super) input_tokens: u64,
    pub(super) output_tokens: u64,
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

    pub(super) fn openai(&self) -> Value {
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

    /// The chat completion as the provider streams it (`sse.rs` makes the chunks).
    /// As OpenAI does, the usage chunk comes only when the request asked for it
    /// (`stream_options.include_usage`).
    pub(super) fn openai_events(&self, include_usage: bool) -> Vec<String> {
        let mut whole = self.openai();
        if !include_usage {
            whole["usage"] = Value::Null;
        }
        crate::llm::gateway::sse::events_of_whole("/v1/chat/completions", &whole)
            .unwrap_or_default()
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

    pub(super) fn anthropic(&self) -> Value {
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

    /// The message as Anthropic streams it (`sse.rs` makes the events).
    pub(super) fn anthropic_events(&self) -> Vec<String> {
        crate::llm::gateway::sse::events_of_whole("/v1/messages", &self.anthropic())
            .unwrap_or_default()
    }
}

/// The OpenAI Responses API: output items (an assistant message with `output_text`, or one
/// `function_call` per tool call) and their stream of typed events.
impl Answer<'_> {
    fn response_id(&self) -> String {
        format!("resp_scripted_{}", self.turn_index + 1)
    }

    fn responses_output(&self) -> Vec<Value> {
        match self.turn {
            ScriptTurn::Text(text) => vec![json!({
                "type": "message", "id": format!("msg_scripted_{}", self.turn_index + 1),
                "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}]})],
            ScriptTurn::ToolCalls(calls) => calls
                .iter()
                .enumerate()
                .map(|(index, call)| {
                    json!({"type": "function_call", "id": self.call_id(index, "fc"),
                           "call_id": self.call_id(index, "call"), "name": call.name,
                           "arguments": call.arguments.to_string(), "status": "completed"})
                })
                .collect(),
        }
    }

    fn response(&self, status: &str, output: Vec<Value>) -> Value {
        json!({
            "id": self.response_id(), "object": "response", "created_at": 0,
            "status": status, "model": self.model, "output": output,
            "usage": {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                      "total_tokens": self.input_tokens + self.output_tokens},
        })
    }

    pub(super) fn responses(&self) -> Value {
        self.response("completed", self.responses_output())
    }

    pub(super) fn responses_events(&self) -> Vec<String> {
        let mut events = Vec::new();
        let mut push = |mut event: Value| {
            event["sequence_number"] = json!(events.len());
            let kind = event["type"].as_str().unwrap_or_default().to_string();
            events.push(named(&kind, &event));
        };
        let mut created = self.response("in_progress", Vec::new());
        created["usage"] = Value::Null;
        push(json!({"type": "response.created", "response": created}));
        for (index, item) in self.responses_output().into_iter().enumerate() {
            let mut opening = item.clone();
            opening["status"] = json!("in_progress");
            if item["type"] == "message" {
                opening["content"] = json!([]);
            } else {
                opening["arguments"] = json!("");
            }
            push(
                json!({"type": "response.output_item.added", "output_index": index, "item": opening}),
            );
            let id = &item["id"];
            if item["type"] == "message" {
                let text = item["content"][0]["text"].as_str().unwrap_or_default();
                let part =
                    |text: &str| json!({"type": "output_text", "text": text, "annotations": []});
                push(
                    json!({"type": "response.content_part.added", "item_id": id, "output_index": index, "content_index": 0, "part": part("")}),
                );
                for piece in pieces(text) {
                    push(
                        json!({"type": "response.output_text.delta", "item_id": id, "output_index": index, "content_index": 0, "delta": piece}),
                    );
                }
                push(
                    json!({"type": "response.output_text.done", "item_id": id, "output_index": index, "content_index": 0, "text": text}),
                );
                push(
                    json!({"type": "response.content_part.done", "item_id": id, "output_index": index, "content_index": 0, "part": part(text)}),
                );
            } else {
                let arguments = &item["arguments"];
                push(
                    json!({"type": "response.function_call_arguments.delta", "item_id": id, "output_index": index, "delta": arguments}),
                );
                push(
                    json!({"type": "response.function_call_arguments.done", "item_id": id, "output_index": index, "arguments": arguments}),
                );
            }
            push(json!({"type": "response.output_item.done", "output_index": index, "item": item}));
        }
        push(json!({"type": "response.completed", "response": self.responses()}));
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
