//! The task.yaml specification as a user meets it. `tests/fixtures/valid/`: ClawEnvKit-format
//! files that load. `tests/fixtures/invalid/`: at least 50 broken files, one mistake each, each
//! declaring in a first-line comment the line (and field) its error must name, with the
//! rendered diagnostic as a snapshot; `many-*` files declare several mistakes reported at once;
//! `tests/fixtures/several/`: a file of five mistakes that the command-line tests read too.
//! `tests/fixtures/warnings/`: files that load with the warnings they declare.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use clawtest::services::Catalogue;
use clawtest::task::{self, Check, InjectionMode, InvalidTask, Task};
use miette::{GraphicalReportHandler, GraphicalTheme};

/// `tests/fixtures/<folder>/<name>`, relative to the crate (the tests' working folder), so
/// that paths in messages are the same on every machine.
fn corpus(folder: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(Path::new("tests/fixtures").join(folder))
        .expect("corpus folder")
        .map(|entry| entry.expect("corpus entry").path())
        .filter(|path| {
            let name = path.to_string_lossy();
            name.ends_with(".yaml") && !name.ends_with(".atoms.yaml")
        })
        .collect();
    files.sort();
    files
}

/// The built-in catalogue, read once: the corpus loads hundreds of files.
fn catalogue() -> &'static Catalogue {
    static CATALOGUE: std::sync::OnceLock<Catalogue> = std::sync::OnceLock::new();
    CATALOGUE.get_or_init(Catalogue::builtin)
}

fn load(path: &Path) -> Result<Task, InvalidTask> {
    task::load(path, catalogue())
}

fn load_text(name: &str, text: &str) -> Result<Task, InvalidTask> {
    task::parse(Path::new(name), text.to_string(), catalogue())
}

/// What a user sees: one line per problem, then miette's rendering with the source excerpt.
fn render(outcome: &Result<Task, InvalidTask>) -> String {
    let handler =
        GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor()).with_width(100);
    let (mut text, warnings, path) = match outcome {
        Ok(task) => ("valid\n".to_string(), &task.warnings, task.path.clone()),
        Err(invalid) => {
            let mut text = invalid.plain();
            text.push('\n');
            handler
                .render_report(&mut text, invalid)
                .expect("rendering into a string");
            (text, &invalid.warnings, invalid.path.clone())
        }
    };
    for warning in warnings {
        writeln!(text, "warning: {}", warning.plain(&path)).expect("writing to a String");
    }
    text
}

#[test]
fn every_valid_corpus_file_loads() {
    let files = corpus("valid");
    assert!(files.len() >= 7, "{files:?}");
    for file in files {
        match load(&file) {
            Ok(task) => assert!(
                task.warnings.is_empty(),
                "{}: unexpected warnings {:?}",
                file.display(),
                task.warnings
            ),
            Err(invalid) => panic!("{}", invalid.plain()),
        }
    }
}

#[test]
fn the_valid_corpus_uses_every_check_type_safety_type_and_alias() {
    let mut checks = std::collections::BTreeSet::new();
    let mut safety = std::collections::BTreeSet::new();
    let mut texts = String::new();
    for file in corpus("valid") {
        let task = load(&file).unwrap_or_else(|invalid| panic!("{}", invalid.plain()));
        checks.extend(
            task.components
                .iter()
                .map(|component| component.check.type_name()),
        );
        checks.extend(
            task.checkpoints
                .iter()
                .map(|checkpoint| checkpoint.check.type_name()),
        );
        safety.extend(task.safety.iter().map(|safety| safety.check.type_name()));
        texts.push_str(&std::fs::read_to_string(&file).expect("corpus file"));
    }
    // The lists come from the check enums: a new check type fails here until the valid
    // corpus has an example of it.
    for check_type in task::check::CHECK_TYPES {
        assert!(
            checks.contains(check_type),
            "no valid corpus file uses {check_type}"
        );
    }
    for safety_type in task::check::SAFETY_TYPES {
        assert!(
            safety.contains(safety_type),
            "no valid corpus file uses {safety_type}"
        );
    }
    // Aliases are resolved at parse time, so they are found in the text.
    for alias in [
        "min_count:",
        "expected_count:",
        "value: OpenSSL",
        "length: 20",
        "expected_exit:",
        "pytest_args:",
        "field_match:",
        "contains:",
    ] {
        assert!(texts.contains(alias), "no valid corpus file uses {alias}");
    }
}

/// A task as JSON without what depends on where its text was (path and lines).
fn comparable(task: &Task) -> serde_json::Value {
    let mut value = serde_json::to_value(task).expect("a task serialises");
    let object = value.as_object_mut().expect("a task is a map");
    object.remove("path");
    object.remove("line");
    for list in ["components", "safety", "checkpoints"] {
        for item in object[list].as_array_mut().expect("a list") {
            item.as_object_mut().expect("a map").remove("line");
        }
    }
    value
}

#[test]
fn every_valid_file_round_trips_through_the_writer() {
    for file in corpus("valid") {
        let task = load(&file).unwrap_or_else(|invalid| panic!("{}", invalid.plain()));
        let written = task::write::to_yaml(&task).expect("a valid task can be written");
        // Read back as if it were the same file, so `files[].source` resolves the same.
        let again = load_text(&file.to_string_lossy(), &written).unwrap_or_else(|invalid| {
            panic!(
                "{} written back does not load:\n{}\n{written}",
                file.display(),
                invalid.plain()
            )
        });
        assert!(again.warnings.is_empty(), "{:?}", again.warnings);
        assert_eq!(
            comparable(&again),
            comparable(&task),
            "{} changes in the round trip; written:\n{written}",
            file.display()
        );
        // Writing is a fixed point: what was written once is written again unchanged.
        assert_eq!(task::write::to_yaml(&again).expect("writable"), written);
    }
}

#[test]
fn the_writer_uses_clawenvkit_layout_and_canonical_parameter_names() {
    let task = load(Path::new("tests/fixtures/valid/todo-audit-checks.yaml")).expect("valid");
    let written = task::write::to_yaml(&task).expect("writable");
    let keys: Vec<&str> = written
        .lines()
        .filter(|line| !line.starts_with([' ', '-']))
        .filter_map(|line| line.split(':').next())
        .collect();
    // Top-level keys sorted, as `yaml.dump` writes them; `files` and `tools` always present.
    assert_eq!(
        keys,
        [
            "category",
            "difficulty",
            "files",
            "fixtures",
            "prompt",
            "safety_checks",
            "scoring_components",
            "task_id",
            "task_name",
            "tools"
        ]
    );
    // Aliases come out in their canonical spelling.
    assert!(!written.contains("min_count:") && !written.contains("expected_count:"));
    assert_eq!(written.matches("count: 1").count(), 4);
}

#[test]
fn aliases_load_as_one_spelling() {
    let task = load(Path::new("tests/fixtures/valid/todo-audit-checks.yaml")).expect("valid");
    let counts: Vec<i64> = task
        .components
        .iter()
        .filter_map(|component| match component.check {
            Check::AuditCountGte { count, .. } | Check::AuditCountEquals { count, .. } => {
                Some(count)
            }
            _ => None,
        })
        .collect();
    assert_eq!(counts, [1, 1, 1, 1]);
    assert!(task.components.iter().any(|component| matches!(
        &component.check,
        Check::AuditFieldContains { contains, .. } if contains == "OpenSSL"
    )));
    assert!(task.components.iter().any(|component| matches!(
        &component.check,
        Check::AuditFieldEquals { value, .. } if *value == serde_json::json!("high")
    )));
    let output = load(Path::new("tests/fixtures/valid/gmail-output-checks.yaml")).expect("valid");
    let lengths: Vec<i64> = output
        .components
        .iter()
        .filter_map(|component| match component.check {
            Check::MinLength { min_length } => Some(min_length),
            _ => None,
        })
        .collect();
    assert_eq!(lengths, [40, 20]);
}

#[test]
fn the_extensions_are_parsed_into_the_task() {
    let task = load(Path::new("tests/fixtures/valid/extensions.yaml")).expect("valid");
    assert_eq!(
        task.capability,
        Some(clawtest::task::Capability::Exploration)
    );
    assert_eq!(task.limits.max_turns, 12);
    assert_eq!(task.limits.timeout.as_secs(), 120);
    assert_eq!(task.pass_threshold, Some(0.75));
    let injection = task.error_injection.clone().expect("error_injection");
    assert_eq!(
        (injection.rate, injection.seed, injection.mode),
        (Some(0.3), Some(7), Some(InjectionMode::Burst))
    );
    assert_eq!(task.local_services.len(), 1);
    assert_eq!(task.local_services[0].name, "team_notes");
    assert_eq!(task.services, ["team_notes", "todo"]);
    let catalogue = task
        .catalogue(&Catalogue::builtin())
        .expect("no name clash");
    assert!(catalogue.get("team_notes").is_some());
    assert_eq!(task.checkpoints.len(), 1);
    assert_eq!(task.checkpoints[0].after_turn, Some(2));
    let feedback = task.feedback.expect("feedback");
    assert_eq!(feedback.max_rounds, 2);
    assert_eq!(feedback.messages, ["Which one is urgent, exactly?"]);
}

#[test]
fn an_error_injection_block_without_values_takes_the_suites_settings() {
    let text = std::fs::read_to_string("tests/fixtures/valid/gmail-output-checks.yaml")
        .expect("corpus file")
        + "error_injection: {}\n";
    let task = load_text("defaults.yaml", &text).expect("valid");
    let injection = task.error_injection.expect("present");
    assert_eq!(
        (injection.rate, injection.seed, injection.mode),
        (None, None, None)
    );
    let suite = clawtest::fault::FaultSettings {
        rate: 0.1,
        seed: Some(4),
        mode: InjectionMode::Burst,
        ..Default::default()
    };
    assert_eq!(injection.over(&suite), suite);
}

#[test]
fn command_and_judge_checks_parse_fully_and_validate() {
    let task = load(Path::new("tests/fixtures/valid/judge-and-commands.yaml"))
        .unwrap_or_else(|invalid| panic!("{}", invalid.plain()));
    let kinds: Vec<&str> = task
        .components
        .iter()
        .map(|component| match &component.check {
            clawtest::task::Check::ExitCode { .. } => "exit_code",
            clawtest::task::Check::PytestPass { .. } => "pytest_pass",
            clawtest::task::Check::LlmJudge { .. } => "llm_judge",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["exit_code", "pytest_pass", "llm_judge", "other"]);
}

#[test]
fn coverage_reports_each_uncovered_atom() {
    let task = load(Path::new("tests/fixtures/valid/extensions.yaml")).expect("valid");
    let (_, atoms) = task::coverage::load_atoms(&task.path)
        .expect("readable")
        .expect("sidecar present");
    assert!(task::coverage::coverage(&task, &atoms).is_empty());
    let more: Vec<task::coverage::Atom> = serde_saphyr::from_str(
        "- {type: action, name: create_task}\n- {type: action, name: list_team_notes}\n- {type: object, name: invoice}\n- {type: constraint, name: no emails}\n",
    )
    .expect("atoms");
    let gaps: Vec<String> = task::coverage::coverage(&task, &more)
        .into_iter()
        .map(|gap| gap.message)
        .collect();
    assert_eq!(
        gaps,
        [
            "action `create_task` is not offered as a tool",
            "object `invoice` appears nowhere in the fixtures, files, prompt or rubrics",
            "constraint `no emails` is enforced by no safety check or scoring component",
        ]
    );
}

/// The fewest one-mistake files the invalid corpus may have (issue 3: "≥ 50 broken tasks").
const MIN_INVALID_FILES: usize = 50;

/// What a corpus file declares about itself in its leading comments: one `# expect: line N`
/// (optionally `, field`) per error, `# expect warning: …` per warning, and
/// `# known wrong line: M` where today's report points at line M instead of N.
#[derive(Debug, Default)]
struct Declared {
    errors: Vec<(u64, Option<String>)>,
    warnings: Vec<(u64, Option<String>)>,
    known_wrong_line: Option<u64>,
}

fn declared(path: &Path) -> Declared {
    let text = std::fs::read_to_string(path).expect("corpus file");
    let place = |text: &str| -> (u64, Option<String>) {
        let (line, field) = match text.split_once(", ") {
            Some((line, field)) => (line, Some(field.trim().to_string())),
            None => (text, None),
        };
        let number = line
            .strip_prefix("line ")
            .and_then(|number| number.trim().parse().ok())
            .unwrap_or_else(|| panic!("{}: write `line N` after `expect:`", path.display()));
        (number, field)
    };
    let mut declared = Declared::default();
    for line in text.lines().take_while(|line| line.starts_with('#')) {
        if let Some(rest) = line.strip_prefix("# expect warning: ") {
            declared.warnings.push(place(rest));
        } else if let Some(rest) = line.strip_prefix("# expect: ") {
            declared.errors.push(place(rest));
        } else if let Some(rest) = line.strip_prefix("# known wrong line: ") {
            declared.known_wrong_line = rest
                .split_whitespace()
                .next()
                .and_then(|number| number.parse().ok());
        }
    }
    declared
}

/// Where each problem was reported: (line, field); 0 for a problem without a line.
fn reported(problems: &[task::Problem]) -> Vec<(u64, String)> {
    problems
        .iter()
        .map(|problem| {
            (
                problem.position.map_or(0, |position| position.line),
                problem.field.clone(),
            )
        })
        .collect()
}

/// Why `found` is not what `expected` declares, if it is not.
fn mismatch(expected: &[(u64, Option<String>)], found: &[(u64, String)]) -> Option<String> {
    let matches = expected.len() == found.len()
        && expected
            .iter()
            .zip(found)
            .all(|((line, field), (found_line, found_field))| {
                line == found_line && field.as_ref().is_none_or(|field| field == found_field)
            });
    (!matches).then(|| format!("declared {expected:?}, reported {found:?}"))
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .expect("a file name")
        .to_string_lossy()
        .into_owned()
}

#[test]
fn every_invalid_file_fails_with_its_declared_errors_at_their_lines() {
    let files = corpus("invalid");
    let one_mistake = files
        .iter()
        .filter(|file| declared(file).errors.len() == 1)
        .count();
    assert!(
        one_mistake >= MIN_INVALID_FILES,
        "the invalid corpus has {one_mistake} one-mistake files; it needs at least {MIN_INVALID_FILES}"
    );
    let mut failures = Vec::new();
    for file in &files {
        let declared = declared(file);
        assert!(
            !declared.errors.is_empty(),
            "{} declares no `# expect: line N`",
            file.display()
        );
        let invalid = match load(file) {
            Ok(_) => {
                failures.push(format!("{}: loads, but must fail", file.display()));
                continue;
            }
            Err(invalid) => invalid,
        };
        let found = reported(&invalid.problems);
        // A located-elsewhere report that is known stays visible: it is asserted as it is
        // today, and the day it is fixed this says to drop the note.
        let expected: Vec<(u64, Option<String>)> = match declared.known_wrong_line {
            Some(wrong) => {
                if mismatch(&declared.errors, &found).is_none() {
                    failures.push(format!(
                        "{}: now names the declared line; remove `# known wrong line`",
                        file.display()
                    ));
                    continue;
                }
                declared
                    .errors
                    .iter()
                    .map(|(_, field)| (wrong, field.clone()))
                    .collect()
            }
            None => declared.errors.clone(),
        };
        if let Some(why) = mismatch(&expected, &found) {
            failures.push(format!("{}: {why}", file.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_invalid_file_renders_as_its_snapshot() {
    for file in corpus("invalid") {
        insta::assert_snapshot!(format!("invalid__{}", stem(&file)), render(&load(&file)));
    }
}

/// A person reads the diagnostic, not the plain line: every located problem shows the line it
/// names in an excerpt, including the YAML parser's errors, which come without byte offsets.
#[test]
fn every_located_problem_shows_its_line_in_the_diagnostic() {
    for file in corpus("invalid") {
        let outcome = load(&file);
        let human = render(&outcome);
        let Err(invalid) = outcome else {
            panic!("{} loads", file.display())
        };
        let shown = invalid.path.display().to_string();
        for problem in &invalid.problems {
            let Some(position) = problem.position else {
                continue;
            };
            if problem.message.contains("the line is too long to show") {
                continue;
            }
            let header = format!("[{shown}:{}:{}]", position.line, position.column);
            assert!(
                human.contains(&header),
                "{}: `{}` is located at {}:{} but the diagnostic shows no excerpt there:\n{human}",
                file.display(),
                problem.message,
                position.line,
                position.column
            );
        }
    }
}

#[test]
fn questionable_files_load_with_the_warnings_they_declare() {
    let files = corpus("warnings");
    assert!(!files.is_empty());
    for file in files {
        let declared = declared(&file);
        let outcome = load(&file);
        let task = outcome
            .as_ref()
            .unwrap_or_else(|invalid| panic!("{}", invalid.plain()));
        if let Some(why) = mismatch(&declared.warnings, &reported(&task.warnings)) {
            panic!("{}: {why}", file.display());
        }
        insta::assert_snapshot!(format!("warnings__{}", stem(&file)), render(&outcome));
    }
}

#[test]
fn five_different_mistakes_are_reported_in_one_run() {
    let text = std::fs::read_to_string("tests/fixtures/several/five-mistakes.yaml")
        .expect("the five mistakes fixture");
    let invalid = load_text("five.yaml", &text).expect_err("five mistakes");
    insta::assert_snapshot!(invalid.plain(), @r"
    five.yaml:6:50: tools[1].endpoint: `/todo/task/update` is not a route of service `todo` (help: did you mean `/todo/tasks/update`?)
    five.yaml:13:12: scoring_components[1].check.value: missing required parameter `value` (help: add `value: <value>` to the check)
    five.yaml:15:13: scoring_components: weights sum to 0.9; they must sum to 1.0 ± 0.05 (help: set scoring_components[2].weight to 0.4 to make the sum 1.0)
    five.yaml:16:19: scoring_components[2].check.type: unknown check type `keyword_present` (help: did you mean `keywords_present`?)
    five.yaml:18:40: safety_checks[0].tool_name: `delete_tsk` is not a tool of this task nor an action of its services, so it could never be called (help: did you mean `delete_task`?)
    ");
}

#[test]
fn a_weight_written_as_text_is_reported_with_the_other_problems() {
    let text = std::fs::read_to_string("tests/fixtures/valid/gmail-output-checks.yaml")
        .expect("corpus file")
        .replace("weight: 0.25", "weight: \"0.25\"")
        .replace("min_length: 40", "min_length: forty");
    let invalid = load_text("quoted.yaml", &text).expect_err("two mistakes");
    let found: Vec<(&str, Option<&str>)> = invalid
        .problems
        .iter()
        .map(|problem| (problem.field.as_str(), problem.help.as_deref()))
        .collect();
    assert_eq!(
        found,
        [
            (
                "scoring_components[0].weight",
                Some("write `weight: 0.25` without quotes")
            ),
            (
                "scoring_components[4].check.min_length",
                Some("write it in digits, e.g. `min_length: 2`")
            ),
        ]
    );
}

#[test]
fn nothing_a_user_writes_makes_loading_panic() {
    for text in [
        "",
        "- a list",
        "task_id: [1, 2]",
        "scoring_components: {a: 1}",
        "scoring_components: [{check: 3}]",
        "safety_checks: [3, {type: 4}]",
        "services: [3, {name: 4}]",
        "checkpoints: [3, {check: 3}]",
        "feedback: 3",
        "error_injection: [1]",
        "files: [{source: /etc/passwd}]",
        "tools: [{name: x}]",
        ": :",
    ] {
        let _ = load_text("fuzz.yaml", text);
    }
}
