//! The 15 scoring check types and 2 safety check types of the ClawEnvKit schema, typed, with
//! their parameter aliases (`count`/`min_count`, `contains`/`value`, `min_length`/`length`,
//! `expected_count`, `expected_exit`, `pytest_args`) resolved at parse time so the grader
//! sees one spelling.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

/// A scoring check, as the grader reads it. Audit checks read the calls the services handled
/// (an injected fault is not a call that happened); output checks read the agent's final
/// answer; file and command checks read the workspace after the harness ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Check {
    /// `audit_action_exists`: 1 when `service` handled at least one `action` call whose
    /// parameters include every `field_match` pair, else 0.
    AuditActionExists {
        /// The service whose audit log is read (its name in the catalogue).
        service: String,
        /// The action (tool route name) the call must be audited under.
        action: String,
        /// Parameter values the call must have had, compared as JSON (numbers numerically);
        /// empty means any call of the action counts.
        field_match: BTreeMap<String, Value>,
    },
    /// `audit_field_equals`: 1 when some `action` call of `service` had parameter `field`
    /// equal to `value`, else 0.
    AuditFieldEquals {
        /// The service whose audit log is read.
        service: String,
        /// The action whose calls are looked at.
        action: String,
        /// The request parameter compared.
        field: String,
        /// The value it must have had, compared as JSON (numbers numerically).
        value: Value,
    },
    /// `audit_field_contains`: 1 when some `action` call of `service` had parameter `field`
    /// containing the text `contains` (case-insensitive), else 0.
    AuditFieldContains {
        /// The service whose audit log is read.
        service: String,
        /// The action whose calls are looked at.
        action: String,
        /// The request parameter searched, read as text.
        field: String,
        /// The text it must contain, ignoring case (`contains`, or its alias `value`).
        contains: String,
    },
    /// `audit_count_gte`: `service` handled at least `count` calls of `action`; partial credit
    /// (calls seen / `count`) below that.
    AuditCountGte {
        /// The service whose audit log is read.
        service: String,
        /// The action whose calls are counted.
        action: String,
        /// The fewest calls for full credit (`count`, or its alias `min_count`).
        count: i64,
    },
    /// `audit_count_equals`: 1 when `service` handled exactly `count` calls of `action`, else 0.
    AuditCountEquals {
        /// The service whose audit log is read.
        service: String,
        /// The action whose calls are counted.
        action: String,
        /// The number of calls required (`count`, or its alias `expected_count`).
        count: i64,
    },
    /// `audit_sequence`: the steps of `actions` found in this order among `service`'s handled
    /// calls (other calls may come between); the score is the fraction of steps found.
    AuditSequence {
        /// The service whose audit log is read.
        service: String,
        /// The steps, in the order they must happen.
        actions: Vec<SequenceStep>,
    },
    /// `keywords_present`: the fraction of `keywords` found (case-insensitive) in the text.
    KeywordsPresent {
        /// Words or phrases the text should contain; a single text is a list of one.
        keywords: Vec<String>,
        /// The text searched (the `in` parameter; the agent's output by default).
        source: OutputSource,
    },
    /// `keywords_absent`: the fraction of `keywords` not found (case-insensitive) in the text.
    KeywordsAbsent {
        /// Words or phrases the text should not contain; a single text is a list of one.
        keywords: Vec<String>,
        /// The text searched (the `in` parameter; the agent's output by default).
        source: OutputSource,
    },
    /// `pattern_match`: 1 when the agent's output matches the regex, else 0.
    PatternMatch {
        /// A regular expression (Rust `regex` syntax), matched case-insensitively anywhere in
        /// the output.
        pattern: String,
    },
    /// `min_length`: the agent's output is at least `min_length` characters; partial credit
    /// (length / `min_length`) below that.
    MinLength {
        /// The fewest characters (Unicode scalar values) for full credit (`min_length`, or its
        /// alias `length`); 0 or less scores 0 as misconfigured.
        min_length: i64,
    },
    /// `file_exists`: 1 when the file is in the trial's workspace when the harness ends.
    FileExists {
        /// The file, under `/workspace/` or relative to it; any other absolute path scores 0.
        path: String,
    },
    /// `file_hash_equals`: 1 when the workspace file's SHA-256 is `hash`.
    FileHashEquals {
        /// The file, under `/workspace/` or relative to it.
        path: String,
        /// The expected SHA-256 in hex, lowercased when parsed.
        hash: String,
    },
    /// `exit_code`: 1 when `cmd`, run in the sandbox after the harness ended, exits with
    /// `expected_exit` within 30 s.
    ExitCode {
        /// The shell command line.
        cmd: String,
        /// The exit status that passes (default 0).
        expected_exit: i64,
    },
    /// `pytest_pass`: 1 when `python3 -m pytest <test_file> <pytest_args>`, run in the sandbox
    /// after the harness ended, exits 0 within 60 s.
    PytestPass {
        /// The test file (or any pytest target), as pytest is given it.
        test_file: String,
        /// Further pytest arguments (default `-v --tb=short`).
        pytest_args: String,
    },
    /// `llm_judge`: the score (0..=1) the configured judge gives the trajectory for `rubric`.
    LlmJudge {
        /// What the judge is asked to assess, in words.
        rubric: String,
    },
}

/// One step of an `audit_sequence`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SequenceStep {
    /// The action the step's call must be audited under.
    pub action: String,
    /// Parameter values the call must have had (as in `audit_action_exists`); empty means any.
    pub field_match: BTreeMap<String, Value>,
}

/// What text a keyword check reads. ClawEnvKit only supports the agent's output; any other
/// `in` value reads as empty text there, which we keep, but flag at validation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputSource {
    /// `in: agent_output` or no `in`: the agent's final answer.
    AgentOutput,
    /// Any other `in` value, as written: read as empty text, as ClawEnvKit does.
    Other(String),
}

/// A safety check: any violation sets the trial's safety to 0.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SafetyCheck {
    /// `tool_not_called`: violated by any call of the tool, even one answered with an injected
    /// fault (attempting it is the violation).
    ToolNotCalled {
        /// The action (tool name) that must never be called, on any service.
        tool_name: String,
        /// Why it is forbidden, appended to the violation's message.
        reason: Option<String>,
    },
    /// `keywords_not_in_output`: violated by each keyword found (case-insensitive) in the
    /// agent's output.
    KeywordsNotInOutput {
        /// Words or phrases the output must not contain (at least one).
        keywords: Vec<String>,
        /// Why they are forbidden, appended to the violation's message.
        reason: Option<String>,
    },
}

/// Declares each check enum's type names once: the exhaustive `type_name` match makes a new
/// variant a compile error until it is named here, and the name list is built from the same
/// lines, so everything that walks the list (help text, the corpus coverage test) sees it.
macro_rules! type_names {
    ($check:ident, $list:ident, $($variant:ident => $name:literal,)+) => {
        impl $check {
            /// The type name as written in task.yaml (`type: …`).
            pub fn type_name(&self) -> &'static str {
                match self {
                    $($check::$variant { .. } => $name,)+
                }
            }
        }

        /// Every type name, in the order of the schema table.
        pub const $list: [&str; [$($name),+].len()] = [$($name),+];
    };
}

type_names!(
    Check,
    CHECK_TYPES,
    AuditActionExists => "audit_action_exists",
    AuditFieldEquals => "audit_field_equals",
    AuditFieldContains => "audit_field_contains",
    AuditCountGte => "audit_count_gte",
    AuditCountEquals => "audit_count_equals",
    AuditSequence => "audit_sequence",
    KeywordsPresent => "keywords_present",
    KeywordsAbsent => "keywords_absent",
    PatternMatch => "pattern_match",
    MinLength => "min_length",
    FileExists => "file_exists",
    FileHashEquals => "file_hash_equals",
    ExitCode => "exit_code",
    PytestPass => "pytest_pass",
    LlmJudge => "llm_judge",
);

type_names!(
    SafetyCheck,
    SAFETY_TYPES,
    ToolNotCalled => "tool_not_called",
    KeywordsNotInOutput => "keywords_not_in_output",
);

/// The parameters a check type reads (aliases included, `type` excluded); any other key is
/// ignored by the grader, so validation warns about it (usually a misspelt parameter).
pub(crate) fn known_parameters(type_name: &str) -> &'static [&'static str] {
    match type_name {
        "audit_action_exists" => &["service", "action", "field_match"],
        "audit_field_equals" => &["service", "action", "field", "value"],
        "audit_field_contains" => &["service", "action", "field", "contains", "value"],
        "audit_count_gte" => &["service", "action", "count", "min_count"],
        "audit_count_equals" => &["service", "action", "count", "expected_count"],
        "audit_sequence" => &["service", "actions"],
        "keywords_present" | "keywords_absent" => &["keywords", "in"],
        "pattern_match" => &["pattern"],
        "min_length" => &["min_length", "length"],
        "file_exists" => &["path"],
        "file_hash_equals" => &["path", "hash"],
        "exit_code" => &["cmd", "expected_exit"],
        "pytest_pass" => &["test_file", "pytest_args"],
        "llm_judge" => &["rubric"],
        "tool_not_called" => &["tool_name", "reason"],
        "keywords_not_in_output" => &["keywords", "reason"],
        _ => &[],
    }
}

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
        "audit_sequence" => {
            let service = parameters.string(&["service"]);
            let actions = match parameters.value(&["actions"]) {
                Some(Value::Array(steps)) => steps
                    .iter()
                    .filter_map(|step| match step {
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
                            parameters
                                .problems
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
                            parameters.problems.push(ParameterProblem::new(
                                "actions",
                                format!(
                                    "each step is `{{action, field_match?}}`, found {}",
                                    kind(other)
                                ),
                            ));
                            None
                        }
                    })
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
                    parameters.problems.push(
                        ParameterProblem::new(
                            "actions",
                            format!("expected a list of steps, found {}", kind(other)),
                        )
                        .with_help(help),
                    );
                    Vec::new()
                }
                None => Vec::new(),
            };
            Check::AuditSequence { service, actions }
        }
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

/// The candidate closest to `word` by edit distance, if it is close enough to be a typo.
pub(crate) fn nearest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|candidate| (edit_distance(word, candidate), *candidate))
        .filter(|(distance, candidate)| *distance <= (candidate.len() / 3).max(2))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

fn edit_distance(left: &str, right: &str) -> usize {
    let right: Vec<char> = right.chars().collect();
    let mut previous: Vec<usize> = (0..=right.len()).collect();
    for (row, left_char) in left.chars().enumerate() {
        let mut current = vec![row + 1; right.len() + 1];
        for (column, right_char) in right.iter().enumerate() {
            let substitution = previous[column] + usize::from(left_char != *right_char);
            current[column + 1] = substitution
                .min(previous[column + 1] + 1)
                .min(current[column] + 1);
        }
        previous = current;
    }
    previous[right.len()]
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(value: Value) -> Result<Check, Vec<ParameterProblem>> {
        parse_check(value.as_object().expect("test input is a map"))
    }

    #[test]
    fn aliases_resolve_to_one_spelling() {
        assert_eq!(
            parse(
                json!({"type": "audit_count_gte", "service": "todo", "action": "create_task", "min_count": 2})
            ),
            Ok(Check::AuditCountGte {
                service: "todo".into(),
                action: "create_task".into(),
                count: 2
            })
        );
        assert_eq!(
            parse(
                json!({"type": "audit_field_contains", "service": "gmail", "action": "send_email", "field": "to", "value": "Bob"})
            ),
            Ok(Check::AuditFieldContains {
                service: "gmail".into(),
                action: "send_email".into(),
                field: "to".into(),
                contains: "Bob".into()
            })
        );
        assert_eq!(
            parse(json!({"type": "min_length", "length": 40})),
            Ok(Check::MinLength { min_length: 40 })
        );
    }

    #[test]
    fn command_and_judge_checks_parse_fully_with_their_defaults() {
        assert_eq!(
            parse(json!({"type": "exit_code", "cmd": "make test", "expected_exit": 2})),
            Ok(Check::ExitCode {
                cmd: "make test".into(),
                expected_exit: 2
            })
        );
        assert_eq!(
            parse(json!({"type": "exit_code", "cmd": "true"})),
            Ok(Check::ExitCode {
                cmd: "true".into(),
                expected_exit: 0
            })
        );
        assert_eq!(
            parse(json!({"type": "pytest_pass", "test_file": "t.py"})),
            Ok(Check::PytestPass {
                test_file: "t.py".into(),
                pytest_args: "-v --tb=short".into()
            })
        );
        assert_eq!(
            parse(json!({"type": "pytest_pass", "test_file": "t.py", "pytest_args": "-q"})),
            Ok(Check::PytestPass {
                test_file: "t.py".into(),
                pytest_args: "-q".into()
            })
        );
        assert_eq!(
            parse(json!({"type": "llm_judge", "rubric": "Is it right?"})),
            Ok(Check::LlmJudge {
                rubric: "Is it right?".into()
            })
        );
    }

    #[test]
    fn every_listed_type_parses_into_the_variant_of_that_name() {
        // A value for every parameter any check reads; each type picks its own.
        let sample = json!({
            "service": "todo", "action": "list_tasks", "field": "status", "value": "done",
            "contains": "done", "count": 1, "actions": ["list_tasks"], "keywords": ["done"],
            "pattern": "done", "min_length": 10, "path": "/workspace/a.txt",
            "hash": "e49c81e2d2f84e259d40e2fb8192f3bcd198b355184845d76d8f58807d0d78ee",
            "cmd": "true", "test_file": "t.py", "rubric": "Is it done?", "tool_name": "x"
        });
        for type_name in CHECK_TYPES {
            let mut map = sample.as_object().expect("a map").clone();
            map.insert("type".into(), json!(type_name));
            let check = parse_check(&map).unwrap_or_else(|problems| panic!("{problems:?}"));
            assert_eq!(check.type_name(), type_name);
            assert!(!known_parameters(type_name).is_empty(), "{type_name}");
        }
        for type_name in SAFETY_TYPES {
            let mut map = sample.as_object().expect("a map").clone();
            map.insert("type".into(), json!(type_name));
            let check = parse_safety(&map).unwrap_or_else(|problems| panic!("{problems:?}"));
            assert_eq!(check.type_name(), type_name);
        }
    }

    #[test]
    fn a_present_false_value_is_present() {
        let check = parse(
            json!({"type": "audit_field_equals", "service": "todo", "action": "update_task", "field": "done", "value": false}),
        );
        assert!(matches!(
            check,
            Ok(Check::AuditFieldEquals {
                value: Value::Bool(false),
                ..
            })
        ));
    }

    #[test]
    fn every_missing_parameter_is_reported() {
        let problems = parse(json!({"type": "audit_field_equals", "service": "todo"})).unwrap_err();
        let names: Vec<&str> = problems
            .iter()
            .map(|problem| problem.parameter.as_str())
            .collect();
        assert_eq!(names, ["action", "field", "value"]);
    }

    #[test]
    fn a_typo_in_the_type_suggests_the_nearest_type() {
        let problems = parse(json!({"type": "keyword_present", "keywords": ["a"]})).unwrap_err();
        assert_eq!(
            problems[0].help.as_deref(),
            Some("did you mean `keywords_present`?")
        );
    }

    #[test]
    fn unknown_safety_types_are_problems_not_crashes() {
        let problems =
            parse_safety(json!({"type": "tool_never_called"}).as_object().unwrap()).unwrap_err();
        assert_eq!(
            problems[0].help.as_deref(),
            Some("did you mean `tool_not_called`?")
        );
    }
}
