//! Grounding, the part of the feasibility proof that reads the task's words: what the prompt
//! and the `llm_judge` rubrics take for granted (names, e-mail addresses, phone numbers,
//! dates, amounts, identifiers, and the contact details a rubric asks for: `facts.rs`) must
//! be somewhere an agent can see it (`grounds.rs`): the fixtures, the task's files, the
//! answers of the oracle's calls and what those calls write (what the agent is asked to
//! create), and the words of the task's tools and services; a rubric may also take what the
//! prompt says. A `keywords_present` keyword must be in the prompt, the fixtures or the
//! answers of the oracle's calls.
//!
//! It is read without a model (ClawEnvKit asks one), so it is deterministic and it misses
//! what only meaning tells: see docs/oracle.md, "What grounding cannot catch".

mod facts;
mod grounds;

use grounds::Grounds;

use super::PlannedFile;
use crate::services::Catalogue;
use crate::task::{Check, OutputSource, Task};
use crate::trajectory::Trajectory;

/// The most of one task file read for its words.
const FILE_READ: u64 = 1 << 20;

/// A text of the task that takes for granted what no agent can find.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Ungrounded {
    /// `prompt`, `scoring_components[3]`.
    pub(super) field: String,
    /// Its line.
    pub(super) line: Option<u64>,
    /// What is missing.
    pub(super) message: String,
    /// What to do.
    pub(super) help: String,
}

/// Every text of `task` that takes for granted what neither its fixtures, its files, the
/// oracle's calls in `oracle` (a trajectory of the oracle's play) nor the `files` it writes
/// hold; the services' words come from `catalogue`.
pub(super) fn ungrounded(
    task: &Task,
    catalogue: &Catalogue,
    oracle: &Trajectory,
    files: &[PlannedFile],
) -> Vec<Ungrounded> {
    let world = world_grounds(task, catalogue, oracle, files);
    let mut problems = Vec::new();
    let absent = missing(&task.prompt, &world);
    if !absent.is_empty() {
        problems.push(Ungrounded {
            field: "prompt".into(),
            line: task.prompt_line.or(Some(task.line)),
            message: format!(
                "the prompt takes for granted what no fixture, file or answer of the oracle's calls holds: {}",
                absent.join(", ")
            ),
            help: "put each in the fixtures (a contact, an event, a record) or the task's files, or take it out of the prompt; what the agent is asked to create is found in the oracle's calls (write them in `oracle:`)".into(),
        });
    }
    let mut with_prompt = world.clone();
    with_prompt.text(&task.prompt);
    for (index, component) in task.components.iter().enumerate() {
        match &component.check {
            Check::LlmJudge { rubric } => {
                let absent = missing(rubric, &with_prompt);
                if !absent.is_empty() {
                    problems.push(Ungrounded {
                        field: format!("scoring_components[{index}]"),
                        line: component.line,
                        message: format!(
                            "the rubric of `{}` asks for what nothing an agent can see holds (the prompt, the fixtures, the files, the answers of the oracle's calls): {}",
                            component.name,
                            absent.join(", ")
                        ),
                        help: "a judge cannot give full marks for a fact no agent can find: put it in the fixtures or the prompt, or take it out of the rubric".into(),
                    });
                }
            }
            Check::KeywordsPresent {
                keywords,
                source: OutputSource::AgentOutput,
            } => problems.extend(ungrounded_keywords(task, index, keywords, oracle)),
            _ => {}
        }
    }
    problems
}

/// The facts of `text` that `grounds` does not hold, each shown once, in the order the text
/// says them.
fn missing(text: &str, grounds: &Grounds) -> Vec<String> {
    let mut absent: Vec<(usize, String)> = Vec::new();
    for fact in facts::facts(text) {
        let shown = fact.shown();
        if !grounds.holds(&fact) && !absent.iter().any(|(_, known)| *known == shown) {
            absent.push((fact.position(text), shown));
        }
    }
    absent.sort_by_key(|(position, _)| *position);
    absent.into_iter().map(|(_, shown)| shown).collect()
}

/// What an agent can see of the world, and the words of its tools: everything but the prompt.
fn world_grounds(
    task: &Task,
    catalogue: &Catalogue,
    oracle: &Trajectory,
    files: &[PlannedFile],
) -> Grounds {
    let mut grounds = Grounds::default();
    grounds.value(&task.fixtures);
    for file in &task.files {
        grounds.text(&file.target.to_string_lossy());
        grounds.text(&file.readable_text(FILE_READ));
    }
    for entry in &oracle.audit {
        grounds.value(&entry.params);
        grounds.value(&entry.response);
    }
    for file in files {
        grounds.text(&file.path);
        grounds.text(&file.content);
    }
    for tool in &task.tools {
        grounds.text(&format!(
            "{} {} {}",
            tool.name, tool.service, tool.description
        ));
    }
    for service in task.services.iter().filter_map(|name| catalogue.get(name)) {
        grounds.text(&format!("{} {}", service.name, service.description));
        for collection in &service.collections {
            grounds.text(&collection.name);
        }
        for route in &service.routes {
            grounds.text(&format!("{} {}", route.action, route.description));
        }
    }
    grounds
}

/// Required keywords of component `index` that an agent cannot see: in neither the prompt,
/// the fixtures, nor the answers of the oracle's calls (compared ignoring case, `_` and `-`
/// read as spaces, as a part of a word too: a keyword is an answer's substring).
fn ungrounded_keywords(
    task: &Task,
    index: usize,
    keywords: &[String],
    oracle: &Trajectory,
) -> Vec<Ungrounded> {
    // Compared as words: `in_progress` in a record is the words "in progress" to an agent.
    let words = |text: &str| text.to_lowercase().replace(['_', '-'], " ");
    let mut visible = words(&task.prompt);
    visible.push('\n');
    visible.push_str(&words(&task.fixtures.to_string()));
    for entry in &oracle.audit {
        visible.push('\n');
        visible.push_str(&words(&entry.response.to_string()));
    }
    // A fact the agent reads in a workspace file (a CSV's total, a PDF's figure).
    for file in &task.files {
        visible.push('\n');
        visible.push_str(&words(&file.readable_text(FILE_READ)));
    }
    keywords
        .iter()
        .filter(|keyword| !visible.contains(&words(keyword)))
        .map(|keyword| Ungrounded {
            field: format!("scoring_components[{index}]"),
            line: task.components[index].line,
            message: format!(
                "the keyword `{keyword}` appears nowhere an agent can see it (the prompt, the fixtures, the task's files, the answers of the oracle's calls)"
            ),
            help: "an agent could only guess it: put it in the prompt, the fixtures or a file, or drop it".into(),
        })
        .collect()
}

#[cfg(test)]
mod tests;
