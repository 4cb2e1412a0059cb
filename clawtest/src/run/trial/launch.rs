//! The [`Launch`] of one trial's harness: the prompt and the tool surfaces its tier gives
//! (tools.json, eval-tools.json, SKILL.md, mcp.json, Claude Code's `.mcp.json`), with the
//! services' URL as the harness sees it, the task's files and limits, the check commands, and
//! the trial's folder and endpoints.

use std::path::Path;

use serde_json::Value;

use crate::config::Tier;
use crate::run::plan::{Loaded, TrialPlan};
use crate::run::settings::HarnessLaunch;
use crate::sandbox::{CheckCommand, Endpoints, HarnessSetup, Launch, ServicesSeen};
use crate::surfaces::mcp::{mcp_config, mcp_url, project_config};
use crate::surfaces::skill::{skill_md, skill_path};

/// Where the trial is, for its launch.
pub(super) struct Place<'a> {
    /// The services as the harness sees them.
    pub(super) seen: &'a ServicesSeen,
    /// Where the services and gateway are served.
    pub(super) endpoints: Endpoints,
    /// The trial's folder.
    pub(super) folder: &'a Path,
}

/// The launch of trial `trial` of `plan`'s task (whose tools document is in `loaded`), started
/// as `harness` says, at `place`.
pub(super) fn launch(
    plan: &TrialPlan,
    loaded: &Loaded,
    trial: u32,
    harness: &HarnessLaunch,
    place: Place<'_>,
) -> Launch {
    let task = &plan.task;
    let services_url = &place.seen.url;
    let surfaces = surfaces(
        harness.tier,
        &task.prompt,
        skill_md(&task.id, &loaded.tools, services_url),
        mcp_config(services_url, place.seen.stdio_bridge).to_string(),
        services_url,
    );
    // The skill again where skill-loading harnesses look, and Claude Code's `.mcp.json`.
    let mut workspace_files = Vec::new();
    if !surfaces.skill.is_empty() {
        workspace_files.push((skill_path(), surfaces.skill.clone()));
    }
    let offers_mcp = !surfaces.mcp_config.is_empty();
    if offers_mcp {
        workspace_files.push((".mcp.json".into(), project_config(services_url).to_string()));
    }
    // tools.json as the task's trials share it, or `[]` where the tier leaves it out.
    let (tools, tools_text) = if surfaces.tools {
        (&loaded.tools, loaded.tools_text.clone())
    } else {
        (&NO_TOOLS, NO_TOOLS.to_string())
    };
    let setup = HarnessSetup {
        model: harness.model.clone(),
        mcp_url: offers_mcp.then(|| mcp_url(services_url)),
        workspace_files,
        files: harness.files.clone(),
        round: None,
    };
    Launch {
        task_id: task.id.clone(),
        trial,
        command: harness.command.clone(),
        prompt: surfaces.prompt,
        eval_tools: crate::surfaces::eval_tools::eval_tools(tools, services_url).to_string(),
        tools: tools_text,
        skill: surfaces.skill,
        mcp_config: surfaces.mcp_config,
        files: task.files.clone(),
        folder: place.folder.to_path_buf(),
        endpoints: place.endpoints,
        passthrough: harness.passthrough.clone(),
        timeout: task.limits.timeout,
        max_turns: task.limits.max_turns,
        limits: harness.limits,
        // The exit_code / pytest_pass commands, run where the harness ran once it has ended.
        checks: plan
            .commands
            .iter()
            .map(|planned| CheckCommand {
                command: vec!["sh".into(), "-c".into(), planned.command.clone()],
                timeout: std::time::Duration::from_secs(planned.timeout_seconds),
            })
            .collect(),
        setup,
    }
}

/// tools.json where the tier leaves the tools files out.
static NO_TOOLS: Value = Value::Array(Vec::new());

/// What a harness of `tier` is given: the prompt (tier 2 and 3 say where the tools are), and
/// whether the task's tools, SKILL.md and mcp.json, empty where the tier leaves a surface out
/// (an empty SKILL.md or mcp.json is not written; tools.json is then `[]`).
struct Surfaces {
    prompt: String,
    tools: bool,
    skill: String,
    mcp_config: String,
}

fn surfaces(
    tier: Tier,
    prompt: &str,
    skill: String,
    mcp_config: String,
    services_url: &str,
) -> Surfaces {
    match tier {
        Tier::All => Surfaces {
            prompt: prompt.to_string(),
            tools: true,
            skill,
            mcp_config,
        },
        Tier::Tools => Surfaces {
            prompt: prompt.to_string(),
            tools: true,
            skill: String::new(),
            mcp_config: String::new(),
        },
        Tier::Mcp => Surfaces {
            prompt: format!(
                "{}\n\nYour tools are served by the MCP server `clawtest` (streamable HTTP) at {}/mcp; its configuration is in mcp.json in $CLAWTEST_DIR.",
                prompt.trim_end(),
                services_url.trim_end_matches('/')
            ),
            tools: false,
            skill: String::new(),
            mcp_config,
        },
        // As ClawEnvKit's tier-3 harnesses get it: the skill appended to the prompt.
        Tier::Skill => Surfaces {
            prompt: format!("{}\n\n{skill}", prompt.trim_end()),
            tools: false,
            skill,
            mcp_config: String::new(),
        },
    }
}
