//! What the harness reads to find its tools (docs/sandbox.md), all generated per trial from the
//! task's tools and the service descriptions: `tools.json` (here), ClawEnvKit's
//! `eval-tools.json` ([`eval_tools`]), `SKILL.md` (`skill.rs`) and the MCP server with its
//! `mcp.json` ([`mcp`]).

pub mod eval_tools;
pub mod mcp;
pub(crate) mod skill;
mod workspace;
pub(crate) mod workspace_files;

use serde_json::{Value, json};

use crate::services::Catalogue;
use crate::task::Task;

/// The task's tools as one JSON array. Each entry is both an OpenAI function-calling tool
/// (`type`, `function`) and a ClawEnvKit eval-tools entry (`name`, `description`, `endpoint`,
/// `method`, `parameters`, `required`), so that either kind of harness reads the same file.
/// Parameter schemas come from the service descriptions. A task with files or command checks
/// also gets the workspace tools (`workspace.rs`).
pub fn tools_json(task: &Task, catalogue: &Catalogue) -> Value {
    let mut tools: Vec<Value> = task
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
    if workspace::applies(task) {
        tools.extend(workspace::entries());
    }
    Value::Array(tools)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn tools_of(fixture: &str) -> Value {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/valid")
            .join(fixture);
        let task = crate::task::load(&path, &Catalogue::builtin()).unwrap();
        tools_json(&task, &Catalogue::builtin())
    }

    fn workspace_names(tools: &Value) -> Vec<&str> {
        tools
            .as_array()
            .unwrap()
            .iter()
            .filter(|tool| tool["workspace"] == true)
            .map(|tool| tool["name"].as_str().unwrap())
            .collect()
    }

    /// A file task offers the workspace tools; eval-tools.json, which reaches only services,
    /// leaves them out, and SKILL.md names them in its workspace section, not as endpoints.
    #[test]
    fn a_task_with_files_or_commands_gets_the_workspace_tools_and_only_it() {
        let tools = tools_of("file-checks.yaml");
        assert_eq!(
            workspace_names(&tools),
            ["read_file", "write_file", "list_dir", "shell"]
        );
        assert!(
            eval_tools::eval_tools(&tools, "http://127.0.0.1:9100")
                .as_array()
                .unwrap()
                .is_empty()
        );
        let skill = skill::skill_md("file-checks", &tools, "http://127.0.0.1:9100");
        assert!(!skill.contains("### read_file"), "{skill}");
        assert!(skill.contains("## Workspace Files"), "{skill}");
        assert_eq!(
            workspace_names(&tools_of("judge-and-commands.yaml")).len(),
            4
        );
        assert!(workspace_names(&tools_of("todo-audit-checks.yaml")).is_empty());
    }
}
