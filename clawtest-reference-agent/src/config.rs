//! Owns the sandbox contract's inputs: which environment variables are read, what each falls back
//! to, and turning them into a validated [`Config`] before any network traffic happens, so a broken
//! sandbox fails fast with a message naming the file or variable at fault.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;

use crate::tools::{self, Tool};

/// Prompt text, highest precedence.
pub const PROMPT_VARIABLE: &str = "CLAWTEST_PROMPT";
/// Prompt file, used when [`PROMPT_VARIABLE`] is unset.
pub const PROMPT_FILE_VARIABLE: &str = "CLAWTEST_PROMPT_FILE";
pub const DEFAULT_PROMPT_FILE: &str = "/clawtest/prompt.md";

/// Tools file variables in precedence order (ClawEnvKit's name first).
pub const TOOLS_FILE_VARIABLES: [&str; 2] = ["EVAL_TOOLS_FILE", "CLAWTEST_TOOLS_FILE"];
pub const DEFAULT_TOOLS_FILE: &str = "/clawtest/tools.json";

pub const SERVICES_URL_VARIABLE: &str = "CLAWTEST_SERVICES_URL";
pub const DEFAULT_SERVICES_URL: &str = "http://127.0.0.1:9100";

pub const MODEL_BASE_URL_VARIABLE: &str = "OPENAI_BASE_URL";
pub const DEFAULT_MODEL_BASE_URL: &str = "http://127.0.0.1:9201/v1";
pub const API_KEY_VARIABLE: &str = "OPENAI_API_KEY";

/// Model name variables in precedence order.
pub const MODEL_VARIABLES: [&str; 2] = ["CLAWTEST_MODEL", "OPENAI_MODEL"];
pub const DEFAULT_MODEL: &str = "gpt-4o-mini";

/// `mcp` to take the tools from the MCP server instead of the tools file.
pub const TOOL_SOURCE_VARIABLE: &str = "AGENT_TOOLS";
/// The MCP endpoint; else `mcpServers.clawtest.url` of `$CLAWTEST_DIR/mcp.json`; else
/// `{services}/mcp`.
pub const MCP_URL_VARIABLE: &str = "CLAWTEST_MCP_URL";
pub const CONTROL_FOLDER_VARIABLE: &str = "CLAWTEST_DIR";

/// A closed loop's earlier rounds (the follow-up protocol): one JSON object per line,
/// `{"role": "user" | "assistant", "content": "..."}`; absent or empty in round 1.
pub const CONVERSATION_FILE_VARIABLE: &str = "CLAWTEST_CONVERSATION_FILE";

/// The workspace the workspace tools act in (`/workspace` in a container).
pub const WORKSPACE_VARIABLE: &str = "CLAWTEST_WORKSPACE";

pub const MAX_TURNS_VARIABLE: &str = "AGENT_MAX_TURNS";
pub const DEFAULT_MAX_TURNS: u32 = 20;

/// How many times a tool call answered 429 or 5xx is tried again (0: never; the
/// `reference-agent --no-retries` flag sets 0).
pub const RETRIES_VARIABLE: &str = "AGENT_RETRIES";
pub const DEFAULT_RETRIES: u32 = 3;

/// Everything one run needs, already read and validated.
#[derive(Debug, Clone)]
pub struct Config {
    pub prompt: String,
    pub tools: Vec<Tool>,
    /// Base URL of the mock services; a tool's endpoint is appended to it.
    pub services_url: String,
    /// Base URL of the OpenAI-compatible API; `/chat/completions` is appended to it.
    pub model_base_url: String,
    pub api_key: Option<String>,
    pub model: String,
    /// How many model calls the run may make before giving up.
    pub max_turns: u32,
    /// Set in MCP mode (`AGENT_TOOLS=mcp`): the tools come from this MCP endpoint, and `tools`
    /// is empty.
    pub mcp_url: Option<String>,
    /// A closed loop's earlier rounds, as chat messages, before this round's prompt.
    pub conversation: Vec<serde_json::Value>,
    /// How many times a tool call answered 429 or 5xx is tried again before its error goes
    /// to the model.
    pub retries: u32,
    /// Where the workspace tools act, and whether `shell` may run ([`crate::workspace`]).
    pub workspace: crate::workspace::Workspace,
    /// Set when clawtest keeps the harness's session across a closed loop's rounds.
    pub session: Option<crate::session::Session>,
}

/// A missing or invalid input; the message names the file or variable involved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// Reads the process environment and the files it points at.
    pub fn from_env() -> Result<Config, ConfigError> {
        Config::from_lookup(|name| std::env::var_os(name))
    }

    /// Same as [`Config::from_env`] with the environment passed in, so the precedence rules can be
    /// tested without mutating the process environment.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<OsString>) -> Result<Config, ConfigError> {
        // An empty variable counts as unset: shells and container specs often export `VAR=` to mean
        // "not configured", and an empty URL or path is never usable anyway.
        let lookup = |name: &str| lookup(name).filter(|value| !value.is_empty());
        let text = |name: &str| -> Result<Option<String>, ConfigError> {
            match lookup(name) {
                None => Ok(None),
                Some(value) => value.into_string().map(Some).map_err(|_| {
                    ConfigError(format!("environment variable {name} is not valid UTF-8"))
                }),
            }
        };

        let prompt = read_prompt(&lookup, &text)?;
        let services_url =
            text(SERVICES_URL_VARIABLE)?.unwrap_or_else(|| DEFAULT_SERVICES_URL.to_owned());
        let mcp = match text(TOOL_SOURCE_VARIABLE)?.as_deref() {
            None | Some("file") => false,
            Some("mcp") => true,
            Some(other) => {
                return Err(ConfigError(format!(
                    "{TOOL_SOURCE_VARIABLE} must be `file` or `mcp`, got {other:?}"
                )));
            }
        };
        let (tools, mcp_url) = if mcp {
            let from_config = text(CONTROL_FOLDER_VARIABLE)?.and_then(|folder| {
                let config: serde_json::Value = serde_json::from_str(
                    &std::fs::read_to_string(PathBuf::from(folder).join("mcp.json")).ok()?,
                )
                .ok()?;
                config["mcpServers"]["clawtest"]["url"]
                    .as_str()
                    .map(str::to_string)
            });
            let url = text(MCP_URL_VARIABLE)?
                .or(from_config)
                .unwrap_or_else(|| format!("{}/mcp", services_url.trim_end_matches('/')));
            (Vec::new(), Some(url))
        } else {
            (read_tools(&lookup)?, None)
        };
        let model_base_url =
            text(MODEL_BASE_URL_VARIABLE)?.unwrap_or_else(|| DEFAULT_MODEL_BASE_URL.to_owned());
        let api_key = text(API_KEY_VARIABLE)?;

        let mut model = None;
        for name in MODEL_VARIABLES {
            if let Some(value) = text(name)? {
                model = Some(value);
                break;
            }
        }
        let model = model.unwrap_or_else(|| DEFAULT_MODEL.to_owned());

        let max_turns = match text(MAX_TURNS_VARIABLE)? {
            None => DEFAULT_MAX_TURNS,
            Some(value) => match value.trim().parse::<u32>() {
                Ok(turns) if turns > 0 => turns,
                _ => {
                    return Err(ConfigError(format!(
                        "{MAX_TURNS_VARIABLE} must be a positive integer, got {value:?}"
                    )));
                }
            },
        };

        let retries = match text(RETRIES_VARIABLE)? {
            None => DEFAULT_RETRIES,
            Some(value) => value.trim().parse::<u32>().map_err(|_| {
                ConfigError(format!(
                    "{RETRIES_VARIABLE} must be a whole number (0: no retries), got {value:?}"
                ))
            })?,
        };

        let conversation = match text(CONVERSATION_FILE_VARIABLE)? {
            None => Vec::new(),
            Some(path) => read_conversation(&PathBuf::from(path))?,
        };

        let shell = match text(crate::workspace::SHELL_VARIABLE)?.as_deref() {
            None | Some("off") => false,
            Some("on") => true,
            Some(other) => {
                return Err(ConfigError(format!(
                    "{} must be `on` or `off`, got {other:?}",
                    crate::workspace::SHELL_VARIABLE
                )));
            }
        };
        let workspace = crate::workspace::Workspace {
            root: PathBuf::from(text(WORKSPACE_VARIABLE)?.unwrap_or_else(|| ".".to_owned())),
            shell,
        };

        let session = match text(crate::session::SESSION_FOLDER_VARIABLE)? {
            None => None,
            Some(folder) => Some(crate::session::Session {
                folder: PathBuf::from(folder),
                round: match text(crate::session::ROUND_VARIABLE)? {
                    None => 1,
                    Some(value) => value.trim().parse().map_err(|_| {
                        ConfigError(format!(
                            "{} must be a round number from 1, got {value:?}",
                            crate::session::ROUND_VARIABLE
                        ))
                    })?,
                },
            }),
        };

        Ok(Config {
            session,
            workspace,
            conversation,
            prompt,
            tools,
            services_url,
            model_base_url,
            api_key,
            model,
            max_turns,
            mcp_url,
            retries,
        })
    }
}

fn read_prompt(
    lookup: &impl Fn(&str) -> Option<OsString>,
    text: &impl Fn(&str) -> Result<Option<String>, ConfigError>,
) -> Result<String, ConfigError> {
    if let Some(prompt) = text(PROMPT_VARIABLE)? {
        return non_empty_prompt(prompt, PROMPT_VARIABLE);
    }
    let (path, source) = match lookup(PROMPT_FILE_VARIABLE) {
        Some(path) => (PathBuf::from(path), PROMPT_FILE_VARIABLE),
        None => (PathBuf::from(DEFAULT_PROMPT_FILE), "default"),
    };
    let prompt = std::fs::read_to_string(&path).map_err(|error| {
        ConfigError(format!(
            "cannot read prompt file {} ({source}; set {PROMPT_VARIABLE} or {PROMPT_FILE_VARIABLE}): {error}",
            path.display()
        ))
    })?;
    non_empty_prompt(prompt, &format!("prompt file {}", path.display()))
}

/// The earlier rounds' messages: each line a `{role, content}` object with role `user` or
/// `assistant` and text content; a missing file is round 1's (no earlier round).
fn read_conversation(path: &std::path::Path) -> Result<Vec<serde_json::Value>, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => {
            return Err(ConfigError(format!(
                "cannot read the conversation file {} ({CONVERSATION_FILE_VARIABLE}): {error}",
                path.display()
            )));
        }
    };
    let mut messages = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let message: serde_json::Value = serde_json::from_str(line).map_err(|error| {
            ConfigError(format!(
                "conversation file {} line {}: not JSON: {error}",
                path.display(),
                index + 1
            ))
        })?;
        let role = message["role"].as_str().unwrap_or_default();
        if !matches!(role, "user" | "assistant") || !message["content"].is_string() {
            return Err(ConfigError(format!(
                "conversation file {} line {}: expected {{\"role\": \"user\" or \"assistant\", \"content\": text}}",
                path.display(),
                index + 1
            )));
        }
        messages.push(serde_json::json!({"role": role, "content": message["content"]}));
    }
    Ok(messages)
}

fn non_empty_prompt(prompt: String, source: &str) -> Result<String, ConfigError> {
    if prompt.trim().is_empty() {
        Err(ConfigError(format!("the prompt from {source} is empty")))
    } else {
        Ok(prompt)
    }
}

fn read_tools(lookup: &impl Fn(&str) -> Option<OsString>) -> Result<Vec<Tool>, ConfigError> {
    let (path, source) = TOOLS_FILE_VARIABLES
        .iter()
        .find_map(|name| lookup(name).map(|path| (PathBuf::from(path), *name)))
        .unwrap_or_else(|| (PathBuf::from(DEFAULT_TOOLS_FILE), "default"));
    let text = std::fs::read_to_string(&path).map_err(|error| {
        ConfigError(format!(
            "cannot read tools file {} ({source}; set {} or {}): {error}",
            path.display(),
            TOOLS_FILE_VARIABLES[0],
            TOOLS_FILE_VARIABLES[1],
        ))
    })?;
    let mut tools = tools::parse_tools(&text)
        .map_err(|error| ConfigError(format!("invalid tools file {}: {error}", path.display())))?;
    // ClawEnvKit's eval-tools.json reaches services only: the workspace tools clawtest offers
    // are in its tools.json, taken from there as well.
    let other = TOOLS_FILE_VARIABLES.iter().find(|name| **name != source);
    if source == TOOLS_FILE_VARIABLES[0]
        && let Some(other) = other.and_then(|name| lookup(name))
        && let Ok(text) = std::fs::read_to_string(PathBuf::from(&other))
    {
        let workspace = tools::parse_tools(&text).map_err(|error| {
            ConfigError(format!(
                "invalid tools file {}: {error}",
                PathBuf::from(&other).display()
            ))
        })?;
        for tool in workspace.into_iter().filter(|tool| tool.workspace) {
            if !tools.iter().any(|known| known.name == tool.name) {
                tools.push(tool);
            }
        }
    }
    Ok(tools)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn lookup_from(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, OsString> = pairs
            .iter()
            .map(|(name, value)| ((*name).to_owned(), OsString::from(value)))
            .collect();
        move |name| map.get(name).cloned()
    }

    fn write_temporary(name: &str, contents: &str) -> PathBuf {
        let path = std::env::temp_dir().join(format!(
            "reference-agent-config-{}-{name}",
            std::process::id()
        ));
        std::fs::write(&path, contents).expect("write temporary file");
        path
    }

    #[test]
    fn defaults_apply_when_only_prompt_and_tools_are_given() {
        let tools = write_temporary("defaults-tools.json", "[]");
        let tools = tools.to_string_lossy().into_owned();
        let config = Config::from_lookup(lookup_from(&[
            ("CLAWTEST_PROMPT", "do it"),
            ("CLAWTEST_TOOLS_FILE", &tools),
        ]))
        .expect("config");
        assert_eq!(config.prompt, "do it");
        assert!(config.tools.is_empty());
        assert_eq!(config.services_url, DEFAULT_SERVICES_URL);
        assert_eq!(config.model_base_url, DEFAULT_MODEL_BASE_URL);
        assert_eq!(config.api_key, None);
        assert_eq!(config.model, DEFAULT_MODEL);
        assert_eq!(config.max_turns, DEFAULT_MAX_TURNS);
    }

    #[test]
    fn first_variable_wins_and_empty_counts_as_unset() {
        let tools = write_temporary("precedence-tools.json", "[]");
        let tools = tools.to_string_lossy().into_owned();
        let prompt = write_temporary("precedence-prompt.md", "from file");
        let prompt = prompt.to_string_lossy().into_owned();
        let config = Config::from_lookup(lookup_from(&[
            ("CLAWTEST_PROMPT", ""),
            ("CLAWTEST_PROMPT_FILE", &prompt),
            ("EVAL_TOOLS_FILE", &tools),
            ("CLAWTEST_TOOLS_FILE", "/nonexistent/tools.json"),
            ("CLAWTEST_MODEL", "first"),
            ("OPENAI_MODEL", "second"),
            ("AGENT_MAX_TURNS", "7"),
        ]))
        .expect("config");
        assert_eq!(config.prompt, "from file");
        assert_eq!(config.model, "first");
        assert_eq!(config.max_turns, 7);
    }

    #[test]
    fn the_conversation_file_gives_the_earlier_rounds_and_a_bad_line_is_named() {
        let tools = write_temporary("tools-conversation.json", "[]");
        let conversation = write_temporary(
            "conversation.jsonl",
            "{\"role\":\"user\",\"content\":\"first\"}\n{\"role\":\"assistant\",\"content\":\"done\"}\n",
        );
        let config = Config::from_lookup(lookup_from(&[
            ("CLAWTEST_PROMPT", "follow-up"),
            ("CLAWTEST_TOOLS_FILE", tools.to_str().unwrap()),
            ("CLAWTEST_CONVERSATION_FILE", conversation.to_str().unwrap()),
        ]))
        .unwrap();
        assert_eq!(
            config.conversation,
            vec![
                serde_json::json!({"role": "user", "content": "first"}),
                serde_json::json!({"role": "assistant", "content": "done"}),
            ]
        );
        let broken = write_temporary("broken.jsonl", "{\"role\":\"system\",\"content\":\"x\"}\n");
        let error = Config::from_lookup(lookup_from(&[
            ("CLAWTEST_PROMPT", "follow-up"),
            ("CLAWTEST_TOOLS_FILE", tools.to_str().unwrap()),
            ("CLAWTEST_CONVERSATION_FILE", broken.to_str().unwrap()),
        ]))
        .unwrap_err();
        assert!(error.0.contains("line 1"), "{error}");
    }

    #[test]
    fn invalid_max_turns_is_rejected_by_name() {
        let tools = write_temporary("turns-tools.json", "[]");
        let tools = tools.to_string_lossy().into_owned();
        for value in ["0", "-1", "many"] {
            let error = Config::from_lookup(lookup_from(&[
                ("CLAWTEST_PROMPT", "p"),
                ("CLAWTEST_TOOLS_FILE", &tools),
                ("AGENT_MAX_TURNS", value),
            ]))
            .expect_err("invalid turns");
            assert!(error.0.contains("AGENT_MAX_TURNS"), "{error}");
        }
    }

    #[test]
    fn missing_prompt_file_names_the_default_path() {
        let error = Config::from_lookup(lookup_from(&[])).expect_err("no prompt");
        assert!(error.0.contains(DEFAULT_PROMPT_FILE), "{error}");
    }
}
