//! The Parser: a request in one sentence → an [`Intent`] (the services it needs, those the
//! catalogue lacks, a difficulty and 3–8 intent atoms). The prompt is `prompts/parse.md`;
//! the answer is read raw (fences stripped, JSON or YAML) and then validated field by field,
//! each problem named by its field as `validate` names a task's.

use serde_json::Value;

use super::ingest::read_value;
use serde_saphyr::Spanned;

use crate::services::Catalogue;
use crate::task::coverage::{Atom, AtomKind};
use crate::task::raw::Node;
use crate::task::{Position, Problem};

/// The parser's prompt template.
const TEMPLATE: &str = include_str!("../../prompts/parse.md");

/// How many atoms an intent has, at least and at most.
const ATOMS: std::ops::RangeInclusive<usize> = 3..=8;

pub use crate::difficulty::Difficulty;

/// What the tasks of a request need.
#[derive(Debug, Clone, PartialEq)]
pub struct Intent {
    /// The catalogue's services the tasks use, in the parser's order.
    pub services: Vec<String>,
    /// Services the catalogue lacks, to be described before the tasks are written.
    pub missing_services: Vec<String>,
    /// How hard the tasks are.
    pub difficulty: Difficulty,
    /// What every task must cover.
    pub atoms: Vec<Atom>,
}

/// The parser's prompt for `request`, listing the catalogue's services.
pub fn prompt(request: &str, catalogue: &Catalogue) -> String {
    let services: Vec<String> = catalogue
        .names()
        .filter_map(|name| catalogue.get(name))
        .map(|service| format!("- `{}`: {}", service.name, service.description))
        .collect();
    TEMPLATE
        .replace("{{services}}", &services.join("\n"))
        .replace("{{request}}", request.trim())
}

/// Reads the parser's answer: every problem found, or the intent.
pub fn read(answer: &str, catalogue: &Catalogue) -> Result<Intent, Vec<Problem>> {
    let root: Spanned<Node> = read_value(answer).map_err(|problem| vec![*problem])?;
    if !matches!(root.value, Node::Map(_)) {
        return Err(vec![
            Problem::new(
                "(answer)",
                "expected one JSON object `{services, missing_services, difficulty, atoms}`",
                at(&root),
            )
            .with_help("answer with the object only"),
        ]);
    }
    // A missing field is placed where the object starts.
    let field = |key: &str| root.value.entry(key).map(|(_, value)| value);
    let mut problems = Vec::new();
    let mut services = Vec::new();
    let mut missing_services = Vec::new();
    match field("services") {
        Some(Spanned {
            value: Node::List(names),
            ..
        }) if !names.is_empty() => {
            for (index, name) in names.iter().enumerate() {
                match &name.value {
                    Node::Scalar(Value::String(text)) if catalogue.get(text).is_some() => {
                        services.push(text.clone());
                    }
                    Node::Scalar(Value::String(text)) if is_service_name(text) => {
                        missing_services.push(text.clone());
                    }
                    other => problems.push(
                        Problem::new(
                            format!("services[{index}]"),
                            format!("`{}` is not a service name", other.to_json()),
                            at(name),
                        )
                        .with_help("lower-case letters, digits and `_`"),
                    ),
                }
            }
        }
        other => problems.push(Problem::new(
            "services",
            "expected a non-empty list of service names",
            other.map_or(at(&root), at),
        )),
    }
    // `missing_services` only repeats what `services` says; a name only there is missing too.
    if let Some(Spanned {
        value: Node::List(names),
        ..
    }) = field("missing_services")
    {
        for name in names {
            if let Node::Scalar(Value::String(name)) = &name.value
                && catalogue.get(name).is_none()
                && is_service_name(name)
                && !missing_services.contains(name)
            {
                missing_services.push(name.clone());
            }
        }
    }
    let difficulty = match field("difficulty") {
        None
        | Some(Spanned {
            value: Node::Scalar(Value::Null),
            ..
        }) => Difficulty::Medium,
        Some(value) => match value
            .value
            .to_json()
            .as_str()
            .and_then(Difficulty::from_name)
        {
            Some(difficulty) => difficulty,
            None => {
                problems.push(
                    Problem::new(
                        "difficulty",
                        format!("`{}` is not a difficulty", value.value.to_json()),
                        at(value),
                    )
                    .with_help("write easy, medium or hard"),
                );
                Difficulty::Medium
            }
        },
    };
    let mut atoms = Vec::new();
    match field("atoms") {
        Some(
            list @ Spanned {
                value: Node::List(entries),
                ..
            },
        ) => {
            for (index, entry) in entries.iter().enumerate() {
                match serde_json::from_value::<Atom>(entry.value.to_json()) {
                    Ok(atom) if !atom.name.trim().is_empty() => atoms.push(atom),
                    Ok(_) => problems.push(Problem::new(
                        format!("atoms[{index}].name"),
                        "an atom needs a name",
                        at(entry),
                    )),
                    Err(error) => problems.push(
                        Problem::new(format!("atoms[{index}]"), error.to_string(), at(entry))
                            .with_help(
                                "write {\"type\": \"action\"|\"object\"|\"constraint\", \"name\": …, \"description\": …}",
                            ),
                    ),
                }
            }
            if !ATOMS.contains(&entries.len()) {
                problems.push(Problem::new(
                    "atoms",
                    format!(
                        "expected {} to {} atoms, found {}",
                        ATOMS.start(),
                        ATOMS.end(),
                        entries.len()
                    ),
                    at(list),
                ));
            }
        }
        other => problems.push(Problem::new(
            "atoms",
            "expected a list of intent atoms",
            other.map_or(at(&root), at),
        )),
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(Intent {
        services,
        missing_services,
        difficulty,
        atoms,
    })
}

/// Where a value of the answer was written.
fn at<T>(spanned: &Spanned<T>) -> Option<Position> {
    Position::from_location(spanned.referenced)
}

/// A name a task-local service may have: lower-case letters, digits and `_`, from a letter.
pub(crate) fn is_service_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.len() <= 40
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// An atom kind's name, as the parser writes it.
pub(crate) fn kind_name(kind: AtomKind) -> &'static str {
    match kind {
        AtomKind::Action => "action",
        AtomKind::Object => "object",
        AtomKind::Constraint => "constraint",
    }
}

/// The intent's atoms as the prompt lists them.
pub(crate) fn atom_lines(atoms: &[Atom]) -> String {
    atoms
        .iter()
        .map(|atom| {
            format!(
                "- {} `{}`: {}",
                kind_name(atom.kind),
                atom.name,
                atom.description
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_in_fences_with_known_and_missing_services_is_an_intent() {
        let answer = "```json\n{\"services\": [\"gmail\", \"payroll\"], \"difficulty\": \"hard\", \"atoms\": [\
            {\"type\": \"action\", \"name\": \"send_email\", \"description\": \"send it\"},\
            {\"type\": \"object\", \"name\": \"payslip\"},\
            {\"type\": \"constraint\", \"name\": \"salary\"}]}\n```";
        let intent = read(answer, &Catalogue::builtin()).unwrap();
        assert_eq!(intent.services, ["gmail"]);
        assert_eq!(intent.missing_services, ["payroll"]);
        assert_eq!(intent.difficulty, Difficulty::Hard);
        assert_eq!(intent.atoms.len(), 3);
    }

    #[test]
    fn every_wrong_field_is_named() {
        let answer = r#"{"services": ["Gmail!"], "difficulty": "brutal", "atoms": [{"type": "verb", "name": "x"}]}"#;
        let problems = read(answer, &Catalogue::builtin()).unwrap_err();
        let fields: Vec<&str> = problems
            .iter()
            .map(|problem| problem.field.as_str())
            .collect();
        assert_eq!(fields, ["services[0]", "difficulty", "atoms[0]", "atoms"]);
        // Each at the value it is about: line 1, the columns where they are written.
        let columns: Vec<u64> = problems
            .iter()
            .map(|problem| problem.position.expect("located").column)
            .collect();
        let answer = r#"{"services": ["Gmail!"], "difficulty": "brutal", "atoms": [{"type": "verb", "name": "x"}]}"#;
        assert_eq!(columns[0] as usize, answer.find("\"Gmail!").unwrap() + 1);
        assert_eq!(columns[1] as usize, answer.find("\"brutal").unwrap() + 1);
    }

    #[test]
    fn an_answer_that_is_not_json_is_located() {
        let problems = read(
            "{\"services\": [gmail,\n  \"atoms\": ]",
            &Catalogue::builtin(),
        )
        .unwrap_err();
        assert_eq!(problems.len(), 1);
        assert!(problems[0].position.is_some(), "{problems:?}");
    }
}
