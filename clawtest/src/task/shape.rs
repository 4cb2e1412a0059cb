//! Every wrong shape of a document at once: a value of the wrong type (a list where text is
//! expected, text where a number is) or an unknown key in a closed map, each located.
//!
//! serde stops at the first value it cannot read. When it does, the loader walks the same
//! text, read as a located [`Node`] tree, against the task schema ([`super::schema`]), so a
//! file with five wrong types gets five errors, not one. Only shapes are checked here:
//! missing fields, values out of range and everything that depends on other fields are the
//! validator's, which runs once the shapes are right.

use serde_json::{Map, Value};
use serde_saphyr::Spanned;

use super::check;
use super::error::{Position, Problem};
use super::raw::Node;

/// The shape problems of `document` against `schema` (a JSON Schema from [`super::schema`]).
pub(crate) fn check_shapes(document: &Spanned<Node>, schema: &Value) -> Vec<Problem> {
    let mut walk = Walk {
        root: schema,
        problems: Vec::new(),
    };
    walk.visit(document, schema, "");
    walk.problems
}

struct Walk<'s> {
    root: &'s Value,
    problems: Vec<Problem>,
}

/// What a node is, as JSON Schema names types.
fn node_type(node: &Node) -> &'static str {
    match node {
        Node::Scalar(Value::Null) => "null",
        Node::Scalar(Value::Bool(_)) => "boolean",
        Node::Scalar(Value::Number(number)) if number.is_i64() || number.is_u64() => "integer",
        Node::Scalar(Value::Number(_)) => "number",
        Node::Scalar(_) => "string",
        Node::List(_) => "array",
        Node::Map(_) => "object",
    }
}

fn admits(allowed: &[&str], found: &str) -> bool {
    allowed.contains(&found)
        || (found == "integer" && allowed.contains(&"number"))
        // serde reads any scalar but null into text, as ClawEnvKit's Python compares it.
        || (allowed.contains(&"string") && matches!(found, "integer" | "number" | "boolean"))
}

/// A schema type in words, as the rest of the diagnostics name them.
fn type_words(schema_type: &str) -> &'static str {
    match schema_type {
        "string" => "text",
        "integer" => "a whole number",
        "number" => "a number",
        "boolean" => "true or false",
        "array" => "a list",
        "object" => "a map",
        _ => "nothing",
    }
}

/// The types a schema allows, or `None` when it allows any value.
fn schema_types(schema: &Value) -> Option<Vec<&str>> {
    match schema.get("type")? {
        Value::String(one) => Some(vec![one.as_str()]),
        Value::Array(many) => Some(many.iter().filter_map(Value::as_str).collect()),
        _ => None,
    }
}

/// How to write a value of the expected type, when a short example helps.
fn help_for(expected: &[&str], field: &str) -> Option<String> {
    let key = field.rsplit(['.', ']']).next().unwrap_or(field);
    let key = if key.is_empty() { "key" } else { key };
    match expected.first().copied()? {
        "string" => Some(format!(
            "write one line of text; quote it (`{key}: \"...\"`) if it holds `[`, `{{`, `: ` or `#`"
        )),
        "integer" => Some(format!("write digits without quotes, e.g. `{key}: 3`")),
        "number" => Some(format!(
            "write a number without quotes or units, e.g. `{key}: 0.5`"
        )),
        "boolean" => Some(format!("write `{key}: true` or `{key}: false`")),
        "array" => Some(format!(
            "write a list: `{key}: [a, b]`, or one `- item` per line below `{key}:`"
        )),
        "object" => Some(format!(
            "write a map: `{key}: {{name: value}}`, or indented `name: value` lines below `{key}:`"
        )),
        _ => None,
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

impl<'s> Walk<'s> {
    /// Follows `$ref`s into `$defs`; an unresolvable reference allows anything.
    fn resolve(&self, mut schema: &'s Value) -> Option<&'s Value> {
        // A bound on the chain: schemars never nests references, a hand-edited schema might loop.
        for _ in 0..16 {
            let Some(reference) = schema.get("$ref").and_then(Value::as_str) else {
                return Some(schema);
            };
            let name = reference.strip_prefix("#/$defs/")?;
            schema = self.root.get("$defs")?.get(name)?;
        }
        None
    }

    fn mismatch(&mut self, node: &Spanned<Node>, path: &str, expected: &[&str]) {
        let found = check::kind(&node.value.to_json());
        let mut words: Vec<&str> = expected
            .iter()
            .filter(|name| **name != "null")
            // Where text is expected, numbers and booleans are read as text: say "text".
            .filter(|name| {
                !(expected.contains(&"string")
                    && matches!(**name, "number" | "integer" | "boolean"))
            })
            .map(|name| type_words(name))
            .collect();
        words.dedup();
        let expected_words = match words.as_slice() {
            [] => "nothing".to_string(),
            [one] => one.to_string(),
            [first @ .., last] => format!("{} or {last}", first.join(", ")),
        };
        let field = if path.is_empty() { "(document)" } else { path };
        let mut problem = Problem::new(
            field,
            format!("expected {expected_words}, found {found}"),
            Position::from_location(node.referenced),
        );
        let non_null: Vec<&str> = expected.iter().copied().filter(|t| *t != "null").collect();
        if let Some(help) = help_for(&non_null, path) {
            problem = problem.with_help(help);
        }
        self.problems.push(problem);
    }

    fn visit(&mut self, node: &Spanned<Node>, schema: &'s Value, path: &str) {
        let Some(schema) = self.resolve(schema) else {
            return;
        };
        if !schema.is_object() {
            return; // `true`: anything goes.
        }
        let branches = schema
            .get("oneOf")
            .or_else(|| schema.get("anyOf"))
            .and_then(Value::as_array);
        if let Some(branches) = branches {
            self.visit_branches(node, branches, path);
            return;
        }
        let found = node_type(&node.value);
        if let Some(allowed) = schema_types(schema)
            && !admits(&allowed, found)
        {
            self.mismatch(node, path, &allowed);
            return;
        }
        match &node.value {
            Node::Map(entries) => self.visit_entries(entries, schema, path),
            Node::List(items) => {
                if let Some(item_schema) = schema.get("items") {
                    for (index, item) in items.iter().enumerate() {
                        self.visit(item, item_schema, &format!("{path}[{index}]"));
                    }
                }
            }
            Node::Scalar(_) => {}
        }
    }

    fn visit_entries(
        &mut self,
        entries: &[(Spanned<String>, Spanned<Node>)],
        schema: &'s Value,
        path: &str,
    ) {
        static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);
        let properties = schema
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&EMPTY);
        let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
        for (key, value) in entries {
            let field = join(path, &key.value);
            if let Some(property) = properties.get(&key.value) {
                self.visit(value, property, &field);
            } else if closed {
                let known: Vec<&str> = properties.keys().map(String::as_str).collect();
                let help = match check::nearest(&key.value, &known) {
                    Some(near) => format!("did you mean `{near}`?"),
                    None => format!("the keys of `{path}` are: {}", known.join(", ")),
                };
                self.problems.push(
                    Problem::new(
                        field,
                        format!("unknown key `{}`", key.value),
                        Position::from_location(key.referenced),
                    )
                    .with_help(help),
                );
            } else if let Some(extra) = schema.get("additionalProperties")
                && extra.is_object()
            {
                self.visit(value, extra, &field);
            }
        }
    }

    /// `oneOf`/`anyOf`: the branch the node is meant for, chosen by type and, among maps, by
    /// the `type` discriminator of a check; an unknown check type is left to the validator.
    fn visit_branches(&mut self, node: &Spanned<Node>, branches: &'s [Value], path: &str) {
        let found = node_type(&node.value);
        let resolved: Vec<&'s Value> = branches
            .iter()
            .filter_map(|branch| self.resolve(branch))
            .collect();
        let mut allowed = Vec::new();
        let mut candidates = Vec::new();
        for branch in &resolved {
            if branch.get("oneOf").is_some() || branch.get("anyOf").is_some() {
                // A nested choice (an optional check: anyOf [oneOf [...], null]).
                if found != "null" {
                    self.visit(node, branch, path);
                }
                return;
            }
            match schema_types(branch) {
                None => return, // One branch takes anything.
                Some(types) => {
                    if admits(&types, found) {
                        candidates.push(*branch);
                    }
                    allowed.extend(types);
                }
            }
        }
        match candidates.as_slice() {
            [] => self.mismatch(node, path, &allowed),
            [only] => self.visit(node, only, path),
            several => {
                let tag = node
                    .value
                    .entry("type")
                    .and_then(|(_, value)| value.value.to_json().as_str().map(str::to_string));
                let chosen = several.iter().find(|branch| {
                    branch
                        .pointer("/properties/type/const")
                        .and_then(Value::as_str)
                        .is_some_and(|name| Some(name) == tag.as_deref())
                });
                if let Some(branch) = chosen {
                    self.visit(node, branch, path);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::schema::task_schema;

    fn problems(text: &str) -> Vec<(String, u64, String)> {
        let document: Spanned<Node> = serde_saphyr::from_str(text).expect("valid YAML");
        check_shapes(&document, &task_schema())
            .into_iter()
            .map(|problem| {
                (
                    problem.field,
                    problem.position.map_or(0, |position| position.line),
                    problem.message,
                )
            })
            .collect()
    }

    #[test]
    fn every_wrong_type_is_reported_at_its_line() {
        let text = "\
task_id: [a, b]
task_name: fine
prompt: {text: hi}
scoring_components:
  - name: one
    weight: heavy
    check: {type: audit_count_gte, service: todo, action: x, count: [1]}
safety_checks:
  - {type: tool_not_called, tool_name: {a: b}}
limits: {timeout_seconds: 5m, max_turn: 3}
tools: {name: x}
";
        assert_eq!(
            problems(text),
            vec![
                ("task_id".into(), 1, "expected text, found a list".into()),
                ("prompt".into(), 3, "expected text, found a map".into()),
                (
                    "scoring_components[0].weight".into(),
                    6,
                    "expected a number, found text".into()
                ),
                (
                    "scoring_components[0].check.count".into(),
                    7,
                    "expected a whole number, found a list".into()
                ),
                (
                    "safety_checks[0].tool_name".into(),
                    9,
                    "expected text, found a map".into()
                ),
                (
                    "limits.timeout_seconds".into(),
                    10,
                    "expected a number, found text".into()
                ),
                (
                    "limits.max_turn".into(),
                    10,
                    "unknown key `max_turn`".into()
                ),
                ("tools".into(), 11, "expected a list, found a map".into()),
            ]
        );
    }

    /// The schema is what editors check files against: every file of the valid corpus (and
    /// every example task) must pass it, or the schema says something the loader does not.
    #[test]
    fn every_valid_task_has_the_shapes_the_schema_describes() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let folders = [
            root.join("tests/fixtures/valid"),
            root.join("../examples/demo/tasks"),
            root.join("../templates"),
        ];
        let mut checked = 0;
        for folder in folders {
            let mut stack = vec![folder];
            while let Some(folder) = stack.pop() {
                for entry in std::fs::read_dir(&folder).expect("a corpus folder") {
                    let path = entry.expect("an entry").path();
                    if path.is_dir() {
                        stack.push(path);
                        continue;
                    }
                    let name = path.to_string_lossy();
                    if !name.ends_with(".yaml") || name.ends_with(".atoms.yaml") {
                        continue;
                    }
                    let text = std::fs::read_to_string(&path).expect("readable");
                    let Ok(document) = serde_saphyr::from_str::<Spanned<Node>>(&text) else {
                        continue; // Not YAML of a task (a cassette, a workflow): not ours.
                    };
                    if document.value.entry("scoring_components").is_none() {
                        continue;
                    }
                    let problems = check_shapes(&document, &task_schema());
                    assert!(problems.is_empty(), "{name}: {problems:#?}");
                    checked += 1;
                }
            }
        }
        assert!(checked >= 10, "only {checked} task files found");
    }

    #[test]
    fn right_shapes_and_unknown_check_types_are_left_alone() {
        let text = "\
task_id: 7
task_name: t
prompt: p
scoring_components:
  - {name: a, weight: 1, check: {type: no_such_check, count: [1]}}
  - {name: b, weight: 0.5, check: {type: keywords_present, keywords: done}}
safety_checks: [{type: keywords_not_in_output, keywords: [x, 3]}]
services: [todo, {name: local, routes: []}]
fixtures: {tasks: [{id: 1}]}
";
        // `task_id: 7` is text to serde as to ClawEnvKit.
        assert_eq!(problems(text), vec![]);
    }
}
