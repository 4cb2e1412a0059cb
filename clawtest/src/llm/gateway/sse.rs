//! Server-sent events: a streamed answer cut into its events, whatever the network's
//! chunking, so the log and the cassette keep them one by one; and a whole answer turned
//! into the events its provider would have streamed for it (a streaming client replayed
//! from a whole recording, e.g. a hand-written cassette).

use serde_json::{Value, json};

/// Cuts a byte stream into server-sent events (each ending with its blank line), whatever the
/// network's chunking.
#[derive(Default)]
pub(super) struct EventSplitter {
    pending: Vec<u8>,
    events: Vec<String>,
}

impl EventSplitter {
    pub(super) fn push(&mut self, data: &[u8]) {
        self.pending.extend_from_slice(data);
        while let Some(end) = event_end(&self.pending) {
            let event: Vec<u8> = self.pending.drain(..end).collect();
            self.events
                .push(String::from_utf8_lossy(&event).into_owned());
        }
    }

    pub(super) fn finish(mut self) -> Vec<String> {
        if !self.pending.is_empty() {
            self.events
                .push(String::from_utf8_lossy(&self.pending).into_owned());
        }
        self.events
    }
}

/// The end (exclusive) of the first complete event: after `\n\n` or `\r\n\r\n`.
fn event_end(bytes: &[u8]) -> Option<usize> {
    let lf = bytes
        .windows(2)
        .position(|window| window == b"\n\n")
        .map(|at| at + 2);
    let crlf = bytes
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .map(|at| at + 4);
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// What a complete stream of endpoint `path` ends with, when `events` lacks it: a stream cut
/// short (the server died, a proxy timed out) ends without error on the wire, and recorded it
/// would replay as a whole, wrong answer forever. `None` when the stream is complete, or when
/// the endpoint is not one whose terminator clawtest knows.
pub(super) fn missing_terminator(path: &str, events: &[String]) -> Option<&'static str> {
    let (wanted, description): (&[&str], &'static str) = match path {
        "/v1/chat/completions" | "/v1/completions" => (&["[DONE]"], "`data: [DONE]`"),
        "/v1/messages" => (&["message_stop"], "a `message_stop` event"),
        "/v1/responses" => (
            &[
                "response.completed",
                "response.incomplete",
                "response.failed",
            ],
            "a `response.completed` event",
        ),
        _ => return None,
    };
    let ends = events
        .iter()
        .flat_map(|event| event_names(event))
        .any(|name| wanted.contains(&name.as_str()));
    (!ends).then_some(description)
}

/// What an event calls itself: its `event:` name, the `type` of its JSON data, or a data line
/// that is not JSON (OpenAI's `[DONE]`).
fn event_names(event: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line in event.lines() {
        if let Some(name) = line.strip_prefix("event:") {
            names.push(name.trim().to_string());
        } else if let Some(data) = line.strip_prefix("data:") {
            let data = data.trim();
            match serde_json::from_str::<Value>(data) {
                Ok(value) => names.extend(value["type"].as_str().map(str::to_string)),
                Err(_) => names.push(data.to_string()),
            }
        }
    }
    names
}

/// The events a provider streams for the whole answer `body` of endpoint `path`, or why
/// there are none (said as the end of a sentence).
pub(super) fn events_of_whole(path: &str, body: &Value) -> Result<Vec<String>, String> {
    match path {
        "/v1/chat/completions" => chat_completion_events(body),
        "/v1/messages" => Ok(message_events(body)),
        other => Err(format!("clawtest cannot turn into a stream for {other}")),
    }
}

fn data(value: &Value) -> String {
    format!("data: {value}\n\n")
}

/// One named server-sent event.
pub(super) fn named(name: &str, value: &Value) -> String {
    format!("event: {name}\ndata: {value}\n\n")
}

/// OpenAI chat completion chunks: per choice the role, the text, the tool calls, the finish
/// reason; then the usage and `[DONE]`.
fn chat_completion_events(body: &Value) -> Result<Vec<String>, String> {
    let choices = body["choices"]
        .as_array()
        .ok_or("has no `choices` (it is not a chat completion)")?;
    let chunk = |choices: Value, usage: Option<&Value>| {
        let mut chunk = json!({"id": body["id"], "object": "chat.completion.chunk",
            "created": body["created"], "model": body["model"], "choices": choices});
        if let Some(usage) = usage {
            chunk["usage"] = usage.clone();
        }
        data(&chunk)
    };
    let mut events = Vec::new();
    for choice in choices {
        let index = &choice["index"];
        let message = &choice["message"];
        let delta = |delta: Value, finish: &Value| {
            chunk(
                json!([{"index": index, "delta": delta, "finish_reason": finish}]),
                None,
            )
        };
        events.push(delta(
            json!({"role": "assistant", "content": ""}),
            &Value::Null,
        ));
        if let Some(text) = message["content"].as_str().filter(|text| !text.is_empty()) {
            events.push(delta(json!({"content": text}), &Value::Null));
        }
        for (position, call) in message["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let mut call = call.clone();
            call["index"] = json!(position);
            events.push(delta(json!({"tool_calls": [call]}), &Value::Null));
        }
        events.push(delta(json!({}), &choice["finish_reason"]));
    }
    if !body["usage"].is_null() {
        events.push(chunk(json!([]), Some(&body["usage"])));
    }
    events.push("data: [DONE]\n\n".into());
    Ok(events)
}

/// Anthropic message events: `message_start`, each content block's start, delta and stop,
/// `message_delta` with the stop reason and usage, `message_stop`.
fn message_events(body: &Value) -> Vec<String> {
    let mut start = body.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    start["stop_sequence"] = Value::Null;
    let mut events = vec![named(
        "message_start",
        &json!({"type": "message_start", "message": start}),
    )];
    for (index, block) in body["content"].as_array().into_iter().flatten().enumerate() {
        let (opening, delta) = match block["type"].as_str() {
            Some("text") => (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": block["text"]}),
            ),
            Some("tool_use") => (
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
            ),
            Some("thinking") => (
                json!({"type": "thinking", "thinking": ""}),
                json!({"type": "thinking_delta", "thinking": block["thinking"]}),
            ),
            _ => (block.clone(), Value::Null),
        };
        events.push(named(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": opening}),
        ));
        if !delta.is_null() {
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
        &json!({"type": "message_delta", "delta": {"stop_reason": body["stop_reason"],
            "stop_sequence": body["stop_sequence"]}, "usage": {"output_tokens": body["usage"]["output_tokens"]}}),
    ));
    events.push(named("message_stop", &json!({"type": "message_stop"})));
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_cut_at_blank_lines_whatever_the_chunking() {
        let mut splitter = EventSplitter::default();
        splitter.push(b"data: 1\n");
        splitter.push(b"\ndata: 2\r\n\r\nda");
        splitter.push(b"ta: 3\n\n");
        assert_eq!(
            splitter.finish(),
            vec!["data: 1\n\n", "data: 2\r\n\r\n", "data: 3\n\n"]
        );
    }

    /// The data of each event, parsed.
    fn payloads(events: &[String]) -> Vec<Value> {
        events
            .iter()
            .filter_map(|event| event.lines().find_map(|line| line.strip_prefix("data: ")))
            .filter_map(|data| serde_json::from_str(data).ok())
            .collect()
    }

    #[test]
    fn a_whole_chat_completion_streams_as_its_chunks() {
        let body = json!({"id": "c1", "created": 0, "model": "m", "choices": [{"index": 0,
            "message": {"role": "assistant", "content": "Hi there", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 5, "completion_tokens": 2}});
        let events = events_of_whole("/v1/chat/completions", &body).unwrap();
        assert_eq!(events.last().unwrap(), "data: [DONE]\n\n");
        let chunks = payloads(&events);
        let text: String = chunks
            .iter()
            .filter_map(|chunk| chunk["choices"][0]["delta"]["content"].as_str())
            .collect();
        assert_eq!(text, "Hi there");
        assert!(
            chunks.iter().any(
                |chunk| chunk["choices"][0]["delta"]["tool_calls"][0]["function"]["name"] == "f"
            )
        );
        assert!(
            chunks
                .iter()
                .any(|chunk| chunk["choices"][0]["finish_reason"] == "tool_calls")
        );
        assert_eq!(
            crate::llm::gateway::usage::of_events(&events)
                .unwrap_or_default()
                .input,
            5
        );
    }

    #[test]
    fn a_stream_is_complete_only_with_its_endpoints_terminator() {
        let chat = events_of_whole(
            "/v1/chat/completions",
            &json!({"id": "c", "created": 1, "model": "m", "choices": [{"index": 0,
                "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]}),
        )
        .unwrap();
        assert_eq!(missing_terminator("/v1/chat/completions", &chat), None);
        let cut = &chat[..chat.len() - 1];
        assert_eq!(
            missing_terminator("/v1/chat/completions", cut),
            Some("`data: [DONE]`")
        );
        let message = message_events(
            &json!({"id": "m", "model": "c", "content": [{"type": "text", "text": "hi"}],
            "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}}),
        );
        assert_eq!(missing_terminator("/v1/messages", &message), None);
        assert_eq!(
            missing_terminator("/v1/messages", &message[..message.len() - 1]),
            Some("a `message_stop` event")
        );
        // The Responses API names its events in the data's `type` as well as the event line.
        let completed = vec![
            "event: response.created\ndata: {\"type\":\"response.created\"}\n\n".to_string(),
            "data: {\"type\":\"response.completed\",\"response\":{}}\n\n".to_string(),
        ];
        assert_eq!(missing_terminator("/v1/responses", &completed), None);
        assert_eq!(
            missing_terminator("/v1/responses", &completed[..1]),
            Some("a `response.completed` event")
        );
        assert_eq!(missing_terminator("/v1/embeddings", &[]), None);
    }

    #[test]
    fn a_whole_message_streams_as_its_events() {
        let body = json!({"id": "m1", "type": "message", "role": "assistant", "model": "c",
            "content": [{"type": "text", "text": "Done"}, {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}}],
            "stop_reason": "tool_use", "stop_sequence": null, "usage": {"input_tokens": 7, "output_tokens": 3}});
        let events = events_of_whole("/v1/messages", &body).unwrap();
        assert!(events[0].starts_with("event: message_start\n"));
        assert!(events.last().unwrap().starts_with("event: message_stop\n"));
        let payloads = payloads(&events);
        assert!(payloads.iter().any(|p| p["delta"]["text"] == "Done"));
        assert!(
            payloads
                .iter()
                .any(|p| p["delta"]["partial_json"] == "{\"a\":1}")
        );
        assert!(
            payloads
                .iter()
                .any(|p| p["delta"]["stop_reason"] == "tool_use")
        );
        let tokens = crate::llm::gateway::usage::of_events(&events).unwrap_or_default();
        assert_eq!((tokens.input, tokens.output), (7, 3));
        assert!(events_of_whole("/v1/responses", &body).is_err());
    }
}
