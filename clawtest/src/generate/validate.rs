//! The Validator: what a generated task must be beyond a valid task file (`ingest.rs` has the
//! 12 structural checks). It covers the intent's atoms (each action offered and scored, each
//! object visible, each constraint enforced: `task::coverage`, as errors here); it uses only
//! the services it was given, and at least two of them when it was given several (ClawEnvKit's
//! cross-service rule); it carries an `oracle:`, which must hold (feasibility and
//! discrimination by `oracle::check`); and it is new: neither its normalised content nor its
//! prompt repeats a task of the suite or of this run (`accept`: the same steps a variant goes
//! through). Every problem is located in the answer.

use super::parse::Intent;
use crate::accept::{self, Distance, Fingerprint, Rules};
use crate::services::Catalogue;
use crate::task::{self, Position, Problem, Task};

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
    /// The tasks of the suite and those this run wrote: a task must be another scenario.
    pub known: &'a [Fingerprint],
    /// Where the feasibility proof runs a model's commands (`sandbox::commands`): in a
    /// container, or nowhere.
    pub commands: &'a crate::sandbox::commands::Commands,
}

/// A request for several services asks for tasks that need several (ClawEnvKit's validator:
/// "cross-service task but tools only reference …"): the task's tools must reach at least two
/// of them.
fn cross_service(task: &Task, allowed: &[String], at_id: Option<Position>) -> Option<Problem> {
    if allowed.len() < 2 {
        return None;
    }
    let reached: std::collections::BTreeSet<&str> = task
        .tools
        .iter()
        .map(|tool| tool.service.as_str())
        .collect();
    if reached.len() >= 2 {
        return None;
    }
    let reached = reached.into_iter().collect::<Vec<_>>().join(", ");
    Some(
        Problem::new(
            "tools",
            format!(
                "the request needs several services ({}) but the tools reach only {}",
                allowed.join(", "),
                if reached.is_empty() { "none" } else { &reached }
            ),
            at_id,
        )
        .with_help("write a task that needs tools of at least two of the services"),
    )
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
    problems.extend(cross_service(task, context.allowed, at_id));
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
    // Then the accept pipeline's steps: new (another scenario), feasible.
    let rules = Rules {
        catalogue: context.catalogue,
        threshold: context.threshold,
        known: context.known,
        distance: Distance::Scenario,
        commands: context.commands,
    };
    accept::accept(task, source, &rules, problems)
}
