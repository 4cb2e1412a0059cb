//! `cargo clawtest validate`: load every task file of the suite (or the given paths), run the
//! structural checks and, on request, the coverage lint and the oracle's feasibility proof
//! (`crate::oracle::feasibility`), and report every error and warning
//! of every file at once, for people (miette diagnostics) or machines (a stable JSON schema,
//! `JsonReport` here, documented in docs/task-format.md, "Validation").

use std::fmt::{self, Write as _};
use std::path::{Path, PathBuf};

use miette::{
    Diagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan, NamedSource, Severity,
    SourceCode,
};
use serde::Serialize;

use crate::config::Config;
use crate::discover::DiscoverError;
use crate::run::suite;
use crate::sandbox::commands::{CommandRule, Origin};
use crate::services::Catalogue;
use crate::task::{InvalidTask, Problem, Task, coverage};

/// The version of the JSON schema; bumped on any incompatible change.
const JSON_VERSION: u32 = 1;

/// What to check besides the structural checks.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Compare each task with its intent atoms (`<stem>.atoms.yaml` next to it).
    pub coverage: bool,
    /// Prove each valid task feasible with its oracle (`--feasibility`, `[validate]
    /// feasibility`), its commands run by this rule (the chosen backend's: in a container on
    /// docker) as a person's: an infeasible task is an error at the component's line.
    pub feasibility: Option<CommandRule>,
}

/// The outcome for one task file.
#[derive(Debug)]
pub struct FileOutcome {
    /// As shown to the user (relative to the suite root when it can be).
    pub path: PathBuf,
    /// The task's `task_id`; `None` when the file did not load.
    pub task_id: Option<String>,
    /// Why the file did not load (empty for a valid file).
    pub errors: Vec<Problem>,
    /// What is questionable but not wrong, coverage gaps included; never fatal.
    pub warnings: Vec<Problem>,
    /// The file's text, for rendering located diagnostics.
    source: Option<NamedSource<String>>,
    invalid: Option<InvalidTask>,
}

impl FileOutcome {
    /// The outcome of a file that did not load, with its problems and its text.
    pub fn invalid(invalid: InvalidTask) -> FileOutcome {
        FileOutcome {
            path: invalid.path.clone(),
            task_id: None,
            errors: invalid.problems.clone(),
            warnings: invalid.warnings.clone(),
            source: None,
            invalid: Some(invalid),
        }
    }

    /// The file loaded: it has no errors (warnings do not count).
    fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }
}

/// Every file's outcome, sorted by path.
#[derive(Debug)]
pub struct Report {
    /// One outcome per task file found, valid or not.
    pub files: Vec<FileOutcome>,
}

/// Validates the suite the configuration names, or the explicit `paths` (files or folders).
pub fn validate(
    config: &Config,
    paths: &[PathBuf],
    catalogue: &Catalogue,
    options: &Options,
) -> Result<Report, DiscoverError> {
    let loaded = suite::load(config, paths, &[], None, catalogue)?;
    let mut files = Vec::new();
    for task in loaded.tasks {
        files.push(valid_outcome(config, task, &loaded.catalogue, options));
    }
    files.extend(loaded.invalid.into_iter().map(FileOutcome::invalid));
    files.sort_by(|left, right| left.path.cmp(&right.path));
    Ok(Report { files })
}

fn valid_outcome(
    config: &Config,
    task: Task,
    catalogue: &Catalogue,
    options: &Options,
) -> FileOutcome {
    let on_disk = if task.path.is_absolute() {
        task.path.clone()
    } else {
        config.root.join(&task.path)
    };
    let mut warnings = task.warnings.clone();
    if options.coverage {
        match coverage::load_atoms(&on_disk) {
            Ok(Some((_, atoms))) => warnings.extend(coverage::coverage(&task, &atoms)),
            Ok(None) => {
                let [yaml, _] = coverage::sidecar_paths(&task.path);
                warnings.push(
                    Problem::new("coverage", "no intent atoms to compare with", None)
                        .with_help(format!("write the parser's atoms to {}", yaml.display())),
                );
            }
            Err(problem) => warnings.push(*problem),
        }
    }
    let text = std::fs::read_to_string(&on_disk).ok();
    if let Some(rule) = &options.feasibility {
        let feasibility = crate::oracle::check(
            &task,
            catalogue,
            config.run.pass_threshold,
            &rule.for_origin(Origin::Person),
        );
        if !feasibility.is_feasible() {
            let text = text.unwrap_or_default();
            let problems: Vec<Problem> = feasibility
                .problems
                .into_iter()
                .map(|infeasible| infeasible.into_problem(&text))
                .collect();
            let invalid = InvalidTask::new(&task.path, text, problems).with_warnings(warnings);
            return FileOutcome {
                task_id: Some(task.id.clone()),
                ..FileOutcome::invalid(invalid)
            };
        }
    }
    let source = text.map(|text| NamedSource::new(task.path.display().to_string(), text));
    FileOutcome {
        path: task.path.clone(),
        task_id: Some(task.id.clone()),
        errors: Vec::new(),
        warnings,
        source,
        invalid: None,
    }
}

impl Report {
    /// No file has an error: `cargo clawtest validate` succeeds.
    pub fn is_valid(&self) -> bool {
        self.files.iter().all(FileOutcome::is_valid)
    }

    /// The errors of every file together.
    fn error_count(&self) -> usize {
        self.files.iter().map(|file| file.errors.len()).sum()
    }

    /// The warnings of every file together.
    fn warning_count(&self) -> usize {
        self.files.iter().map(|file| file.warnings.len()).sum()
    }

    /// For people: each invalid file as one diagnostic with all its errors, each warning
    /// as its own diagnostic, then a summary line. `color` adds ANSI styling.
    pub fn render_human(&self, color: bool) -> String {
        let theme = if color {
            GraphicalTheme::unicode()
        } else {
            GraphicalTheme::unicode_nocolor()
        };
        let handler = GraphicalReportHandler::new_themed(theme).with_width(100);
        let mut text = String::new();
        for file in &self.files {
            let source = file
                .invalid
                .as_ref()
                .map(InvalidTask::source)
                .or(file.source.as_ref());
            // Each error once, with its file: not under a heading that repeats the first.
            let errors = file.invalid.iter().flat_map(|invalid| &invalid.problems);
            let problems = errors.map(|problem| (problem, Severity::Error)).chain(
                file.warnings
                    .iter()
                    .map(|problem| (problem, Severity::Warning)),
            );
            for (problem, severity) in problems {
                let located = Located {
                    path: &file.path,
                    problem,
                    source,
                    severity,
                };
                let _ = handler.render_report(&mut text, &located);
            }
        }
        let valid = self.files.iter().filter(|file| file.is_valid()).count();
        let _ = writeln!(
            text,
            "validated {} task file{}: {valid} valid, {} invalid ({} error{}, {} warning{})",
            self.files.len(),
            plural(self.files.len()),
            self.files.len() - valid,
            self.error_count(),
            plural(self.error_count()),
            self.warning_count(),
            plural(self.warning_count()),
        );
        text
    }

    /// For machines: the `JsonReport` schema (docs/task-format.md, "Validation"), pretty-printed.
    pub fn to_json(&self) -> String {
        let report = JsonReport {
            version: JSON_VERSION,
            valid: self.is_valid(),
            summary: JsonSummary {
                files: self.files.len(),
                valid: self.files.iter().filter(|file| file.is_valid()).count(),
                invalid: self.files.iter().filter(|file| !file.is_valid()).count(),
                errors: self.error_count(),
                warnings: self.warning_count(),
            },
            files: self
                .files
                .iter()
                .map(|file| JsonFile {
                    path: file.path.display().to_string(),
                    task_id: file.task_id.clone(),
                    valid: file.is_valid(),
                    errors: file.errors.iter().map(JsonProblem::from).collect(),
                    warnings: file.warnings.iter().map(JsonProblem::from).collect(),
                })
                .collect(),
        };
        serde_json::to_string_pretty(&report).unwrap_or_default() + "\n"
    }
}

fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}

/// `validate --format json`: the whole output.
#[derive(Debug, Serialize)]
struct JsonReport {
    /// [`JSON_VERSION`].
    version: u32,
    /// True when no file has an error (warnings do not count).
    valid: bool,
    /// The counts over every file.
    summary: JsonSummary,
    /// One entry per task file, sorted by path.
    files: Vec<JsonFile>,
}

/// `summary`: how many files, of which valid and invalid, and the problems over all of them.
#[derive(Debug, Serialize)]
struct JsonSummary {
    files: usize,
    valid: usize,
    invalid: usize,
    errors: usize,
    warnings: usize,
}

/// One task file's entry in `files`.
#[derive(Debug, Serialize)]
struct JsonFile {
    /// As shown to the user (relative to the suite root when it can be).
    path: String,
    /// Null when the file did not load (an infeasible task loaded: it has its id).
    task_id: Option<String>,
    /// True when the file has no error.
    valid: bool,
    errors: Vec<JsonProblem>,
    warnings: Vec<JsonProblem>,
}

/// One problem. Lines and columns are 1-based; `offset` and `length` are bytes in the file.
/// Each location field is null when the problem has no place in the file.
#[derive(Debug, Serialize)]
struct JsonProblem {
    /// The field, as a path from the document root (`scoring_components[2].check.type`).
    field: String,
    message: String,
    /// What to write instead, when known.
    help: Option<String>,
    line: Option<u64>,
    column: Option<u64>,
    offset: Option<usize>,
    length: Option<usize>,
    /// Another place the problem involves (a contradiction's safety check), or null.
    secondary: Option<JsonSecondary>,
}

/// A problem's second place: what is there, and where.
#[derive(Debug, Serialize)]
struct JsonSecondary {
    note: String,
    line: u64,
    column: u64,
}

impl From<&Problem> for JsonProblem {
    fn from(problem: &Problem) -> JsonProblem {
        let span = problem.position.and_then(|position| position.span);
        JsonProblem {
            field: problem.field.clone(),
            message: problem.message.clone(),
            help: problem.help.clone(),
            line: problem.position.map(|position| position.line),
            column: problem.position.map(|position| position.column),
            offset: span.map(|(offset, _)| offset),
            length: span.map(|(_, length)| length),
            secondary: problem
                .secondary
                .as_ref()
                .map(|(note, position)| JsonSecondary {
                    note: note.clone(),
                    line: position.line,
                    column: position.column,
                }),
        }
    }
}

/// An error or a warning of a task file, rendered as a miette diagnostic against its file.
struct Located<'a> {
    path: &'a Path,
    problem: &'a Problem,
    source: Option<&'a NamedSource<String>>,
    severity: Severity,
}

impl fmt::Debug for Located<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.problem.plain(self.path))
    }
}

impl fmt::Display for Located<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.problem.position {
            Some(position) if self.source.is_none() => write!(
                formatter,
                "{}:{position}: {}",
                self.path.display(),
                self.problem
            ),
            _ => write!(formatter, "{}: {}", self.path.display(), self.problem),
        }
    }
}

impl std::error::Error for Located<'_> {}

impl Diagnostic for Located<'_> {
    fn severity(&self) -> Option<Severity> {
        Some(self.severity)
    }

    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.problem
            .help
            .as_ref()
            .map(|help| Box::new(help) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        self.problem.position.and_then(|position| position.span)?;
        self.source.map(|source| source as &dyn SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        self.source?;
        let (offset, length) = self.problem.position?.span?;
        Some(Box::new(std::iter::once(LabeledSpan::new(
            Some("here".into()),
            offset,
            length.max(1),
        ))))
    }
}
