//! The workspace tools a tools file offers for a task that lives partly in its workspace (it
//! has `files` or command checks): `read_file`, `write_file`, `list_dir` and `shell`, as
//! ClawEnvKit's agent-loop baseline has them. They carry `"workspace": true` instead of an
//! endpoint: the harness runs them itself, where it runs (the reference agent does, see
//! `clawtest-reference-agent/src/workspace.rs`). A trial's MCP server runs `read_file`,
//! `write_file` and `list_dir` for a harness that has only MCP (`workspace_files.rs`; never
//! `shell`); `eval-tools.json`, which only reaches services by HTTP, leaves them out; `SKILL.md`
//! names them in a section of its own, not as endpoints.

use serde_json::{Value, json};

use crate::task::Task;
use crate::task::check::Check;

/// Whether `task` gets the workspace tools.
pub(super) fn applies(task: &Task) -> bool {
    !task.files.is_empty()
        || task.components.iter().any(|component| {
            matches!(
                component.check,
                Check::ExitCode { .. } | Check::PytestPass { .. }
            )
        })
}

/// The tools' entries, in the shape of the other `tools.json` entries.
pub(super) fn entries() -> Vec<Value> {
    let path = json!({"type": "string", "description": "A path under /workspace"});
    [
        (
            "read_file",
            "Read a text file of the workspace (/workspace)",
            json!({"type": "object", "properties": {"path": path}, "required": ["path"]}),
        ),
        (
            "write_file",
            "Write a text file in the workspace (created or replaced)",
            json!({"type": "object", "properties": {"path": path, "content": {"type": "string"}}, "required": ["path", "content"]}),
        ),
        (
            "list_dir",
            "List a folder of the workspace",
            json!({"type": "object", "properties": {"path": path}, "required": []}),
        ),
        (
            "shell",
            "Run a shell command in the workspace; answers its exit code, stdout and stderr",
            json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
        ),
    ]
    .into_iter()
    .map(|(name, description, parameters)| {
        json!({
            "type": "function",
            "function": {"name": name, "description": description, "parameters": parameters},
            "name": name,
            "description": description,
            "workspace": true,
            "parameters": parameters,
            "required": parameters["required"],
        })
    })
    .collect()
}
