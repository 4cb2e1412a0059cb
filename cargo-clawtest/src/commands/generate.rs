//! `cargo clawtest generate --request "…"`: the request and its settings from argv over
//! `[generate]`, the library's pipeline run, a line for each stage's outcome as it comes, and
//! a summary of what was written, retried and dropped, with the calls' tokens and cost.

use std::path::PathBuf;

use clawtest::config::Config;
use clawtest::generate::{self, Difficulty, Progress, Request};

use super::{Outcome, command_place, runtime, working_directory};
use crate::cli::{GenerateArgs, GlobalArgs};
use crate::errors::ExpectedError;

pub fn run(global: &GlobalArgs, arguments: &GenerateArgs) -> Outcome {
    let start = working_directory();
    let config = Config::optional(global.config.as_deref(), &start)
        .map(|config| config.unwrap_or_else(|| Config::defaults(start.clone())))
        .map_err(ExpectedError::Config)?;
    let settings = &config.generate;
    let Some(text) = arguments
        .request
        .clone()
        .or_else(|| settings.request.clone())
    else {
        return Err(ExpectedError::Usage(
            "`generate` needs `--request \"…\"` (or `[generate] request` in clawtest.toml); variants of tasks are `cargo clawtest vary`",
        ));
    };
    if text.trim().is_empty() {
        return Err(ExpectedError::Usage(
            "the request is empty: say what the tasks should test",
        ));
    }
    // `[generate] difficulty` was read as a `Difficulty` with the configuration.
    let difficulty = match arguments.difficulty.as_deref() {
        None => settings.difficulty,
        Some(name) => Some(Difficulty::from_name(name).ok_or(ExpectedError::Usage(
            "[generate] difficulty must be easy, medium or hard",
        ))?),
    };
    let services = if arguments.services.is_empty() {
        settings.services.clone()
    } else {
        arguments.services.clone()
    };
    let name = arguments
        .name
        .clone()
        .or_else(|| settings.name.clone())
        .unwrap_or_else(|| generate::default_name(&text));
    if !clawtest::config::GenerateConfig::is_name(&name) {
        return Err(ExpectedError::Usage(
            "the name (--name, [generate] name) must be letters, digits, `_` and `-`, at most 60",
        ));
    }
    let request = Request {
        request: text,
        count: arguments.count.unwrap_or(settings.count),
        services,
        difficulty,
        seed: arguments.seed.unwrap_or(settings.seed),
        name,
        out: arguments
            .out
            .clone()
            .unwrap_or_else(|| config.root.join(&settings.out)),
        mode: arguments.mode,
        max_cost_usd: arguments.max_cost,
        cassettes: arguments.cassettes.clone(),
        commands: command_place(&config, arguments.backend)?,
    };
    let summary = runtime()?
        .block_on(generate::generate(&config, &request, &mut show))
        .map_err(ExpectedError::Generate)?;
    if let Some(path) = &summary.recorded {
        sayln!("RECORDED {}", path.display());
    }
    let cost = summary
        .cost_usd
        .map(|cost| format!(", {}", clawtest::llm::money::dollars(cost)))
        .unwrap_or_default();
    sayln!(
        "{} task(s) written to {}; {} answer(s) retried; {} task(s) dropped; {} model call(s), {} tokens in, {} out{cost}",
        summary.written.len(),
        shown(&request.out),
        summary.retries,
        summary.dropped.len(),
        summary.calls,
        summary.tokens.0,
        summary.tokens.1,
    );
    if summary.written.is_empty() {
        return Err(ExpectedError::NothingGenerated);
    }
    Ok(())
}

/// One stage's outcome, as it comes.
fn show(progress: Progress<'_>) {
    match progress {
        Progress::Parsed { intent, attempts } => {
            let atoms: Vec<&str> = intent.atoms.iter().map(|atom| atom.name.as_str()).collect();
            sayln!(
                "parsed (attempt {attempts}): services {}; difficulty {}; atoms {}",
                intent
                    .services
                    .iter()
                    .chain(&intent.missing_services)
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join(", "),
                intent.difficulty,
                atoms.join(", ")
            );
        }
        Progress::ServiceAdded { name, attempts } => {
            sayln!("service `{name}` generated and smoke-called (attempt {attempts})");
        }
        Progress::ServiceDropped { name, problems } => {
            errln!("warning: service `{name}` could not be generated; the tasks go without it:");
            for problem in problems {
                errln!("  {problem}");
            }
        }
        Progress::Rejected {
            stage,
            attempt,
            problems,
        } => {
            sayln!("{stage}: attempt {attempt} rejected:");
            for problem in problems {
                sayln!("  {problem}");
            }
        }
        Progress::Written(written) => {
            sayln!(
                "wrote {} (attempt {}, focus {})",
                shown(&written.path),
                written.attempts,
                written.focus
            );
        }
        Progress::Dropped(dropped) => {
            errln!(
                "warning: task {} dropped after {} attempts",
                dropped.number,
                generate::ATTEMPTS
            );
        }
    }
}

/// `path` relative to the current folder when inside it.
fn shown(path: &std::path::Path) -> String {
    let here = working_directory();
    path.strip_prefix(&here)
        .map(PathBuf::from)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}
