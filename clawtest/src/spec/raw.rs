//! The task.yaml file as written: serde types that accept everything ClawEnvKit writes and
//! keep the source location of every value a later error may need to point at.
//!
//! Nothing here is checked beyond YAML syntax and basic shapes; [`super::validate`] turns a
//! [`RawTask`] into a [`super::Task`] and reports every problem at once.

use serde::Deserialize;
use serde_saphyr::Spanned;

/// One task.yaml, as parsed. Unknown top-level keys are ignored, as ClawEnvKit does, so that
/// generated tasks with extra bookkeeping fields still load.
#[derive(Debug, Deserialize)]
pub struct RawTask {
    pub task_id: Option<Spanned<String>>,
    pub task_name: Option<Spanned<String>>,
    pub prompt: Option<Spanned<String>>,
    pub scoring_components: Option<Spanned<Vec<RawComponent>>>,
    pub safety_checks: Option<Spanned<Vec<Spanned<serde_json::Value>>>>,
    #[serde(default)]
    pub fixtures: Option<serde_json::Value>,
    #[serde(default)]
    pub tools: Option<Vec<Spanned<RawTool>>>,
    #[serde(default)]
    pub files: Option<Vec<Spanned<RawFile>>>,
    pub reference_solution: Option<String>,
    pub category: Option<String>,
    pub difficulty: Option<String>,
    pub claw_eval_id: Option<String>,
    // clawtest extensions.
    pub capability: Option<Spanned<String>>,
    pub limits: Option<Spanned<RawLimits>>,
    pub pass_threshold: Option<Spanned<f64>>,
}

/// One `scoring_components` entry. The check stays an untyped map here because its required
/// parameters depend on its `type` and ClawEnvKit accepts several aliases.
#[derive(Debug, Deserialize)]
pub struct RawComponent {
    pub name: Option<Spanned<String>>,
    pub weight: Option<Spanned<f64>>,
    pub check: Option<Spanned<serde_json::Value>>,
}

/// One `tools` entry: how the agent reaches a service route.
#[derive(Debug, Deserialize)]
pub struct RawTool {
    pub name: Option<String>,
    pub service: Option<String>,
    pub endpoint: Option<String>,
    pub method: Option<String>,
    pub description: Option<String>,
}

/// One `files` entry: a file copied from the task's folder into the workspace.
#[derive(Debug, Deserialize)]
pub struct RawFile {
    pub source: Option<String>,
    pub target: Option<String>,
}

/// `limits`: how long and how many turns a trial may take.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLimits {
    pub timeout_seconds: Option<Spanned<f64>>,
    pub max_turns: Option<Spanned<u32>>,
}
