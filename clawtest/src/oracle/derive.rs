//! A [`Plan`] for a task: the author's `oracle:` where written, and for each part left out
//! what the checks ask for. Calls come from the audit checks (their actions, `field_match`,
//! field values and substrings, counts and sequences), with every required request field
//! filled from the service's description and the World's fixtures (the record a keyed route
//! names is the collection's first); the answer from the output checks (keywords, patterns,
//! length) kept clear of the forbidden keywords; files from the file checks. What cannot be
//! derived is a [`Gap`] that says what to write.

use serde_json::{Map, Value};

use super::sample::{Anchor, sample};
use super::{Cause, Plan, PlannedCall, PlannedFile};
use crate::services::{Catalogue, Operation, ParamType, RouteDescription};
use crate::task::check::workspace_relative;
use crate::task::{Check, OutputSource, SafetyCheck, Task};
use crate::world::World;

/// A part of a plan that could not be derived, and what the author should write instead.
#[derive(Debug, Clone, PartialEq)]
pub struct Gap {
    /// The field concerned (`scoring_components[2]`, `oracle.calls[0]`).
    pub field: String,
    /// Its line, when known.
    pub line: Option<u64>,
    /// What could not be derived.
    pub message: String,
    /// What to write.
    pub help: String,
}

/// The plan for `task` against `world` (fresh, seeded with the task's fixtures), with the
/// task's own services in `catalogue`; the gaps when part of it cannot be derived.
pub fn plan(task: &Task, world: &World, catalogue: &Catalogue) -> Result<Plan, Vec<Gap>> {
    let mut gaps = Vec::new();
    let oracle = task.oracle.as_ref();
    let calls = match oracle.and_then(|oracle| oracle.calls.as_ref()) {
        Some(written) => written
            .iter()
            .enumerate()
            .filter_map(|(index, call)| {
                let found = task.tools.iter().find(|tool| tool.name == call.tool);
                let Some(tool) = found else {
                    gaps.push(Gap {
                        field: format!("oracle.calls[{index}].tool"),
                        line: call.line,
                        message: format!("`{}` is not one of the task's tools", call.tool),
                        help: "name one of the task's `tools`".into(),
                    });
                    return None;
                };
                Some(PlannedCall {
                    tool: tool.name.clone(),
                    service: tool.service.clone(),
                    endpoint: tool.endpoint.clone(),
                    method: tool.method,
                    arguments: call.arguments.clone(),
                    cause: Cause::Written(call.line),
                })
            })
            .collect(),
        None => derive_calls(task, world, catalogue, &mut gaps),
    };
    let files = derive_files(task, &mut gaps);
    let (answer, answer_written) = match oracle.and_then(|oracle| oracle.answer.clone()) {
        Some(answer) => (answer, true),
        None => (derive_answer(task), false),
    };
    if gaps.is_empty() {
        Ok(Plan {
            calls,
            answer,
            files,
            answer_written,
        })
    } else {
        Err(gaps)
    }
}

/// A call the checks ask for, before its request is completed.
struct Wanted {
    service: String,
    action: String,
    /// Fields that must have these values.
    fields: Map<String, Value>,
    /// Fields whose text must contain these substrings (ignoring case).
    contains: Vec<(String, String)>,
    component: usize,
    /// A step of an `audit_sequence`: placed after the sequence's previous step.
    ordered: bool,
}

impl Wanted {
    fn same_action(&self, other: &Wanted) -> bool {
        self.service == other.service && self.action == other.action
    }

    /// One call can meet both: no field given two values, no substring missing from a
    /// value the other fixes.
    fn agrees_with(&self, other: &Wanted) -> bool {
        let fits = |fields: &Map<String, Value>, contains: &[(String, String)]| {
            contains.iter().all(|(field, text)| {
                fields.get(field).is_none_or(|value| {
                    let value = match value {
                        Value::String(value) => value.clone(),
                        other => other.to_string(),
                    };
                    value.to_lowercase().contains(&text.to_lowercase())
                })
            })
        };
        self.same_action(other)
            && other
                .fields
                .iter()
                .all(|(key, value)| self.fields.get(key).is_none_or(|mine| mine == value))
            && fits(&self.fields, &other.contains)
            && fits(&other.fields, &self.contains)
    }

    fn absorb(&mut self, other: Wanted) {
        self.fields.extend(other.fields);
        self.contains.extend(other.contains);
    }
}

fn derive_calls(
    task: &Task,
    world: &World,
    catalogue: &Catalogue,
    gaps: &mut Vec<Gap>,
) -> Vec<PlannedCall> {
    let (wanted, counts) = wanted_calls(task);
    let mut drafts = fewest_calls(wanted);
    for count in &counts {
        if let Err(gap) = meet_count(task, &mut drafts, count) {
            gaps.push(gap);
        }
    }
    drafts
        .into_iter()
        .filter_map(|draft| complete(task, world, catalogue, draft, gaps))
        .collect()
}

/// An `audit_count_*` component: how many calls of an action it wants.
struct WantedCount {
    service: String,
    action: String,
    component: usize,
    fewest: usize,
    /// `audit_count_equals`: exactly this many.
    exactly: Option<usize>,
}

/// The calls the task's audit components ask for, and the counts they want, in task order.
fn wanted_calls(task: &Task) -> (Vec<Wanted>, Vec<WantedCount>) {
    let mut wanted: Vec<Wanted> = Vec::new();
    let mut counts: Vec<WantedCount> = Vec::new();
    let want =
        |service: &str, action: &str, fields: Map<String, Value>, component, ordered| Wanted {
            service: service.to_owned(),
            action: action.to_owned(),
            fields,
            contains: Vec::new(),
            component,
            ordered,
        };
    let count = |service: &String, action: &String, component, fewest: i64, exactly: bool| {
        let fewest = usize::try_from(fewest).unwrap_or(0);
        WantedCount {
            service: service.clone(),
            action: action.clone(),
            component,
            fewest,
            exactly: exactly.then_some(fewest),
        }
    };
    for (index, component) in task.components.iter().enumerate() {
        match &component.check {
            Check::AuditActionExists {
                service,
                action,
                field_match,
            } => wanted.push(want(
                service,
                action,
                field_match.clone().into_iter().collect(),
                index,
                false,
            )),
            Check::AuditFieldEquals {
                service,
                action,
                field,
                value,
            } => wanted.push(want(
                service,
                action,
                Map::from_iter([(field.clone(), value.clone())]),
                index,
                false,
            )),
            Check::AuditFieldContains {
                service,
                action,
                field,
                contains,
            } => wanted.push(Wanted {
                contains: vec![(field.clone(), contains.clone())],
                ..want(service, action, Map::new(), index, false)
            }),
            Check::AuditCountGte {
                service,
                action,
                count: fewest,
            } => counts.push(count(service, action, index, *fewest, false)),
            Check::AuditCountEquals {
                service,
                action,
                count: exactly,
            } => counts.push(count(service, action, index, *exactly, true)),
            Check::AuditSequence { service, actions } => {
                for step in actions {
                    wanted.push(want(
                        service,
                        &step.action,
                        step.field_match.clone().into_iter().collect(),
                        index,
                        true,
                    ));
                }
            }
            _ => {}
        }
    }
    (wanted, counts)
}

/// Fewest calls: a call with nothing to match is met by any call of its action, and calls
/// that agree are one call (on the same record). Sequence steps come after, each met by an
/// agreeing call after the previous step's, else inserted there.
fn fewest_calls(wanted: Vec<Wanted>) -> Vec<Wanted> {
    let (steps, unordered): (Vec<Wanted>, Vec<Wanted>) =
        wanted.into_iter().partition(|call| call.ordered);
    let mut drafts: Vec<Wanted> = Vec::new();
    for call in unordered {
        if let Some(draft) = drafts.iter_mut().find(|draft| draft.agrees_with(&call)) {
            draft.absorb(call);
        } else {
            drafts.push(call);
        }
    }
    let mut cursor = 0;
    let mut sequence = None;
    for step in steps {
        if sequence != Some(step.component) {
            sequence = Some(step.component);
            cursor = 0;
        }
        match (cursor..drafts.len()).find(|&at| drafts[at].agrees_with(&step)) {
            Some(at) => {
                drafts[at].absorb(step);
                cursor = at + 1;
            }
            None => {
                drafts.insert(cursor, step);
                cursor += 1;
            }
        }
    }
    drafts
}

/// Adds copies of an action's call until `count` is met; a gap when the other checks already
/// need more calls than an `exactly` allows.
fn meet_count(task: &Task, drafts: &mut Vec<Wanted>, count: &WantedCount) -> Result<(), Gap> {
    let WantedCount {
        service,
        action,
        component,
        fewest,
        exactly,
    } = count;
    let same = |draft: &&Wanted| &draft.service == service && &draft.action == action;
    let have = drafts.iter().filter(same).count();
    if let Some(exactly) = exactly
        && have > *exactly
    {
        return Err(Gap {
            field: format!("scoring_components[{component}]"),
            line: task.components[*component].line,
            message: format!(
                "wants exactly {exactly} `{action}` call(s), but the other checks need {have} different ones"
            ),
            help:
                "write the solution's calls in `oracle: {calls: [...]}`, or make the checks agree"
                    .into(),
        });
    }
    let copy = drafts
        .iter()
        .find(same)
        .map(|draft| draft.fields.clone())
        .unwrap_or_default();
    // Past MOST_CALLS the component is left to the proof's score: no plan grows with a count a
    // task file sets.
    for _ in have..(*fewest).min(MOST_CALLS) {
        drafts.push(Wanted {
            service: service.clone(),
            action: action.clone(),
            fields: copy.clone(),
            contains: Vec::new(),
            component: *component,
            ordered: false,
        });
    }
    Ok(())
}

/// The call's route and a request with every required field.
fn complete(
    task: &Task,
    world: &World,
    catalogue: &Catalogue,
    draft: Wanted,
    gaps: &mut Vec<Gap>,
) -> Option<PlannedCall> {
    let component = &task.components[draft.component];
    let gap = |message: String, help: &str| Gap {
        field: format!("scoring_components[{}]", draft.component),
        line: component.line,
        message,
        help: help.to_owned(),
    };
    let tool = task
        .tools
        .iter()
        .find(|tool| tool.name == draft.action && tool.service == draft.service);
    let description = catalogue.get(&draft.service);
    let route = description.and_then(|description| match tool {
        Some(tool) => description
            .routes()
            .iter()
            .find(|route| route.endpoint == tool.endpoint),
        None => description
            .routes()
            .iter()
            .find(|route| route.action == draft.action),
    });
    let Some(route) = route else {
        gaps.push(gap(
            format!("no route of `{}` records `{}`", draft.service, draft.action),
            "write the solution's calls in `oracle: {calls: [...]}`",
        ));
        return None;
    };
    // Substrings wanted in one field are written one after the other ("verify OpenSSL");
    // a field a check fixes already holds them (the calls agreed).
    let mut fields = draft.fields;
    let fixed: Vec<String> = fields.keys().cloned().collect();
    for (field, text) in draft.contains {
        if fixed.contains(&field) {
            continue;
        }
        let joined = match fields.get(&field) {
            Some(Value::String(before)) => format!("{before} {text}"),
            _ => text,
        };
        fields.insert(field, Value::String(joined));
    }
    let mut arguments = Map::new();
    for parameter in &route.parameters {
        let value = match fields.get(&parameter.name) {
            Some(value) => shaped(parameter.ty, value),
            None if key_of(route) == Some(parameter.name.as_str()) => {
                match first_id(world, &draft.service, route, catalogue) {
                    Some(id) => id,
                    None => {
                        gaps.push(gap(
                            format!(
                                "`{}` names a record by `{}`, and the fixtures have none to name",
                                draft.action, parameter.name
                            ),
                            "add a record to `fixtures`, or write the call in `oracle: {calls: [...]}`",
                        ));
                        return None;
                    }
                }
            }
            None if parameter.required => {
                fixture_value(world, catalogue, &draft.service, &parameter.name)
                    .unwrap_or_else(|| filler(&parameter.name, parameter.ty, parameter.items))
            }
            None => continue,
        };
        arguments.insert(parameter.name.clone(), value);
    }
    // Fields a check names that the route does not declare are sent too: the service drops
    // them, as FastAPI does, and the check then fails where the author can see why.
    for (key, value) in fields {
        arguments.entry(key).or_insert(value);
    }
    Some(PlannedCall {
        tool: tool.map_or_else(|| route.action.clone(), |tool| tool.name.clone()),
        service: draft.service,
        endpoint: route.endpoint.clone(),
        method: route.method,
        arguments,
        cause: Cause::Component(draft.component),
    })
}

/// A value the fixtures give the field somewhere in the service's records: a careful agent
/// copies what it sees (a date in the service's own format, an address it knows).
fn fixture_value(
    world: &World,
    catalogue: &Catalogue,
    service: &str,
    field: &str,
) -> Option<Value> {
    let description = catalogue.get(service)?;
    description.collections.iter().find_map(|collection| {
        world
            .records(service, &collection.name)?
            .iter()
            .find_map(|record| record.get(field).filter(|value| !value.is_null()).cloned())
    })
}

/// The parameter that names the record a keyed route reads, changes or removes.
fn key_of(route: &RouteDescription) -> Option<&str> {
    match &route.operation {
        Operation::Get { key, .. }
        | Operation::Update { key, .. }
        | Operation::Delete { key, .. } => Some(key),
        _ => None,
    }
}

/// The id of the first record of the collection a keyed route works on.
fn first_id(
    world: &World,
    service: &str,
    route: &RouteDescription,
    catalogue: &Catalogue,
) -> Option<Value> {
    let collection = match &route.operation {
        Operation::Get { collection, .. }
        | Operation::Update { collection, .. }
        | Operation::Delete { collection, .. } => collection,
        _ => return None,
    };
    let description = catalogue.get(service)?;
    let id_field = description
        .collections
        .iter()
        .find(|candidate| &candidate.name == collection)
        .and_then(|candidate| candidate.id_field.clone())
        .unwrap_or_else(|| "id".into());
    world
        .records(service, collection)?
        .iter()
        .find_map(|record| record.get(&id_field).or_else(|| record.get("id")).cloned())
}

/// A check's value in the shape the parameter takes: a text for a list parameter is a list
/// of that text (`to: bob@…` for gmail's `to: list[str]`).
fn shaped(ty: ParamType, value: &Value) -> Value {
    match (ty, value) {
        (ParamType::Array, Value::String(_)) => Value::Array(vec![value.clone()]),
        _ => value.clone(),
    }
}

/// A value for a required field no check gives: what a careful agent would write.
fn filler(name: &str, ty: ParamType, items: Option<ParamType>) -> Value {
    let text = |name: &str| {
        let name = name.to_lowercase();
        if name.contains("email")
            || ["to", "cc", "bcc", "recipient", "from"].contains(&name.as_str())
        {
            "oracle@example.com".to_owned()
        } else if name == "date" || name.ends_with("_date") {
            "2026-01-05".to_owned()
        } else if name.contains("time") || name == "start" || name == "end" {
            "2026-01-05T09:00:00".to_owned()
        } else if name.contains("url") {
            "https://example.com".to_owned()
        } else {
            format!("oracle {name}")
        }
    };
    match ty {
        ParamType::String => Value::String(text(name)),
        ParamType::Integer => Value::from(1),
        ParamType::Number => Value::from(1.0),
        ParamType::Boolean => Value::Bool(true),
        ParamType::Array => Value::Array(match items {
            Some(item) => vec![filler(name, item, None)],
            None => vec![Value::String(text(name))],
        }),
        ParamType::Object => Value::Object(Map::new()),
    }
}

/// Files the file checks look for that the task's own `files` do not put there: written by
/// the author, else (for `file_exists`) a short text; a `file_hash_equals` file cannot be
/// derived from its hash.
fn derive_files(task: &Task, gaps: &mut Vec<Gap>) -> Vec<PlannedFile> {
    let mut files: Vec<PlannedFile> = task
        .oracle
        .iter()
        .flat_map(|oracle| oracle.files.iter().map(PlannedFile::from))
        .collect();
    for (index, component) in task.components.iter().enumerate() {
        let (path, hash) = match &component.check {
            Check::FileExists { path } => (path, None),
            Check::FileHashEquals { path, hash } => (path, Some(hash)),
            _ => continue,
        };
        // A path outside the workspace is one the grader scores 0 and the oracle must not
        // write to: it is left to the proof's score.
        let Some(relative) = workspace_relative(path) else {
            continue;
        };
        let relative = relative.as_str();
        let copied_in = task
            .files
            .iter()
            .any(|file| file.target == std::path::Path::new(relative));
        if copied_in || files.iter().any(|file| file.path == relative) {
            continue;
        }
        match hash {
            None => files.push(PlannedFile {
                path: relative.to_owned(),
                content: "Written by the oracle.\n".into(),
            }),
            Some(hash) => gaps.push(Gap {
                field: format!("scoring_components[{index}]"),
                line: component.line,
                message: format!("the content of `{path}` cannot be derived from its hash"),
                help: format!(
                    "write `oracle: {{files: [{{path: /workspace/{relative}, content: ...}}]}}` with the text whose SHA-256 is {hash}"
                ),
            }),
        }
    }
    files
}

/// The most calls of one action the oracle plans for a count check.
const MOST_CALLS: usize = 1000;

/// The longest answer the oracle writes for a `min_length` check.
const MOST_ANSWER_CHARACTERS: usize = 1 << 20;

/// An answer that meets the output checks: their keywords, a text each pattern matches where
/// its anchors put it, and padding up to the longest `min_length`, without a forbidden word.
fn derive_answer(task: &Task) -> String {
    let mut keywords = Vec::new();
    let mut forbidden = Vec::new();
    let mut fewest_characters = 0;
    let (mut start, mut free, mut end) = (Vec::new(), Vec::new(), Vec::new());
    for component in &task.components {
        match &component.check {
            Check::KeywordsPresent {
                keywords: words,
                source: OutputSource::AgentOutput,
            } => keywords.extend(words.iter().cloned()),
            Check::KeywordsAbsent {
                keywords: words,
                source: OutputSource::AgentOutput,
            } => forbidden.extend(words.iter().map(|word| word.to_lowercase())),
            Check::PatternMatch { pattern } => match sample(pattern) {
                Some((text, Anchor::Start)) => start.push(text),
                Some((text, Anchor::End)) => end.push(text),
                Some((text, Anchor::Whole)) => return text,
                Some((text, Anchor::Free)) => free.push(text),
                None => {}
            },
            Check::MinLength { min_length } => {
                fewest_characters = fewest_characters
                    .max(usize::try_from(*min_length).unwrap_or(usize::MAX))
                    .min(MOST_ANSWER_CHARACTERS);
            }
            _ => {}
        }
    }
    for safety in &task.safety {
        if let SafetyCheck::KeywordsNotInOutput {
            keywords: words, ..
        } = &safety.check
        {
            forbidden.extend(words.iter().map(|word| word.to_lowercase()));
        }
    }
    let clean = |text: &str| {
        let lower = text.to_lowercase();
        !forbidden
            .iter()
            .any(|word| !word.is_empty() && lower.contains(word.as_str()))
    };
    let mut answer = start.join(" ");
    let push = |answer: &mut String, text: &str| {
        if !answer.is_empty() && !text.is_empty() {
            answer.push(' ');
        }
        answer.push_str(text);
    };
    let opening = ["Done.", "Finished.", "OK."]
        .into_iter()
        .find(|text| clean(text))
        .unwrap_or("");
    push(&mut answer, opening);
    if !keywords.is_empty() {
        push(&mut answer, &format!("{}.", keywords.join(", ")));
    }
    for text in &free {
        push(&mut answer, text);
    }
    let tail = end.join(" ");
    let filler = ["The task is complete.", "All steps are done.", "x"]
        .into_iter()
        .find(|text| clean(text))
        .unwrap_or(".");
    // Fillers until the answer and its tail (after a space) are long enough, counted once:
    // each filler adds its characters and, after the first word, a space.
    let goal = fewest_characters.saturating_sub(tail.chars().count() + 1);
    let mut length = answer.chars().count();
    if length == 0 && goal > 0 {
        push(&mut answer, filler);
        length = filler.chars().count();
    }
    for _ in 0..goal
        .saturating_sub(length)
        .div_ceil(filler.chars().count() + 1)
    {
        push(&mut answer, filler);
    }
    push(&mut answer, &tail);
    answer
}
