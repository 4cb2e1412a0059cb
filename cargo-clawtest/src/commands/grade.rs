//! `cargo clawtest grade PATH…` (saved trajectories re-graded against the suite's tasks as they
//! are now) and `grade TASK.yaml --audit FILE` (one result given by hand).

use std::path::{Path, PathBuf};

use clawtest::grade::Grade;
use clawtest::run::regrade::{self, OneResult};
use clawtest::run::session::{self, Request};
use clawtest::services::Catalogue;

use super::{Outcome, load_config, runtime, warn};
use crate::cli::{Format, GlobalArgs, GradeArgs};
use crate::errors::ExpectedError;

pub fn run(global: &GlobalArgs, arguments: &GradeArgs) -> Outcome {
    if let Some(audit) = &arguments.audit {
        // `grade TASK.yaml --audit FILE` and `grade --task TASK.yaml --audit FILE` are one.
        let task = match (&arguments.task, arguments.paths.as_slice()) {
            (Some(task), _) | (None, [task]) => task.clone(),
            _ => {
                return Err(ExpectedError::Usage(
                    "--audit grades one result: give one task file (`grade TASK.yaml --audit FILE`)",
                ));
            }
        };
        return one(global, arguments, task, audit);
    }
    if arguments.output.is_some() || arguments.workspace.is_some() {
        return Err(ExpectedError::Usage(
            "--output and --workspace go with --audit (`grade TASK.yaml --audit FILE --output FILE`)",
        ));
    }
    let config = load_config(global)?;
    let suite = session::load_suite(&config, &Request::default(), &Catalogue::builtin())
        .map_err(ExpectedError::Session)?;
    let files = regrade::trajectory_files(&arguments.paths);
    if files.is_empty() {
        return Err(ExpectedError::NoTrajectories(arguments.paths.clone()));
    }
    let judge = clawtest::judge::from_config(&config);
    let results = runtime()?.block_on(regrade::regrade(
        &files,
        &suite.tasks,
        config.run.pass_threshold,
        judge.as_ref(),
    ));
    warn(&judge.take_warnings());
    let (mut invalid, mut failed) = (false, false);
    let mut printed = Vec::new();
    for regraded in results {
        match regraded.outcome {
            Ok((trajectory, grade)) => {
                let label = format!(
                    "{} (task {}, trial {})",
                    regraded.path.display(),
                    trajectory.task_id,
                    trajectory.trial
                );
                printed.push(show(arguments.format, &label, &trajectory.task_id, &grade));
                failed |= !grade.passed;
            }
            Err(message) => {
                errln!("error: {message}");
                invalid = true;
            }
        }
    }
    if arguments.format == Format::Json {
        sayln!(
            "{}",
            serde_json::to_string_pretty(&printed).unwrap_or_default()
        );
    }
    if invalid {
        Err(ExpectedError::Reported)
    } else if failed {
        Err(ExpectedError::GradeFailed)
    } else {
        Ok(())
    }
}

/// `grade TASK.yaml --audit FILE [--output FILE] [--workspace DIR]`.
fn one(global: &GlobalArgs, arguments: &GradeArgs, task: PathBuf, audit: &Path) -> Outcome {
    let result = OneResult {
        task,
        audit: audit.to_path_buf(),
        output: arguments.output.clone(),
        workspace: arguments.workspace.clone(),
        config: global.config.clone(),
    };
    let graded = runtime()?
        .block_on(regrade::grade_one(&result, &Catalogue::builtin()))
        .map_err(ExpectedError::GradeOne)?;
    warn(&graded.warnings);
    let shown = show(
        arguments.format,
        &audit.display().to_string(),
        &graded.task.id,
        &graded.grade,
    );
    if arguments.format == Format::Json {
        sayln!(
            "{}",
            serde_json::to_string_pretty(&shown).unwrap_or_default()
        );
    }
    if graded.grade.passed {
        Ok(())
    } else {
        Err(ExpectedError::GradeFailed)
    }
}

/// Prints a grade for humans at once, or returns it for the JSON printed at the end.
fn show(format: Format, label: &str, task_id: &str, grade: &Grade) -> serde_json::Value {
    if format == Format::Human {
        sayln!("{label}");
        say!("{}", clawtest::report::grade_breakdown(grade));
    }
    serde_json::json!({"source": label, "task_id": task_id, "grade": grade})
}
