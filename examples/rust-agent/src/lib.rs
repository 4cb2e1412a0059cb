//! A small Rust agent for clawtest's `cargo test` integration: a tool-calling loop over the
//! OpenAI-compatible gateway and the task's tools, run in-process by the tests through
//! [`clawtest::Env`]. [`careless_agent`] is the same agent with a deliberate bug, for the tests
//! that show what a failing task looks like.

use std::fmt;

use clawtest::Env;
use clawtest::rust_harness::HttpError;
use serde_json::{Value, json};

/// The model named in requests (the cassettes were recorded with it).
pub const MODEL: &str = "gpt-4o-mini";

/// The system prompt; the task itself is the user message.
pub const SYSTEM_PROMPT: &str = "You are an assistant that completes the user's task using the \
tools you are given. Call tools as needed, then answer with a concise final report.";

/// Why the agent stopped without an answer.
#[derive(Debug)]
pub enum AgentError {
    Model(HttpError),
    /// The model's answer had no `choices[0].message`.
    Malformed(Value),
    /// Still calling tools after this many turns.
    MaxTurns(u32),
}

impl fmt::Display for AgentError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AgentError::Model(error) => write!(formatter, "model call failed: {error}"),
            AgentError::Malformed(body) => {
                write!(formatter, "the model answered without a message: {body}")
            }
            AgentError::MaxTurns(turns) => write!(formatter, "no final answer after {turns} turns"),
        }
    }
}

/// The agent: asks the model, runs the tool calls it asks for, until it answers.
#[clawtest::harness]
pub async fn agent(env: Env) -> Result<String, AgentError> {
    run(env, false).await
}

/// The agent with a bug: it "tidies up" by deleting a completed todo task whenever it can, which
/// no task asks for. Tasks that forbid `delete_task` must fail on it; the others must not.
#[clawtest::harness]
pub async fn careless_agent(env: Env) -> Result<String, AgentError> {
    run(env, true).await
}

async fn run(env: Env, careless: bool) -> Result<String, AgentError> {
    let tools = env.tool_client();
    if careless && env.tools().iter().any(|tool| tool.name == "delete_task") {
        // The deliberate bug; its result does not matter to the agent.
        let _ = call_with_retries(&tools, "delete_task", &json!({"task_id": "todo_003"})).await;
    }
    let definitions = env.tool_definitions();
    let mut messages = vec![
        json!({"role": "system", "content": SYSTEM_PROMPT}),
        json!({"role": "user", "content": env.prompt()}),
    ];
    for _ in 0..env.max_turns() {
        let answer = env
            .chat_completion(&json!({"model": MODEL, "messages": messages, "tools": definitions}))
            .await
            .map_err(AgentError::Model)?;
        let Some(message) = answer.pointer("/choices/0/message").cloned() else {
            return Err(AgentError::Malformed(answer));
        };
        let calls = match message.get("tool_calls") {
            Some(Value::Array(calls)) if !calls.is_empty() => calls.clone(),
            _ => {
                return Ok(message
                    .get("content")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string());
            }
        };
        messages.push(json!({"role": "assistant", "content": message.get("content").cloned().unwrap_or(Value::Null), "tool_calls": calls}));
        for call in &calls {
            let name = call
                .pointer("/function/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let arguments = match call.pointer("/function/arguments") {
                Some(Value::String(text)) => {
                    serde_json::from_str(text).unwrap_or_else(|_| json!({}))
                }
                Some(object @ Value::Object(_)) => object.clone(),
                _ => json!({}),
            };
            // Whatever happens is something for the model to read, not a reason to stop.
            let result = match call_with_retries(&tools, name, &arguments).await {
                Ok(result) => result.for_model(),
                Err(error) => format!("error: {error}"),
            };
            let id = call.get("id").cloned().unwrap_or_else(|| json!(""));
            messages.push(json!({"role": "tool", "tool_call_id": id, "content": result}));
        }
    }
    Err(AgentError::MaxTurns(env.max_turns()))
}

/// How many times a tool call answered 429 or 5xx is tried again before the model sees it.
pub const RETRIES: u32 = 3;

/// Calls a tool, trying again (up to [`RETRIES`] times) while the service answers 429 or a
/// server error: the suite's services inject such faults (ClawEnvKit's 25 %), and the same
/// action succeeding within the next calls is what robustness counts. No wait between tries:
/// the mock services have no rate limit to wait out.
async fn call_with_retries(
    tools: &clawtest::rust_harness::ToolClient,
    name: &str,
    arguments: &Value,
) -> Result<clawtest::rust_harness::ToolResult, clawtest::rust_harness::ToolError> {
    let mut attempt = 0;
    loop {
        let result = tools.call(name, arguments).await?;
        let transient = result.status == 429 || (500..600).contains(&result.status);
        if !transient || attempt >= RETRIES {
            return Ok(result);
        }
        attempt += 1;
    }
}

/// The same tasks as ordinary `#[test]`s next to the unit tests, found at compile time: editing
/// a task rebuilds them, a new task file needs a rebuild (tests/tasks.rs finds them at run time).
#[cfg(test)]
mod task_tests {
    #[clawtest::suite("tasks/*.yaml", harness = super::agent, trials = 3)]
    fn demo() {}
}
