//! Coverage: does a task cover the intent it was generated from? The intent is a list of
//! atoms (ClawEnvKit's parser output: `{type: action|object|constraint, name, description}`),
//! read from a sidecar file next to the task or handed over by the generator. Gaps are
//! lint warnings, never errors: a hand-written task has no intent to compare with.
//!
//! The rules are ClawEnvKit's `verify_coverage`, case-insensitive, substrings allowed:
//! an action atom is offered as a tool and scored (a scoring action or a rubric names it);
//! an object atom is visible (fixtures, a workspace file, prompt or a rubric); a constraint is enforced (a
//! safety check, a scoring action or keyword, or a rubric).

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::check::Check;
use super::error::{Position, Problem};
use super::{SafetyCheck, Task};

/// How much of each workspace file is searched for an object atom.
const FILE_READ: u64 = 1 << 20;

/// One intent atom.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Atom {
    /// The atom's `type`: what it asks of the task.
    #[serde(rename = "type")]
    pub kind: AtomKind,
    /// The word the task must mention (a tool name, an object, a constraint), compared
    /// case-insensitively as a substring.
    pub name: String,
    /// The parser's explanation of the atom (empty when absent); not compared.
    #[serde(default)]
    pub description: String,
}

/// What an atom asks of a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AtomKind {
    /// Something the agent does: offered as a tool and verified by a scoring check or rubric.
    Action,
    /// Something the agent works on: seen in the fixtures, the prompt or a rubric.
    Object,
    /// A rule the agent keeps: enforced by a safety check, a scoring check or a rubric.
    Constraint,
}

/// The sidecar: the parser's whole answer (`{atoms: [...], ...}`) or just the list.
#[derive(Deserialize)]
#[serde(untagged)]
enum Sidecar {
    Parsed { atoms: Vec<Atom> },
    List(Vec<Atom>),
}

/// Where a task's atoms are kept: `<stem>.atoms.yaml` (or `.atoms.json`) next to the task.
pub(crate) fn sidecar_paths(task_file: &Path) -> [PathBuf; 2] {
    let stem = task_file
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default();
    let folder = task_file.parent().unwrap_or(Path::new(""));
    [
        folder.join(format!("{stem}.atoms.yaml")),
        folder.join(format!("{stem}.atoms.json")),
    ]
}

/// Reads the atoms of the task at `task_file`: `Ok(None)` when it has no sidecar.
pub fn load_atoms(task_file: &Path) -> Result<Option<(PathBuf, Vec<Atom>)>, Box<Problem>> {
    for path in sidecar_paths(task_file) {
        // A regular file only, bounded like a task file: a FIFO or a device is not read.
        let Ok(bytes) = super::read::read_regular(&path, super::read::MAX_TASK_BYTES) else {
            continue;
        };
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        return match serde_saphyr::from_str::<Sidecar>(&text) {
            Ok(Sidecar::Parsed { atoms } | Sidecar::List(atoms)) => Ok(Some((path, atoms))),
            Err(error) => Err(Box::new(
                Problem::new(
                    "coverage",
                    format!(
                        "{} is not a list of atoms: {}",
                        path.display(),
                        error.to_string().lines().next().unwrap_or("invalid YAML")
                    ),
                    None,
                )
                .with_help("write `atoms: [{type: action, name: send_email}, ...]`"),
            )),
        };
    }
    Ok(None)
}

/// Every atom the task does not cover, as a warning located at the task's id.
pub fn coverage(task: &Task, atoms: &[Atom]) -> Vec<Problem> {
    let lower = |text: &str| text.to_lowercase();
    let tools: Vec<String> = task.tools.iter().map(|tool| lower(&tool.name)).collect();
    let mut actions = Vec::new();
    let mut keywords = Vec::new();
    let mut rubrics = String::new();
    let checks = task
        .components
        .iter()
        .map(|component| &component.check)
        .chain(task.checkpoints.iter().map(|checkpoint| &checkpoint.check));
    for check in checks {
        match check {
            Check::AuditActionExists { action, .. }
            | Check::AuditFieldEquals { action, .. }
            | Check::AuditFieldContains { action, .. }
            | Check::AuditCountGte { action, .. }
            | Check::AuditCountEquals { action, .. } => actions.push(lower(action)),
            Check::AuditSequence { actions: steps, .. } => {
                actions.extend(steps.iter().map(|step| lower(&step.action)));
            }
            Check::KeywordsPresent {
                keywords: words, ..
            }
            | Check::KeywordsAbsent {
                keywords: words, ..
            } => {
                keywords.extend(words.iter().map(|word| lower(word)));
            }
            Check::LlmJudge { rubric } => {
                rubrics.push_str(&lower(rubric));
                rubrics.push(' ');
            }
            _ => {}
        }
    }
    let mut safety_targets = Vec::new();
    let mut safety_keywords = Vec::new();
    for safety in &task.safety {
        match &safety.check {
            SafetyCheck::ToolNotCalled { tool_name, .. } => safety_targets.push(lower(tool_name)),
            SafetyCheck::KeywordsNotInOutput {
                keywords: words, ..
            } => {
                safety_keywords.extend(words.iter().map(|word| lower(word)));
            }
        }
    }
    // What the agent works on may be in the fixtures or in a workspace file (a CSV's column,
    // a table of a database, a PDF's heading).
    let mut fixtures = lower(&task.fixtures.to_string());
    for file in &task.files {
        fixtures.push('\n');
        fixtures.push_str(&lower(&file.target.to_string_lossy()));
        fixtures.push('\n');
        fixtures.push_str(&lower(&file.readable_text(FILE_READ)));
    }
    let prompt = lower(&task.prompt);
    let contains_name = |list: &[String], name: &str| list.iter().any(|item| item.contains(name));
    let position = Some(Position {
        line: task.line,
        column: 1,
        span: None,
    });
    let mut gaps = Vec::new();
    for atom in atoms {
        let name = lower(atom.name.trim());
        if name.is_empty() {
            continue;
        }
        let gap = match atom.kind {
            AtomKind::Action => {
                if !contains_name(&tools, &name) {
                    Some((
                        format!("action `{}` is not offered as a tool", atom.name),
                        "add a tool whose name is this action",
                    ))
                } else if !contains_name(&actions, &name) && !rubrics.contains(&name) {
                    Some((
                        format!("action `{}` is offered but no scoring check verifies it", atom.name),
                        "add an audit_* component for this action, or name it in an llm_judge rubric",
                    ))
                } else {
                    None
                }
            }
            AtomKind::Object => (!fixtures.contains(&name)
                && !prompt.contains(&name)
                && !rubrics.contains(&name))
            .then(|| {
                (
                    format!("object `{}` appears nowhere in the fixtures, files, prompt or rubrics", atom.name),
                    "seed it in `fixtures` or a file, or mention it in the prompt",
                )
            }),
            AtomKind::Constraint => (!contains_name(&safety_targets, &name)
                && !contains_name(&safety_keywords, &name)
                && !contains_name(&actions, &name)
                && !contains_name(&keywords, &name)
                && !rubrics.contains(&name))
            .then(|| {
                (
                    format!("constraint `{}` is enforced by no safety check or scoring component", atom.name),
                    "add a safety check (tool_not_called / keywords_not_in_output) or a scoring check for it",
                )
            }),
        };
        if let Some((message, help)) = gap {
            gaps.push(Problem::new("coverage", message, position).with_help(help));
        }
    }
    gaps
}
