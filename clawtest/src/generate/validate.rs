//! The Validator: what a generated task must be beyond a valid task file (`ingest.rs` has the
//! 12 structural checks). It covers the intent's atoms (each action offered and scored, each
//! object visible, each constraint enforced: `task::coverage`, as errors here); it uses only
//! the services it was given; it carries an `oracle:`, which must hold (feasibility and
//! discrimination by `oracle::check`); and it is new: neither its normalised content nor its
//! prompt repeats a task of the suite or of this run. Every problem is located in the answer.

use std::collections::BTreeSet;

use sha2::{Digest, Sha256};

use super::parse::Intent;
use crate::services::Catalogue;
use crate::task::{self, Position, Problem, Task};

/// Two prompts whose word sets overlap this much (Jaccard) are the same scenario.
pub const SIMILARITY: f64 = 0.8;

/// A task already in the suite or written by this run, as dedup compares it.
#[derive(Debug, Clone)]
pub struct Known {
    /// Its `task_id`.
    pub id: String,
    /// Its `task_name`, for the "do not repeat" line.
    pub name: String,
    /// The hash of its normalised content ([`content_hash`]).
    pub hash: String,
    /// Its prompt's words ([`words`]).
    pub words: BTreeSet<String>,
}

impl Known {
    /// What dedup keeps of `task`.
    pub fn of(task: &Task) -> Known {
        Known {
            id: task.id.clone(),
            name: task.name.clone(),
            hash: content_hash(task),
            words: words(&task.prompt),
        }
    }
}

/// The hash of what a task is, whatever it is called: its written form without its id and
/// name, lower case, with every run of white space one space.
pub fn content_hash(task: &Task) -> String {
    let mut document = task::write::document(task).unwrap_or_default();
    if let Some(map) = document.as_object_mut() {
        map.remove("task_id");
        map.remove("task_name");
    }
    let text = document.to_string().to_lowercase();
    let normalised = text.split_whitespace().collect::<Vec<_>>().join(" ");
    Sha256::digest(normalised.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// A prompt's words: lower case, letters and digits, three characters or more.
pub fn words(prompt: &str) -> BTreeSet<String> {
    prompt
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| word.chars().count() >= 3)
        .map(str::to_owned)
        .collect()
}

/// The Jaccard similarity of two word sets (1 for two empty ones).
pub fn similarity(left: &BTreeSet<String>, right: &BTreeSet<String>) -> f64 {
    let union = left.union(right).count();
    if union == 0 {
        return 1.0;
    }
    left.intersection(right).count() as f64 / union as f64
}

/// What the validator needs besides the task.
pub struct Context<'a> {
    /// The parser's intent.
    pub intent: &'a Intent,
    /// The services the task may use (catalogue and generated).
    pub allowed: &'a [String],
    /// The catalogue with the generated services.
    pub catalogue: &'a Catalogue,
    /// The suite's pass threshold, for the feasibility proof.
    pub threshold: f64,
    /// The tasks of the suite and those this run wrote.
    pub known: &'a [Known],
}

/// Every reason `task` (loaded from `source`) cannot be written; none when it can.
pub fn check(task: &Task, source: &str, context: &Context<'_>) -> Vec<Problem> {
    let at_id = Some(Position {
        line: task.line,
        column: 1,
        span: None,
    });
    let mut problems = task::coverage::coverage(task, &context.intent.atoms);
    for service in &task.services {
        if !context.allowed.iter().any(|allowed| allowed == service) {
            problems.push(
                Problem::new(
                    "services",
                    format!("the task uses `{service}`, which the request does not need"),
                    at_id,
                )
                .with_help(format!("use only {}", context.allowed.join(", "))),
            );
        }
    }
    let Some(oracle) = &task.oracle else {
        problems.push(
            Problem::new(
                "oracle",
                "a generated task must carry its solution: `oracle:` is missing",
                at_id,
            )
            .with_help("add `oracle: {calls: [{tool, arguments}], answer: \"…\"}`"),
        );
        return problems;
    };
    if oracle.answer.is_none() {
        problems.push(
            Problem::new("oracle.answer", "the oracle gives no final answer", at_id)
                .with_help("add `answer:`, stating every keyword the checks require"),
        );
    }
    // Duplicates first: a repeat is rejected without playing it.
    let shown = Known::of(task);
    for known in context.known {
        if known.hash == shown.hash {
            problems.push(
                Problem::new(
                    "task_id",
                    format!(
                        "the task repeats `{}` (the same content under another name)",
                        known.id
                    ),
                    at_id,
                )
                .with_help("write a different scenario"),
            );
        } else if similarity(&known.words, &shown.words) >= SIMILARITY {
            problems.push(
                Problem::new(
                    "prompt",
                    format!(
                        "the prompt is {:.0} % like `{}`'s: the same scenario",
                        100.0 * similarity(&known.words, &shown.words),
                        known.id
                    ),
                    at_id,
                )
                .with_help("write a different scenario, with other people, things and steps"),
            );
        }
    }
    if !problems.is_empty() {
        return problems;
    }
    let feasibility = crate::oracle::check(task, context.catalogue, context.threshold);
    problems.extend(
        feasibility
            .problems
            .into_iter()
            .map(|infeasible| infeasible.into_problem(source)),
    );
    problems
}
