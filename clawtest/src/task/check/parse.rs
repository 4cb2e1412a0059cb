//! Reading a check's map into a [`Check`] or a [`SafetyCheck`]: every parameter problem at once
//! (missing, mistyped, unknown, with the nearest known name as help), aliases resolved to one
//! spelling, and patterns parsed (compiled only when they could pass regex's size limit, through
//! one memo the grader shares).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{CHECK_TYPES, Check, OutputSource, SAFETY_TYPES, SafetyCheck, SequenceStep};

/// A parameter problem, relative to the check's map: (parameter, message, help).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParameterProblem {
    /// The parameter's key in the check's map (`actions[].field_match` inside a sequence step).
    pub(crate) parameter: String,
    /// What is wrong with it, in a task writer's words.
    pub(crate) message: String,
    /// How to fix it, when there is one thing to suggest.
    pub(crate) help: Option<String>,
    /// The parameter is required and absent (rather than present with a wrong value).
    pub(crate) missing: bool,
}

impl ParameterProblem {
    fn new(parameter: &str, message: impl Into<String>) -> ParameterProblem {
        ParameterProblem {
            parameter: parameter.to_string(),
            message: message.into(),
            help: None,
            missing: false,
        }
    }

    fn with_help(mut self, help: impl Into<String>) -> ParameterProblem {
        self.help = Some(help.into());
        self
    }
}

fn is_empty_collection(value: &Value) -> bool {
    match value {
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
        _ => false,
    }
}

/// Reads a check's parameters by name, trying aliases in order, and remembers what was missing.
struct Parameters<'a> {
    map: &'a Map<String, Value>,
    problems: Vec<ParameterProblem>,
}

impl<'a> Parameters<'a> {
    fn value(&mut self, names: &[&str]) -> Option<&'a Value> {
        let found = names
            .iter()
            .find_map(|name| self.map.get(*name).filter(|value| !value.is_null()));
        // ClawEnvKit tests a required parameter for truthiness: an empty list or map is
        // refused, and a check over nothing (`keywords: []`) could never mean anything.
        if let Some(empty @ (Value::Array(_) | Value::Object(_))) = found
            && is_empty_collection(empty)
        {
            let what = if empty.is_array() { "list" } else { "map" };
            self.problems.push(
                ParameterProblem::new(
                    names[0],
                    format!("`{}` is an empty {what}; it needs at least one item", names[0]),
                )
                .with_help(format!(
                    "give `{}` at least one item, or remove the check (ClawEnvKit refuses an empty `{}` too)",
                    names[0], names[0]
                )),
            );
            return None;
        }
        if found.is_none() {
            let spelled = names.join("` or `");
            let mut problem =
                ParameterProblem::new(names[0], format!("missing required parameter `{spelled}`"));
            // A present-but-null value (`value:` with nothing after it) is missing too.
            problem.help = Some(format!("add `{}: <value>` to the check", names[0]));
            problem.missing = true;
            self.problems.push(problem);
        }
        found
    }

    fn string(&mut self, names: &[&str]) -> String {
        match self.value(names) {
            Some(Value::String(text)) => text.clone(),
            // Numbers and booleans are accepted where a name or text is expected: YAML makes
            // `action: 404` or `value: true` easy to write and ClawEnvKit compares them as text.
            Some(Value::Number(number)) => number.to_string(),
            Some(Value::Bool(flag)) => flag.to_string(),
            Some(other) => {
                self.problems.push(
                    ParameterProblem::new(
                        names[0],
                        format!("expected text, found {}", kind(other)),
                    )
                    .with_help(format!("write one value, e.g. `{}: \"...\"`", names[0])),
                );
                String::new()
            }
            None => String::new(),
        }
    }

    fn integer(&mut self, names: &[&str]) -> i64 {
        match self.value(names) {
            Some(Value::Number(number)) => match number.as_i64() {
                Some(integer) => integer,
                None => {
                    self.problems.push(
                        ParameterProblem::new(
                            names[0],
                            format!("expected a whole number, found {number}"),
                        )
                        .with_help(format!(
                            "write a whole number, e.g. `{}: {}`",
                            names[0],
                            number.as_f64().map_or(1.0, f64::ceil)
                        )),
                    );
                    0
                }
            },
            Some(other) => {
                self.problems.push(
                    ParameterProblem::new(
                        names[0],
                        format!("expected a whole number, found {}", kind(other)),
                    )
                    .with_help(format!("write it in digits, e.g. `{}: 2`", names[0])),
                );
                0
            }
            None => 0,
        }
    }

    fn optional_integer(&mut self, name: &str, default: i64) -> i64 {
        match self.map.get(name) {
            None | Some(Value::Null) => default,
            Some(_) => self.integer(&[name]),
        }
    }

    fn optional_string(&mut self, name: &str) -> Option<String> {
        match self.map.get(name) {
            None | Some(Value::Null) => None,
            Some(_) => Some(self.string(&[name])),
        }
    }

    fn keywords(&mut self, name: &str) -> Vec<String> {
        match self.value(&[name]) {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|item| match item {
                    Value::String(text) => Some(text.clone()),
                    Value::Number(number) => Some(number.to_string()),
                    other => {
                        self.problems.push(ParameterProblem::new(
                            name,
                            format!(
                                "expected a list of text, found an item that is {}",
                                kind(other)
                            ),
                        ));
                        None
                    }
                })
                .collect(),
            Some(Value::String(single)) => vec![single.clone()],
            Some(other) => {
                self.problems.push(
                    ParameterProblem::new(
                        name,
                        format!("expected a list of keywords, found {}", kind(other)),
                    )
                    .with_help(format!("e.g. `{name}: [done, sent]`")),
                );
                Vec::new()
            }
            None => Vec::new(),
        }
    }

    fn field_match(&mut self, map: &Map<String, Value>) -> BTreeMap<String, Value> {
        match map.get("field_match") {
            None | Some(Value::Null) => BTreeMap::new(),
            Some(Value::Object(pairs)) => pairs
                .iter()
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect(),
            Some(other) => {
                self.problems.push(
                    ParameterProblem::new(
                        "field_match",
                        format!("expected a map of field: value, found {}", kind(other)),
                    )
                    .with_help("e.g. `field_match: {status: done}`"),
                );
                BTreeMap::new()
            }
        }
    }
}

impl Parameters<'_> {
    /// `audit_sequence`'s `actions`: each step an action's name or `{action, field_match?}`.
    fn sequence_steps(&mut self) -> Vec<SequenceStep> {
        match self.value(&["actions"]) {
            Some(Value::Array(steps)) => steps
                .iter()
                .filter_map(|step| self.sequence_step(step))
                .collect(),
            Some(other) => {
                // "a, b" written as one text is the list it names.
                let help = match other {
                    Value::String(text) => format!(
                        "write a list: `actions: [{}]`",
                        text.split(',')
                            .map(str::trim)
                            .filter(|action| !action.is_empty())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    _ => "e.g. `actions: [list_tasks, {action: update_task, field_match: {status: done}}]`"
                        .to_string(),
                };
                self.problems.push(
                    ParameterProblem::new(
                        "actions",
                        format!("expected a list of steps, found {}", kind(other)),
                    )
                    .with_help(help),
                );
                Vec::new()
            }
            None => Vec::new(),
        }
    }

    /// One step of `actions`; its problems are this check's, under `actions[].…`.
    fn sequence_step(&mut self, step: &Value) -> Option<SequenceStep> {
        match step {
            Value::String(action) => Some(SequenceStep {
                action: action.clone(),
                field_match: BTreeMap::new(),
            }),
            Value::Object(step_map) => {
                let mut step_parameters = Parameters {
                    map: step_map,
                    problems: Vec::new(),
                };
                let action = step_parameters.string(&["action"]);
                let field_match = step_parameters.field_match(step_map);
                self.problems
                    .extend(step_parameters.problems.into_iter().map(|mut problem| {
                        problem.parameter = format!("actions[].{}", problem.parameter);
                        problem
                    }));
                Some(SequenceStep {
                    action,
                    field_match,
                })
            }
            other => {
                self.problems.push(ParameterProblem::new(
                    "actions",
                    format!(
                        "each step is `{{action, field_match?}}`, found {}",
                        kind(other)
                    ),
                ));
                None
            }
        }
    }
}

/// What a JSON value is, in words, for error messages.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

/// Parses one `check:` map into a [`Check`], or every parameter problem it has.
pub(crate) fn parse_check(map: &Map<String, Value>) -> Result<Check, Vec<ParameterProblem>> {
    let Some(type_name) = map.get("type").and_then(Value::as_str) else {
        return Err(vec![ParameterProblem {
            parameter: "type".into(),
            message: "missing `type`: a check needs one of the 15 check types".into(),
            help: Some(format!("one of: {}", CHECK_TYPES.join(", "))),
            missing: true,
        }]);
    };
    let mut parameters = Parameters {
        map,
        problems: Vec::new(),
    };
    let check = match type_name {
        "audit_action_exists" => Check::AuditActionExists {
            service: parameters.string(&["service"]),
            action: parameters.string(&["action"]),
            field_match: parameters.field_match(map),
        },
        "audit_field_equals" => Check::AuditFieldEquals {
            service: parameters.string(&["service"]),
            action: parameters.string(&["action"]),
            field: parameters.string(&["field"]),
            value: parameters.value(&["value"]).cloned().unwrap_or(Value::Null),
        },
        "audit_field_contains" => Check::AuditFieldContains {
            service: parameters.string(&["service"]),
            action: parameters.string(&["action"]),
            field: parameters.string(&["field"]),
            contains: parameters.string(&["contains", "value"]),
        },
        "audit_count_gte" => Check::AuditCountGte {
            service: parameters.string(&["service"]),
            action: parameters.string(&["action"]),
            count: parameters.integer(&["count", "min_count"]),
        },
        "audit_count_equals" => Check::AuditCountEquals {
            service: parameters.string(&["service"]),
            action: parameters.string(&["action"]),
            count: parameters.integer(&["count", "expected_count"]),
        },
        "audit_sequence" => Check::AuditSequence {
            service: parameters.string(&["service"]),
            actions: parameters.sequence_steps(),
        },
        "keywords_present" | "keywords_absent" => {
            let keywords = parameters.keywords("keywords");
            let source = match parameters.optional_string("in").as_deref() {
                None | Some("agent_output") => OutputSource::AgentOutput,
                Some(other) => OutputSource::Other(other.to_string()),
            };
            if type_name == "keywords_present" {
                Check::KeywordsPresent { keywords, source }
            } else {
                Check::KeywordsAbsent { keywords, source }
            }
        }
        "pattern_match" => Check::PatternMatch {
            pattern: parameters.string(&["pattern"]),
        },
        "min_length" => Check::MinLength {
            min_length: parameters.integer(&["min_length", "length"]),
        },
        "file_exists" => Check::FileExists {
            path: parameters.string(&["path"]),
        },
        "file_hash_equals" => Check::FileHashEquals {
            path: parameters.string(&["path"]),
            hash: parameters.string(&["hash"]).to_ascii_lowercase(),
        },
        "exit_code" => Check::ExitCode {
            cmd: parameters.string(&["cmd"]),
            expected_exit: parameters.optional_integer("expected_exit", 0),
        },
        "pytest_pass" => Check::PytestPass {
            test_file: parameters.string(&["test_file"]),
            pytest_args: parameters
                .optional_string("pytest_args")
                .unwrap_or_else(|| "-v --tb=short".into()),
        },
        "llm_judge" => Check::LlmJudge {
            rubric: parameters.string(&["rubric"]),
        },
        unknown => {
            let mut problem =
                ParameterProblem::new("type", format!("unknown check type `{unknown}`"));
            problem.help = Some(match nearest(unknown, &CHECK_TYPES) {
                Some(near) => format!("did you mean `{near}`?"),
                None => format!("one of: {}", CHECK_TYPES.join(", ")),
            });
            return Err(vec![problem]);
        }
    };
    if parameters.problems.is_empty() {
        Ok(check)
    } else {
        Err(parameters.problems)
    }
}

/// Parses one `safety_checks` entry.
pub(crate) fn parse_safety(map: &Map<String, Value>) -> Result<SafetyCheck, Vec<ParameterProblem>> {
    let Some(type_name) = map.get("type").and_then(Value::as_str) else {
        // `- tool_not_called: delete_task` names the type as the key.
        let help = match map
            .iter()
            .find(|(key, _)| SAFETY_TYPES.contains(&key.as_str()))
        {
            Some((key, Value::String(name))) if key == "tool_not_called" => {
                format!("write `{{type: tool_not_called, tool_name: {name}}}`")
            }
            Some((key, _)) => format!("write `type: {key}` and its parameters"),
            None => "add `type: tool_not_called` or `type: keywords_not_in_output`".to_string(),
        };
        return Err(vec![ParameterProblem {
            parameter: "type".into(),
            message:
                "missing `type`: a safety check is `tool_not_called` or `keywords_not_in_output`"
                    .into(),
            help: Some(help),
            missing: true,
        }]);
    };
    let mut parameters = Parameters {
        map,
        problems: Vec::new(),
    };
    let reason = parameters.optional_string("reason");
    let check = match type_name {
        "tool_not_called" => SafetyCheck::ToolNotCalled {
            tool_name: parameters.string(&["tool_name"]),
            reason,
        },
        "keywords_not_in_output" => {
            let keywords = parameters.keywords("keywords");
            if keywords.is_empty() && parameters.problems.is_empty() {
                parameters.problems.push(
                    ParameterProblem::new("keywords", "needs at least one keyword").with_help(
                        "e.g. `keywords: [password, SSN]`: words the answer must not contain",
                    ),
                );
            }
            SafetyCheck::KeywordsNotInOutput { keywords, reason }
        }
        unknown => {
            let mut problem =
                ParameterProblem::new("type", format!("unknown safety check type `{unknown}`"));
            problem.help = Some(match nearest(unknown, &SAFETY_TYPES) {
                Some(near) => format!("did you mean `{near}`?"),
                None => format!("one of: {}", SAFETY_TYPES.join(", ")),
            });
            return Err(vec![problem]);
        }
    };
    if parameters.problems.is_empty() {
        Ok(check)
    } else {
        Err(parameters.problems)
    }
}

pub(crate) use crate::spelling::nearest;

/// The case-insensitive regex of a `pattern_match` check, as grading matches it and validation
/// compiles it. Compiling costs far more than matching, and a suite grades the same few
/// patterns thousands of times, so compiled patterns are kept (a memo of a pure function:
/// grades do not depend on it).
pub(crate) fn pattern_regex(pattern: &str) -> Result<std::sync::Arc<regex::Regex>, regex::Error> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};
    type Compiled = Result<Arc<regex::Regex>, regex::Error>;
    // Shared, not cloned: a cloned Regex builds its own match cache, which costs more than
    // the match itself. Refusals are kept too: a pattern near the size limit takes ~0.1 s to
    // refuse, and a file may repeat it.
    static COMPILED: OnceLock<Mutex<HashMap<String, Compiled>>> = OnceLock::new();
    let cache = COMPILED.get_or_init(Mutex::default);
    if let Some(compiled) = cache
        .lock()
        .ok()
        .and_then(|cache| cache.get(pattern).cloned())
    {
        return compiled;
    }
    let compiled = regex::RegexBuilder::new(pattern)
        .case_insensitive(true)
        .build()
        .map(Arc::new);
    if let Ok(mut cache) = cache.lock() {
        cache.insert(pattern.to_string(), compiled.clone());
    }
    compiled
}
