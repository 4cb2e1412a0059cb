//! The Parser: a request in one sentence → an [`Intent`] (the services it needs, those the
//! catalogue lacks, a difficulty and 3–8 intent atoms). The prompt is `prompts/parse.md`;
//! the answer is read raw (fences stripped, JSON or YAML) and then validated field by field,
//! each problem named by its field as `validate` names a task's.

use std::fmt;

use serde_json::Value;

use super::ingest::read_value;
use crate::services::Catalogue;
use crate::spec::Problem;
use crate::spec::coverage::{Atom, AtomKind};

/// The parser's prompt template.
const TEMPLATE: &str = include_str!("../../prompts/parse.md");

/// How many atoms an intent has, at least and at most.
const ATOMS: std::ops::RangeInclusive<usize> = 3..=8;

/// How hard the tasks are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Difficulty {
    /// One step.
    Easy,
    /// Several steps and some judgement.
    Medium,
    /// Several services, traps and edge cases.
    Hard,
}

impl Difficulty {
    /// The difficulty a name stands for (`easy`, `medium`, `hard`).
    pub fn from_name(name: &str) -> Option<Difficulty> {
        match name {
            "easy" => Some(Difficulty::Easy),
            "medium" => Some(Difficulty::Medium),
            "hard" => Some(Difficulty::Hard),
            _ => None,
        }
    }

    /// Its name in task.yaml and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Difficulty::Easy => "easy",
            Difficulty::Medium => "medium",
            Difficulty::Hard => "hard",
        }
    }
}

impl fmt::Display for Difficulty {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

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
    let value = read_value(answer).map_err(|problem| vec![*problem])?;
    let Value::Object(map) = value else {
        return Err(vec![
            Problem::new(
                "(answer)",
                "expected one JSON object `{services, missing_services, difficulty, atoms}`",
                None,
            )
            .with_help("answer with the object only"),
        ]);
    };
    let mut problems = Vec::new();
    let mut services = Vec::new();
    let mut missing_services = Vec::new();
    match map.get("services") {
        Some(Value::Array(names)) if !names.is_empty() => {
            for (index, name) in names.iter().enumerate() {
                match name.as_str() {
                    Some(name) if catalogue.get(name).is_some() => {
                        services.push(name.to_owned());
                    }
                    Some(name) if is_service_name(name) => missing_services.push(name.to_owned()),
                    _ => problems.push(
                        Problem::new(
                            format!("services[{index}]"),
                            format!("`{name}` is not a service name"),
                            None,
                        )
                        .with_help("lower-case letters, digits and `_`"),
                    ),
                }
            }
        }
        _ => problems.push(Problem::new(
            "services",
            "expected a non-empty list of service names",
            None,
        )),
    }
    // `missing_services` only repeats what `services` says; a name only there is missing too.
    if let Some(Value::Array(names)) = map.get("missing_services") {
        for name in names.iter().filter_map(Value::as_str) {
            if catalogue.get(name).is_none()
                && is_service_name(name)
                && !missing_services.iter().any(|known| known == name)
            {
                missing_services.push(name.to_owned());
            }
        }
    }
    let difficulty = match map.get("difficulty") {
        None | Some(Value::Null) => Difficulty::Medium,
        Some(value) => match value.as_str().and_then(Difficulty::from_name) {
            Some(difficulty) => difficulty,
            None => {
                problems.push(
                    Problem::new("difficulty", format!("`{value}` is not a difficulty"), None)
                        .with_help("write easy, medium or hard"),
                );
                Difficulty::Medium
            }
        },
    };
    let mut atoms = Vec::new();
    match map.get("atoms") {
        Some(Value::Array(list)) => {
            for (index, entry) in list.iter().enumerate() {
                match serde_json::from_value::<Atom>(entry.clone()) {
                    Ok(atom) if !atom.name.trim().is_empty() => atoms.push(atom),
                    Ok(_) => problems.push(Problem::new(
                        format!("atoms[{index}].name"),
                        "an atom needs a name",
                        None,
                    )),
                    Err(error) => problems.push(
                        Problem::new(format!("atoms[{index}]"), error.to_string(), None)
                            .with_help(
                                "write {\"type\": \"action\"|\"object\"|\"constraint\", \"name\": …, \"description\": …}",
                            ),
                    ),
                }
            }
            if !ATOMS.contains(&list.len()) {
                problems.push(Problem::new(
                    "atoms",
                    format!(
                        "expected {} to {} atoms, found {}",
                        ATOMS.start(),
                        ATOMS.end(),
                        list.len()
                    ),
                    None,
                ));
            }
        }
        _ => problems.push(Problem::new(
            "atoms",
            "expected a list of intent atoms",
            None,
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
