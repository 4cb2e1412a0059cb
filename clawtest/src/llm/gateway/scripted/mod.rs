//! The scripted model (`cargo clawtest model`, docs/cassettes.md#the-scripted-model): speaks
//! OpenAI chat completions (`/v1/chat/completions`), OpenAI responses (`/v1/responses`) and
//! Anthropic messages (`/v1/messages`), whole or streamed (`"stream": true`), and answers from
//! a [`Script`] instead of a model, so a harness can be driven end to end without one: to
//! record cassettes without a provider key, and in an agent's own deterministic tests.
//! Reading scripts is `load.rs`, serving them with a log is `serve.rs`, the wire formats are
//! `answer.rs`.
//!
//! **The turn rule.** The answer to a request is the script's turn number *n* (from 0),
//! where *n* is the number of model turns already in the request's conversation: assistant
//! messages (chat completions, messages), or runs of consecutive model items (`function_call`,
//! `reasoning`, assistant messages) in a responses `input`. The server keeps no conversation
//! state, so concurrent trials each get the whole script, and the same request always gets
//! the same answer (recordings of it are reproducible byte for byte). A conversation past
//! the script's end, or a responses request that relies on server state
//! (`previous_response_id`), is answered 400 with the reason. A script with `retry_on`
//! reacts to errors as a model does: a turn whose tool results contain one of those texts
//! is answered again with the same calls (up to 3 times in a row; `turns.rs`), so an agent
//! that hands a failed call back to its model (as MCP clients and agent frameworks do) can
//! be recorded under faults.
//!
//! **Several scripts.** A server may hold several scripts (a folder of them, one per task):
//! each request is answered from the first script, in file-name order, whose
//! `prompt_contains` text occurs in one of the conversation's user or system messages (or
//! `instructions`), else from the one script without `prompt_contains`; a request no script
//! claims is answered 400 naming the scripts.

mod answer;
mod load;
mod serve;
mod turns;

#[cfg(any(test, feature = "testing"))]
use std::sync::Mutex;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::http::{Handler, HttpRequest, HttpResponse, Reply, ResponseBody};
use answer::Answer;
pub use load::ScriptError;
pub use serve::{DEFAULT_PORT, ModelServeError, serve_scripts};

/// What the model says, turn by turn.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// With several scripts: this one answers conversations whose user or system messages
    /// contain this text (e.g. a phrase of the task's prompt).
    #[serde(default)]
    pub prompt_contains: Option<String>,
    /// The answers, in order: turn *n* answers a conversation with *n* model turns.
    pub turns: Vec<ScriptTurn>,
    /// Texts that mark a tool result as failed (e.g. `rate_limit_exceeded`): a turn whose
    /// results contain one is answered again with the same calls, as a model retries.
    #[serde(default)]
    pub retry_on: Vec<String>,
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

/// Which wire format a request speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    ChatCompletions,
    Responses,
    Messages,
}

/// The server: a [`Handler`] to serve with [`crate::http::serve`].
#[derive(Debug)]
pub struct ScriptedModel {
    /// (name, script), in name order.
    scripts: Vec<(String, Script)>,
    /// Statuses to answer with before answering normally (to exercise retries; tests only).
    #[cfg(any(test, feature = "testing"))]
    failures: Mutex<Vec<u16>>,
}

impl ScriptedModel {
    /// A server that answers from `script`, with no failures first.
    pub fn new(script: Script) -> ScriptedModel {
        ScriptedModel::with_scripts(vec![("script".into(), script)])
    }

    /// A server with several scripts, each chosen by its `prompt_contains`.
    pub fn with_scripts(mut scripts: Vec<(String, Script)>) -> ScriptedModel {
        scripts.sort_by(|a, b| a.0.cmp(&b.0));
        ScriptedModel {
            scripts,
            #[cfg(any(test, feature = "testing"))]
            failures: Mutex::default(),
        }
    }

    /// How many scripts the server holds.
    pub fn scripts(&self) -> usize {
        self.scripts.len()
    }

    /// Answers the next requests with these statuses, in order, before answering normally
    /// (for tests of a client's retries, not part of the shipped model).
    #[cfg(any(test, feature = "testing"))]
    pub fn failing_first(self, statuses: &[u16]) -> ScriptedModel {
        *self
            .failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = statuses.to_vec();
        self
    }

    #[cfg(any(test, feature = "testing"))]
    fn next_failure(&self) -> Option<u16> {
        let mut failures = self
            .failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        (!failures.is_empty()).then(|| failures.remove(0))
    }

    /// The script that answers `request`, with its name.
    fn script_for(&self, request: &Value) -> Result<(&str, &Script), Refusal> {
        if let [(name, only)] = self.scripts.as_slice() {
            return Ok((name, only));
        }
        let mut texts = Vec::new();
        for field in ["messages", "input", "system", "instructions"] {
            prompt_texts(&request[field], &mut texts);
        }
        let claimed = self.scripts.iter().find(|(_, script)| {
            script
                .prompt_contains
                .as_deref()
                .is_some_and(|wanted| texts.iter().any(|text| text.contains(wanted)))
        });
        claimed
            .or_else(|| {
                self.scripts
                    .iter()
                    .find(|(_, script)| script.prompt_contains.is_none())
            })
            .map(|(name, script)| (name.as_str(), script))
            .ok_or_else(|| {
                Refusal::bad_request(format!(
                    "no script claims this conversation: {}; fix: set one script's `prompt_contains` to a phrase of this task's prompt, or leave it out of one script to answer every other conversation",
                    self.scripts
                        .iter()
                        .map(|(name, script)| format!(
                            "{name} wants {:?}",
                            script.prompt_contains.as_deref().unwrap_or_default()
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
    }

    /// The answer to one request: the response, whether it answers or refuses.
    pub fn answer(&self, path: &str, body: &[u8]) -> HttpResponse {
        match self.respond(path, body) {
            Ok((response, _)) => response,
            Err(refusal) => refusal.response(),
        }
    }

    /// The answer to one request and which turn of which script gave it, or why the request
    /// is refused.
    pub(crate) fn respond(
        &self,
        path: &str,
        body: &[u8],
    ) -> Result<(HttpResponse, Served), Refusal> {
        #[cfg(any(test, feature = "testing"))]
        if let Some(status) = self.next_failure() {
            return Err(Refusal {
                status,
                kind: "scripted_failure",
                message: "scripted failure".into(),
            });
        }
        let Ok(request) = serde_json::from_slice::<Value>(body) else {
            return Err(Refusal::bad_request("the request body is not JSON".into()));
        };
        let format = match path {
            "/v1/messages" => Format::Messages,
            "/v1/chat/completions" => Format::ChatCompletions,
            "/v1/responses" => Format::Responses,
            other => {
                return Err(Refusal {
                    status: 404,
                    kind: "invalid_request_error",
                    message: format!(
                        "the scripted model does not serve {other}: it serves /v1/chat/completions, /v1/responses and /v1/messages"
                    ),
                });
            }
        };
        if format == Format::Responses && !request["previous_response_id"].is_null() {
            return Err(Refusal::bad_request(
                "the scripted model keeps no state: send the whole conversation as `input` instead of previous_response_id".into(),
            ));
        }
        let (script_name, script) = self.script_for(&request)?;
        let position = turns::position(format, &request, &script.retry_on);
        let Some(turn) = script.turns.get(position.script_turn) else {
            return Err(Refusal::bad_request(format!(
                "script {script_name} has {} turn(s); the conversation asks for turn {}; fix: add turns to the script, or end it with a `text:` turn",
                script.turns.len(),
                position.script_turn + 1
            )));
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
            turn_index: position.model_turns,
            turn,
            model: &model,
            input_tokens,
            output_tokens,
        };
        let streamed = request["stream"] == true;
        let response = match (format, streamed) {
            (Format::ChatCompletions, false) => HttpResponse::json(200, &answer.openai()),
            (Format::Messages, false) => HttpResponse::json(200, &answer.anthropic()),
            (Format::Responses, false) => HttpResponse::json(200, &answer.responses()),
            (Format::ChatCompletions, true) => {
                events(answer.openai_events(request["stream_options"]["include_usage"] == true))
            }
            (Format::Messages, true) => events(answer.anthropic_events()),
            (Format::Responses, true) => events(answer.responses_events()),
        };
        let served = Served {
            script: script_name.to_string(),
            turn: position.script_turn + 1,
            turns: script.turns.len(),
            streamed,
        };
        Ok((response, served))
    }
}

/// Which turn of which script answered a request (what `cargo clawtest model` logs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Served {
    /// The script's name (its file stem).
    pub(crate) script: String,
    /// The turn, from 1.
    pub(crate) turn: usize,
    /// The script's number of turns.
    pub(crate) turns: usize,
    /// Whether the answer was streamed.
    pub(crate) streamed: bool,
}

/// Why a request gets no answer from the script: the status and the reason, sent to the
/// client as the provider's error body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) status: u16,
    kind: &'static str,
    pub(crate) message: String,
}

impl Refusal {
    fn bad_request(message: String) -> Refusal {
        Refusal {
            status: 400,
            kind: "invalid_request_error",
            message,
        }
    }

    pub(crate) fn response(&self) -> HttpResponse {
        HttpResponse::json(
            self.status,
            &json!({"error": {"type": self.kind, "message": self.message}}),
        )
    }
}

/// The texts of the user and system messages (and plain strings) of a conversation field.
fn prompt_texts(value: &Value, texts: &mut Vec<String>) {
    match value {
        Value::String(text) => texts.push(text.clone()),
        Value::Array(items) => {
            for item in items {
                if item["role"] != "assistant" {
                    prompt_texts(&item["content"], texts);
                    prompt_texts(&item["text"], texts);
                }
            }
        }
        _ => {}
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
    fn a_script_with_retry_on_calls_a_failed_tool_again_under_a_new_id() {
        let script = Script::parse(
            "retry_on: [rate_limit_exceeded]\nturns:\n  - tool_calls: [{name: list_tasks}]\n  - text: done\n",
        )
        .unwrap();
        let model = ScriptedModel::new(script);
        let failed = whole(model.answer(
            "/v1/chat/completions",
            br#"{"model":"m","messages":[{"role":"user","content":"go"},{"role":"assistant","content":null},{"role":"tool","content":"{\"error\":\"rate_limit_exceeded\"}"}]}"#,
        ));
        let call = &failed["choices"][0]["message"]["tool_calls"][0];
        assert_eq!(call["function"]["name"], "list_tasks");
        assert_eq!(call["id"], "call_2_0");
        let succeeded = whole(model.answer(
            "/v1/chat/completions",
            br#"{"model":"m","messages":[{"role":"user","content":"go"},{"role":"assistant","content":null},{"role":"tool","content":"[]"}]}"#,
        ));
        assert_eq!(succeeded["choices"][0]["message"]["content"], "done");
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
        assert!(
            crate::llm::gateway::usage::of_events(&events)
                .unwrap_or_default()
                .output
                > 0
        );
        let openai = streamed(model().answer(
            "/v1/chat/completions",
            br#"{"model":"m","stream":true,"messages":[]}"#,
        ));
        assert_eq!(openai.last().unwrap(), "data: [DONE]\n\n");
        // As OpenAI, a chat completion stream carries its usage only when asked.
        assert_eq!(crate::llm::gateway::usage::of_events(&openai), None);
        let asked = streamed(model().answer(
            "/v1/chat/completions",
            br#"{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[]}"#,
        ));
        assert!(
            crate::llm::gateway::usage::of_events(&asked).is_some_and(|tokens| tokens.output > 0)
        );
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

    #[test]
    fn responses_get_function_calls_then_text_by_the_turns_in_the_input() {
        let first = whole(model().answer(
            "/v1/responses",
            br#"{"model":"m","input":[{"role":"user","content":"go"}]}"#,
        ));
        assert_eq!(first["output"][0]["type"], "function_call");
        assert_eq!(first["output"][0]["name"], "list_tasks");
        assert_eq!(first["output"][0]["arguments"], r#"{"status":"open"}"#);
        let second = whole(model().answer(
            "/v1/responses",
            br#"{"model":"m","input":[{"role":"user","content":"go"},{"type":"function_call","call_id":"c","name":"list_tasks","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"[]"}]}"#,
        ));
        assert_eq!(second["output"][0]["content"][0]["text"], "All done now");
        assert!(
            crate::llm::gateway::usage::of_body(&second)
                .unwrap_or_default()
                .input
                > 0
        );
        let events = streamed(model().answer(
            "/v1/responses",
            br#"{"model":"m","stream":true,"input":"go"}"#,
        ));
        assert!(
            events[0].starts_with("event: response.created\n"),
            "{events:?}"
        );
        assert!(
            events
                .last()
                .unwrap()
                .starts_with("event: response.completed\n")
        );
        assert!(
            crate::llm::gateway::usage::of_events(&events)
                .unwrap_or_default()
                .output
                > 0
        );
        let stateful = model().answer(
            "/v1/responses",
            br#"{"model":"m","previous_response_id":"resp_1","input":"go"}"#,
        );
        assert_eq!(stateful.status, 400);
    }

    /// A conversation that shows the model an image (an OpenAI `image_url` part after the
    /// tool results, an Anthropic image block in a `tool_result`) is claimed by its prompt and
    /// moves the script on, in both wire formats.
    #[test]
    fn image_parts_in_either_wire_format_are_read_past() {
        let folder = tempfile::tempdir().unwrap();
        std::fs::write(
            folder.path().join("label.yaml"),
            "prompt_contains: the label\nturns:\n  - tool_calls: [{name: read_file, arguments: {path: label.png}}]\n  - text: SHIP-4471\n",
        )
        .unwrap();
        std::fs::write(
            folder.path().join("other.yaml"),
            "turns:\n  - text: other\n",
        )
        .unwrap();
        let model = ScriptedModel::load(folder.path()).unwrap();
        let image = json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}});
        let chat = json!({"model": "m", "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Read the label"}, image]},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "an image"},
            {"role": "user", "content": [{"type": "text", "text": "The image:"}, image]},
        ]});
        let answer = model.answer("/v1/chat/completions", chat.to_string().as_bytes());
        assert_eq!(
            whole(answer)["choices"][0]["message"]["content"],
            "SHIP-4471"
        );
        let block = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}});
        let messages = json!({"model": "m", "max_tokens": 100, "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Read the label"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [block]}]},
        ]});
        let answer = model.answer("/v1/messages", messages.to_string().as_bytes());
        assert_eq!(whole(answer)["content"][0]["text"], "SHIP-4471");
    }

    #[test]
    fn a_folder_of_scripts_answers_each_conversation_from_the_script_that_claims_it() {
        let folder = tempfile::tempdir().unwrap();
        std::fs::write(
            folder.path().join("todo.yaml"),
            "prompt_contains: Review every task\nturns:\n  - text: todo answer\n",
        )
        .unwrap();
        std::fs::write(
            folder.path().join("mail.yaml"),
            "prompt_contains: Reply to Ana\nturns:\n  - text: mail answer\n",
        )
        .unwrap();
        std::fs::write(folder.path().join("notes.txt"), "not a script").unwrap();
        let model = ScriptedModel::load(folder.path()).unwrap();
        assert_eq!(model.scripts(), 2);
        let ask = |prompt: &str| {
            let body = json!({"model": "m", "messages": [{"role": "system", "content": "You help."}, {"role": "user", "content": prompt}]});
            model.answer("/v1/chat/completions", body.to_string().as_bytes())
        };
        assert_eq!(
            whole(ask("Please Reply to Ana today"))["choices"][0]["message"]["content"],
            "mail answer"
        );
        assert_eq!(
            whole(ask("Review every task now"))["choices"][0]["message"]["content"],
            "todo answer"
        );
        let unclaimed = ask("Something else");
        assert_eq!(unclaimed.status, 400);
        let message = whole(unclaimed)["error"]["message"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(message.contains("mail wants \"Reply to Ana\""), "{message}");
        // The reason ends with what to change: the agent's traceback and the model's log show it.
        assert!(
            message.contains(
                "fix: set one script's `prompt_contains` to a phrase of this task's prompt"
            ),
            "{message}"
        );
        std::fs::write(folder.path().join("broken.yaml"), "turns: [{speak: x}]\n").unwrap();
        let error = ScriptedModel::load(folder.path()).unwrap_err().to_string();
        assert!(error.contains("broken.yaml"), "{error}");
    }
}
