//! What the harness reads to find its tools (docs/sandbox.md), all generated per trial from the
//! task's tools and the service descriptions: `tools.json` (here), ClawEnvKit's
//! `eval-tools.json` ([`eval_tools`]), `SKILL.md` (`skill.rs`) and the MCP server with its
//! `mcp.json` ([`mcp`]).

pub mod eval_tools;
pub mod mcp;
pub(crate) mod skill;

use serde_json::{Value, json};

use crate::services::Catalogue;
use crate::task::Task;

/// The task's tools as one JSON array. Each entry is both an OpenAI function-calling tool
/// (`type`, `function`) and a ClawEnvKit eval-tools entry (`name`, `description`, `endpoint`,
/// `method`, `parameters`, `required`), so that either kind of harness reads the same file.
/// Parameter schemas come from the service descriptions.
pub fn tools_json(task: &Task, catalogue: &Catalogue) -> Value {
    let tools: Vec<Value> = task
        .tools
        .iter()
        .map(|tool| {
            let route = catalogue.get(&tool.service).and_then(|service| service.route(&tool.endpoint));
            let parameters = route.map(|route| route.parameters_schema()).unwrap_or_else(|| json!({"type": "object", "properties": {}}));
            let description = if tool.description.is_empty() { route.map(|route| route.description.clone()).unwrap_or_default() } else { tool.description.clone() };
            let required = parameters.get("required").cloned().unwrap_or_else(|| json!([]));
            json!({
                "type": "function",
                "function": {"name": tool.name, "description": description, "parameters": parameters},
                "name": tool.name,
                "description": description,
                "service": tool.service,
                "endpoint": tool.endpoint,
                "method": tool.method,
                "parameters": parameters,
                "required": required,
            })
        })
        .collect();
    Value::Array(tools)
}
