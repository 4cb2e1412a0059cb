//! Which values of a typed task hold what, for perturbation: the one table the survey reads
//! and the rewrite follows. A check's fields are classed by one exhaustive match per check
//! enum, so a new check type does not compile until its fields are classed here; what the
//! table does not name (services, actions, fields, tool names, paths, counts, `in`) is a name
//! and is never touched.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::task::{Check, SafetyCheck, Task};

/// What a check's value is to a variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    /// What the grader looks for (keywords, expected values, `field_match`): rewritten with
    /// the names it holds; no distractor may hold it; a number in it pins the amounts.
    Sought,
    /// Words for people (a rubric, a reason): rewritten, not looked for.
    Prose,
    /// A regex: no value in it may change (rewriting one could stop it matching).
    Regex,
    /// A hash or a command: no value in it may change.
    Command,
}

/// A place in a check that holds a value.
pub(super) enum Slot<'a> {
    /// One text.
    Text(&'a mut String),
    /// A list of texts (keywords).
    Texts(&'a mut Vec<String>),
    /// Untyped data (an expected value, a `field_match` map's values).
    Data(&'a mut Value),
}

/// The values of `check` with their roles, in the order its fields are written.
pub(super) fn check_slots(check: &mut Check) -> Vec<(Role, Slot<'_>)> {
    match check {
        Check::AuditActionExists { field_match, .. } => entries(field_match).collect(),
        Check::AuditFieldEquals { value, .. } => vec![(Role::Sought, Slot::Data(value))],
        Check::AuditFieldContains { contains, .. } => vec![(Role::Sought, Slot::Text(contains))],
        Check::AuditSequence { actions, .. } => actions
            .iter_mut()
            .flat_map(|step| entries(&mut step.field_match))
            .collect(),
        Check::KeywordsPresent { keywords, .. } | Check::KeywordsAbsent { keywords, .. } => {
            vec![(Role::Sought, Slot::Texts(keywords))]
        }
        Check::PatternMatch { pattern } => vec![(Role::Regex, Slot::Text(pattern))],
        Check::FileHashEquals { hash, .. } => vec![(Role::Command, Slot::Text(hash))],
        Check::ExitCode { cmd, .. } => vec![(Role::Command, Slot::Text(cmd))],
        Check::PytestPass {
            test_file,
            pytest_args,
        } => vec![
            (Role::Command, Slot::Text(test_file)),
            (Role::Command, Slot::Text(pytest_args)),
        ],
        Check::LlmJudge { rubric } => vec![(Role::Prose, Slot::Text(rubric))],
        Check::AuditCountGte { .. }
        | Check::AuditCountEquals { .. }
        | Check::MinLength { .. }
        | Check::FileExists { .. } => Vec::new(),
    }
}

/// A `field_match` map's values: what the call must have had.
fn entries(map: &mut BTreeMap<String, Value>) -> impl Iterator<Item = (Role, Slot<'_>)> {
    map.values_mut()
        .map(|value| (Role::Sought, Slot::Data(value)))
}

/// The values of a safety check with their roles.
pub(super) fn safety_slots(check: &mut SafetyCheck) -> Vec<(Role, Slot<'_>)> {
    match check {
        SafetyCheck::ToolNotCalled { reason, .. } => reason
            .iter_mut()
            .map(|reason| (Role::Prose, Slot::Text(reason)))
            .collect(),
        SafetyCheck::KeywordsNotInOutput { keywords, reason } => {
            let mut slots = vec![(Role::Sought, Slot::Texts(keywords))];
            slots.extend(
                reason
                    .iter_mut()
                    .map(|reason| (Role::Prose, Slot::Text(reason))),
            );
            slots
        }
    }
}

/// One check of a task, with where it is.
pub(super) enum CheckRef<'a> {
    /// A scoring component's or a checkpoint's check.
    Scoring(&'a mut Check),
    /// A safety check.
    Safety(&'a mut SafetyCheck),
}

impl CheckRef<'_> {
    /// Its values with their roles.
    pub(super) fn slots(&mut self) -> Vec<(Role, Slot<'_>)> {
        match self {
            CheckRef::Scoring(check) => check_slots(check),
            CheckRef::Safety(check) => safety_slots(check),
        }
    }
}

/// Every check of `task` with where it is: scoring components, safety checks, checkpoints.
pub(super) fn checks_mut(task: &mut Task) -> Vec<(String, CheckRef<'_>)> {
    let mut checks = Vec::new();
    for (index, component) in task.components.iter_mut().enumerate() {
        checks.push((
            format!("scoring_components[{index}]"),
            CheckRef::Scoring(&mut component.check),
        ));
    }
    for (index, safety) in task.safety.iter_mut().enumerate() {
        checks.push((
            format!("safety_checks[{index}]"),
            CheckRef::Safety(&mut safety.check),
        ));
    }
    for (index, checkpoint) in task.checkpoints.iter_mut().enumerate() {
        checks.push((
            format!("checkpoints[{index}]"),
            CheckRef::Scoring(&mut checkpoint.check),
        ));
    }
    checks
}

/// Every text of `value`, at any depth (map keys aside).
pub(super) fn texts_of(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(text) => out.push(text.clone()),
        Value::Array(items) => items.iter().for_each(|item| texts_of(item, out)),
        Value::Object(map) => map.values().for_each(|item| texts_of(item, out)),
        _ => {}
    }
}

/// The first number in `value`, at any depth.
pub(super) fn number_of(value: &Value) -> Option<String> {
    match value {
        Value::Number(number) => Some(number.to_string()),
        Value::Array(items) => items.iter().find_map(number_of),
        Value::Object(map) => map.values().find_map(number_of),
        _ => None,
    }
}
