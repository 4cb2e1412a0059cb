//! The trial's tools as a `SKILL.md` (ClawEnvKit tier 3, OpenClaw skills): OpenClaw-compatible
//! frontmatter (single-line keys, `metadata` as one-line JSON) and one section per tool with
//! its parameters and a curl example against the trial's services. Written at the workspace's
//! root and at `skills/<name>/SKILL.md` ([`skill_path`]).
//!
//! Its text is not passed through `escape::markdown`, on purpose: its reader is the agent's
//! model, not a person looking at rendered Markdown, and entities or backslashes would change
//! the descriptions it reads (and the file ClawEnvKit's harnesses expect). Everything in it
//! comes from the task and its services, whose author already writes the agent's prompt: a
//! description that forges a section tells the agent nothing the prompt could not.

use std::fmt::Write as _;

use serde_json::{Value, json};

/// The skill's name, as OpenClaw lists it.
pub(crate) const SKILL_NAME: &str = "clawtest-task-tools";

/// Where harnesses that load skills from a folder (OpenClaw, nanobot: `skills/<name>/SKILL.md`
/// in their workspace) find the skill, relative to the workspace; `SKILL.md` at the
/// workspace's root is written too, for ClawEnvKit's harnesses.
pub(crate) fn skill_path() -> std::path::PathBuf {
    std::path::Path::new("skills")
        .join(SKILL_NAME)
        .join("SKILL.md")
}

/// `SKILL.md` for the tools of a `tools.json` document, calling the services at
/// `services_url`.
pub(crate) fn skill_md(task_id: &str, tools: &Value, services_url: &str) -> String {
    let url = services_url.trim_end_matches('/');
    let metadata = json!({"openclaw": {"always": true, "requires": {"bins": ["curl"]}}});
    let mut text = String::new();
    // Frontmatter values stay on one line: OpenClaw's parser reads single-line keys only.
    let _ = writeln!(text, "---");
    let _ = writeln!(text, "name: {SKILL_NAME}");
    let _ = writeln!(
        text,
        "description: The tools of the evaluation task {task_id}, as HTTP endpoints called with curl."
    );
    let _ = writeln!(text, "metadata: {metadata}");
    let _ = writeln!(text, "---");
    let _ = writeln!(text, "# Evaluation Environment\n");
    let _ = writeln!(
        text,
        "The task's services run at `{url}`. Use `curl` to call them: every endpoint takes its method below with a JSON body and answers JSON.\n"
    );
    let _ = writeln!(text, "## Available Tools");
    // Workspace tools have no endpoint: a harness that reads SKILL.md has file tools of its own.
    let services = tools.as_array().map(Vec::as_slice).unwrap_or_default();
    for tool in services.iter().filter(|tool| tool["workspace"] != true) {
        let name = tool["name"].as_str().unwrap_or_default();
        let method = tool["method"].as_str().unwrap_or("POST");
        let endpoint = tool["endpoint"].as_str().unwrap_or_default();
        let _ = writeln!(text, "\n### {name}\n");
        if let Some(description) = tool["description"].as_str().filter(|text| !text.is_empty()) {
            let _ = writeln!(text, "{description}\n");
        }
        let parameters = &tool["parameters"];
        let required: Vec<&str> = parameters["required"]
            .as_array()
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut example = serde_json::Map::new();
        if let Some(properties) = parameters["properties"].as_object()
            && !properties.is_empty()
        {
            let _ = writeln!(text, "**Parameters:**");
            for (parameter, schema) in properties {
                let kind = schema["type"].as_str().unwrap_or("any");
                let is_required = required.contains(&parameter.as_str());
                let mut line = format!("- `{parameter}` ({kind}");
                if is_required {
                    line.push_str(" **(required)**");
                }
                line.push(')');
                if let Some(description) = schema["description"].as_str().filter(|d| !d.is_empty())
                {
                    let _ = write!(line, ": {description}");
                }
                let _ = writeln!(text, "{line}");
                if is_required {
                    example.insert(parameter.clone(), placeholder(kind));
                }
            }
            text.push('\n');
        }
        let body = Value::Object(example).to_string().replace('\'', "'\\''");
        let _ = writeln!(
            text,
            "```bash\ncurl -s -X {method} {url}{endpoint} \\\n  -H 'Content-Type: application/json' \\\n  -d '{body}'\n```"
        );
    }
    if services.iter().any(|tool| tool["workspace"] == true) {
        workspace_section(&mut text);
    }
    text
}

/// Where a file task's files are, and the tools that reach them: the harness's own, or the
/// MCP server's file tools (no endpoint to curl).
fn workspace_section(text: &mut String) {
    let _ = writeln!(text, "\n## Workspace Files\n");
    let _ = writeln!(
        text,
        "The task's files are in `/workspace`, your working directory; what you write there is what is graded. Read and write them with your own file tools or shell. Over MCP, the `clawtest` server (see `mcp.json`) also offers `read_file` (`path`), `write_file` (`path`, `content`) and `list_dir` (`path`), each path under `/workspace`."
    );
}

/// An example value of a JSON-Schema type.
fn placeholder(kind: &str) -> Value {
    match kind {
        "integer" | "number" => json!(0),
        "boolean" => json!(false),
        "array" => json!([]),
        "object" => json!({}),
        _ => json!("..."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file task's skill says where its files are and which MCP tools reach them, with no
    /// curl section for a tool that has no endpoint.
    #[test]
    fn a_file_task_gets_the_workspace_section() {
        let tools = json!([{"name": "read_file", "workspace": true, "parameters": {}}]);
        let text = skill_md("terminal-001", &tools, "http://127.0.0.1:4000/");
        assert!(text.contains("## Workspace Files"), "{text}");
        assert!(text.contains("`write_file` (`path`, `content`)"), "{text}");
        assert!(!text.contains("### read_file"), "{text}");
        assert!(!skill_md("t", &json!([]), "http://x").contains("Workspace Files"));
    }

    #[test]
    fn frontmatter_and_one_section_with_a_curl_example_per_tool() {
        let tools = json!([{
            "name": "update_task", "description": "Update a task", "endpoint": "/todo/tasks/update", "method": "POST",
            "parameters": {"type": "object", "properties": {
                "task_id": {"type": "string", "description": "The task"},
                "priority": {"type": "string"}}, "required": ["task_id"]}
        }]);
        let text = skill_md("todo-001", &tools, "http://127.0.0.1:4000/");
        let frontmatter: Vec<&str> = text.split("---\n").nth(1).unwrap().lines().collect();
        assert_eq!(frontmatter[0], "name: clawtest-task-tools");
        assert!(frontmatter[1].starts_with("description: "));
        let metadata: Value =
            serde_json::from_str(frontmatter[2].strip_prefix("metadata: ").unwrap()).unwrap();
        assert_eq!(metadata["openclaw"]["requires"]["bins"][0], "curl");
        assert!(
            text.contains("### update_task\n\nUpdate a task\n"),
            "{text}"
        );
        assert!(
            text.contains("- `task_id` (string **(required)**): The task"),
            "{text}"
        );
        assert!(text.contains("- `priority` (string)\n"), "{text}");
        assert!(
            text.contains("curl -s -X POST http://127.0.0.1:4000/todo/tasks/update \\\n  -H 'Content-Type: application/json' \\\n  -d '{\"task_id\":\"...\"}'"),
            "{text}"
        );
    }
}
