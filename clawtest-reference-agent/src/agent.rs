//! Owns the agent loop: the conversation (system + user messages, assistant tool calls and tool
//! results), one model call per turn, dispatching tool calls in order, and stopping on the first
//! answer without tool calls or when the turn budget runs out.

use std::fmt;

use serde_json::{Value, json};

use crate::config::Config;
use crate::mcp::McpClient;
use crate::model::{ModelClient, ModelError};
use crate::tools::{self, Tool, ToolRunner};

/// Fixed so that runs are comparable; the task itself lives in the user message.
pub const SYSTEM_PROMPT: &str = "You are an assistant that completes the user's task using the \
tools you are given. Call tools as needed to gather information and make changes, then answer \
with a concise final report of what you did and found.";

/// Tool arguments are echoed in the step log; long ones are shortened to keep one line per step.
const LOGGED_ARGUMENTS_LIMIT: usize = 300;

/// Why a run ended without a final answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentError {
    Model(ModelError),
    /// The model still wanted tools after this many turns.
    MaxTurns(u32),
    /// The MCP server could not be reached or listed no tools (MCP mode).
    Tools(String),
    /// A kept session's answer could not be written or its next message read.
    Session(String),
}

impl AgentError {
    /// Process exit code: 1 for a model failure, 3 for an exhausted turn budget.
    pub fn exit_code(&self) -> u8 {
        match self {
            AgentError::Model(_) | AgentError::Session(_) => 1,
            AgentError::MaxTurns(_) => 3,
            AgentError::Tools(_) => 2,
        }
    }
}

impl fmt::Display for AgentError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AgentError::Model(error) => error.fmt(formatter),
            AgentError::MaxTurns(turns) => write!(
                formatter,
                "no final answer after {turns} turns (AGENT_MAX_TURNS={turns})"
            ),
            AgentError::Tools(message) => write!(
                formatter,
                "cannot get the tools from the MCP server: {message}"
            ),
            AgentError::Session(message) => write!(formatter, "session: {message}"),
        }
    }
}

impl std::error::Error for AgentError {}

impl From<ModelError> for AgentError {
    fn from(error: ModelError) -> AgentError {
        AgentError::Model(error)
    }
}

/// Runs the task to completion and returns the final answer. Steps are logged to stderr.
pub fn run(config: &Config) -> Result<String, AgentError> {
    run_session(config, |_| Ok(None))
}

/// Runs the task, then each follow-up `next` gives after an answer (`None`: no more), in one
/// conversation that keeps every earlier message: a closed loop's kept session. Returns the
/// last answer; each round may take `max_turns` model calls.
pub fn run_session(
    config: &Config,
    mut next: impl FnMut(&str) -> std::io::Result<Option<String>>,
) -> Result<String, AgentError> {
    let model = ModelClient::new(
        &config.model_base_url,
        config.api_key.clone(),
        &config.model,
    );
    let runner = ToolRunner::new(&config.services_url, config.retries);
    // In MCP mode the server says which tools there are, and runs them.
    let (mcp, tools) = match &config.mcp_url {
        Some(url) => {
            let (client, tools) =
                McpClient::connect(url, config.retries).map_err(AgentError::Tools)?;
            eprintln!("mcp: {} tool(s) from {url}", tools.len());
            (Some(client), tools)
        }
        None => (None, config.tools.clone()),
    };
    let turns = Turns {
        config,
        model: &model,
        runner: &runner,
        mcp: mcp.as_ref(),
        tools: &tools,
        definitions: tools.iter().map(Tool::openai_definition).collect(),
    };

    // A closed loop's follow-up: the earlier rounds come before this round's message.
    let mut messages = vec![json!({"role": "system", "content": SYSTEM_PROMPT})];
    messages.extend(config.conversation.iter().cloned());
    messages.push(json!({"role": "user", "content": config.prompt}));
    loop {
        let answer = turns.answer(&mut messages)?;
        match next(&answer).map_err(|error| AgentError::Session(error.to_string()))? {
            Some(message) => {
                messages.push(json!({"role": "assistant", "content": answer}));
                messages.push(json!({"role": "user", "content": message}));
            }
            None => return Ok(answer),
        }
    }
}

/// What one answer's turns use: the model, the tools and how they are run.
struct Turns<'a> {
    config: &'a Config,
    model: &'a ModelClient,
    runner: &'a ToolRunner,
    mcp: Option<&'a McpClient>,
    tools: &'a [Tool],
    definitions: Vec<Value>,
}

impl Turns<'_> {
    /// Turns until the model answers without tool calls (its answer), or the turn budget runs
    /// out; `messages` grows by every assistant message and tool result on the way.
    fn answer(&self, messages: &mut Vec<Value>) -> Result<String, AgentError> {
        for turn in 1..=self.config.max_turns {
            let message = self.model.complete(messages, &self.definitions)?;
            let calls = match message.get("tool_calls") {
                Some(Value::Array(calls)) if !calls.is_empty() => calls.clone(),
                _ => {
                    // A missing or null content still ends the run: the model chose not to act.
                    let answer = message
                        .get("content")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    eprintln!(
                        "turn {turn}: final answer ({} chars)",
                        answer.chars().count()
                    );
                    return Ok(answer);
                }
            };

            // Echo the assistant message with only the keys the API defines, tool_calls
            // verbatim, so the next request is accepted by strict servers.
            messages.push(json!({
                "role": "assistant",
                "content": message.get("content").cloned().unwrap_or(Value::Null),
                "tool_calls": calls,
            }));
            // Images the model read, shown after the tool results in one user message.
            let mut shown = Vec::new();
            for raw in &calls {
                let call = Call::of(raw);
                let result = match self.mcp {
                    Some(client) => {
                        call.log(turn, " over MCP");
                        client.call(call.name, &call.arguments.body)
                    }
                    None => match image_read(&call, self.tools, &self.config.workspace) {
                        Some(Ok(image)) => {
                            eprintln!(
                                "turn {turn}: showing {} ({}, {} bytes)",
                                image.path,
                                image.media_type,
                                image.bytes.len()
                            );
                            let result = image.tool_result();
                            shown.extend(image.parts());
                            result
                        }
                        Some(Err(error)) => format!("error: {error}"),
                        None => execute_call(
                            turn,
                            &call,
                            self.tools,
                            self.runner,
                            &self.config.workspace,
                        ),
                    },
                };
                let id = raw.get("id").cloned().unwrap_or_else(|| json!(""));
                messages.push(json!({"role": "tool", "tool_call_id": id, "content": result}));
            }
            if !shown.is_empty() {
                // Chat completions take images in user messages, not in tool results.
                messages.push(json!({"role": "user", "content": shown}));
            }
        }
        Err(AgentError::MaxTurns(self.config.max_turns))
    }
}

/// One tool call of the model's message, read once: its name and its arguments (anything
/// unusable becomes `{}` with a note for the model).
struct Call<'a> {
    name: &'a str,
    arguments: tools::Arguments,
}

impl<'a> Call<'a> {
    fn of(call: &'a Value) -> Call<'a> {
        Call {
            name: call
                .pointer("/function/name")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            arguments: tools::parse_arguments(call.pointer("/function/arguments")),
        }
    }

    /// The call's line in the agent's log (`how`: by which way it is made, e.g. " over MCP").
    fn log(&self, turn: u32, how: &str) {
        eprintln!(
            "turn {turn}: calling {}{how} {}",
            self.name,
            shorten(&self.arguments.body.to_string())
        );
    }
}

/// The image a `read_file` call of the workspace tools names, if the file is one.
fn image_read(
    call: &Call<'_>,
    tools: &[Tool],
    workspace: &crate::workspace::Workspace,
) -> Option<Result<crate::image::Image, String>> {
    tools
        .iter()
        .find(|tool| tool.name == call.name && tool.workspace && call.name == "read_file")?;
    let path = call.arguments.body.get("path").and_then(Value::as_str)?;
    workspace.image(path)
}

/// Executes one tool call and returns the tool result text for the model.
fn execute_call(
    turn: u32,
    call: &Call<'_>,
    tools: &[Tool],
    runner: &ToolRunner,
    workspace: &crate::workspace::Workspace,
) -> String {
    let name = call.name;
    call.log(turn, "");

    let Some(tool) = tools.iter().find(|tool| tool.name == name) else {
        let available: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
        eprintln!("turn {turn}: unknown tool {name:?}");
        return format!(
            "error: unknown tool {name:?}; available tools: {}",
            available.join(", ")
        );
    };

    let result = match tool.workspace {
        true => workspace.call(&tool.name, &call.arguments.body),
        false => runner.call(tool, &call.arguments.body),
    };
    match &call.arguments.problem {
        Some(problem) => format!("note: {problem}, so {{}} was sent instead.\n{result}"),
        None => result,
    }
}

fn shorten(text: &str) -> String {
    if text.chars().count() <= LOGGED_ARGUMENTS_LIMIT {
        text.to_owned()
    } else {
        let head: String = text.chars().take(LOGGED_ARGUMENTS_LIMIT).collect();
        format!("{head}...")
    }
}
