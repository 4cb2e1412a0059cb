//! The 15 scoring check types and 2 safety check types of the ClawEnvKit schema, typed, with
//! their parameter aliases (`count`/`min_count`, `contains`/`value`, `min_length`/`length`,
//! `expected_count`, `expected_exit`, `pytest_args`) resolved at parse time so the grader
//! sees one spelling.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

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

/// A file check's (or an oracle file's) path as the workspace-relative path a trial's
/// snapshot keys its files by: `/workspace/a/b.md`, `a/b.md`, `./a/b.md` and `a/./b.md` are
/// all `a/b.md`. None for a path outside the workspace (another absolute path, or one that
/// climbs out with `..`), which no trial can check and nobody may write to.
pub fn workspace_relative(path: &str) -> Option<String> {
    let inside = match path.strip_prefix("/workspace/") {
        Some(inside) => inside,
        None if path.starts_with('/') => return None,
        None => path,
    };
    let mut parts = Vec::new();
    for part in std::path::Path::new(inside).components() {
        match part {
            std::path::Component::Normal(name) => parts.push(name.to_str()?),
            std::path::Component::CurDir => {}
            _ => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

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

mod parse;

pub(crate) use parse::{ParameterProblem, kind, nearest, parse_check, parse_safety, pattern_regex};

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(value: Value) -> Result<Check, Vec<ParameterProblem>> {
        parse_check(value.as_object().expect("test input is a map"))
    }

    #[test]
    fn a_workspace_path_has_one_spelling_and_nothing_outside_has_any() {
        for path in [
            "/workspace/a/b.md",
            "a/b.md",
            "./a/b.md",
            "a/./b.md",
            "/workspace/./a/b.md",
        ] {
            assert_eq!(
                workspace_relative(path).as_deref(),
                Some("a/b.md"),
                "{path}"
            );
        }
        for path in [
            "../b.md",
            "a/../../b.md",
            "/workspace/../etc/passwd",
            "/etc/passwd",
            "/workspace/",
            ".",
            "",
        ] {
            assert_eq!(workspace_relative(path), None, "{path}");
        }
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
