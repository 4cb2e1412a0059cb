//! `cargo clawtest`: the thin binary. It parses argv, calls the clawtest library, prints
//! errors, and maps outcomes to exit codes. Nothing else lives here.
//!
//! Exit codes: 0 all tasks and gates passed; 100 a task failed pass^k or a gate failed;
//! 101 an invalid task file or configuration; 102 an infrastructure error (harness that
//! cannot start or build, cassette miss, …); 4 no task matched; 130 interrupted.

mod cli;

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use clawtest::config::Config;
use clawtest::report::{json, junit, terminal::TerminalReporter};
use clawtest::run::session::{self, Request, SessionError};
use clawtest::run::{RunStatus, RunSummary};
use clawtest::sandbox::process::ProcessSandbox;
use clawtest::services::Catalogue;

use cli::{Cli, Command, ListArgs, RunArgs};

/// The exit codes, in one place (documented in README.md).
mod exit {
    pub const PASSED: u8 = 0;
    pub const NO_TASKS: u8 = 4;
    pub const FAILED: u8 = 100;
    pub const INVALID: u8 = 101;
    pub const INFRASTRUCTURE: u8 = 102;
    pub const INTERRUPTED: u8 = 130;
}

fn main() -> ExitCode {
    // `cargo clawtest …` runs `cargo-clawtest clawtest …`: drop the repeated subcommand name.
    let mut arguments: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if arguments
        .get(1)
        .is_some_and(|argument| argument == "clawtest")
    {
        arguments.remove(1);
    }
    let cli = Cli::parse_from(arguments);
    let code = match cli.command {
        Some(Command::List(list)) => list_tasks(&cli.global, &list),
        Some(Command::Run(run)) => run_tasks(&cli.global, &run),
        None => run_tasks(&cli.global, &cli.run),
    };
    ExitCode::from(code)
}

fn report_error(error: impl Into<miette::Report>) {
    eprintln!("{:?}", error.into());
}

fn load_config(global: &cli::GlobalArgs) -> Result<Config, u8> {
    let loaded = match &global.config {
        Some(path) => Config::from_file(path),
        None => {
            let start = std::env::current_dir().unwrap_or_else(|_| Path::new(".").to_path_buf());
            Config::discover(&start)
        }
    };
    loaded.map_err(|error| {
        report_error(error);
        exit::INVALID
    })
}

fn session_error_code(error: SessionError) -> u8 {
    let code = match &error {
        SessionError::NoTasks { .. } => exit::NO_TASKS,
        other if other.is_user_input() => exit::INVALID,
        _ => exit::INFRASTRUCTURE,
    };
    report_error(error);
    code
}

fn run_tasks(global: &cli::GlobalArgs, arguments: &RunArgs) -> u8 {
    let config = match load_config(global) {
        Ok(config) => config,
        Err(code) => return code,
    };
    let request = Request {
        paths: arguments.paths.clone(),
        filters: arguments.filters.clone(),
        trials: arguments.trials,
        jobs: arguments.jobs,
        gates: clawtest::config::Gates {
            min_score: arguments.min_score,
            min_robustness: arguments.min_robustness,
            min_pass_hat_k: arguments.min_pass_hat_k,
        },
        no_build: arguments.no_build,
        max_cost_usd: arguments.max_cost,
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: could not start the async runtime: {error}");
            return exit::INFRASTRUCTURE;
        }
    };
    let outcome = runtime.block_on(async {
        let (interrupt, interrupted) = tokio::sync::watch::channel(false);
        // First Ctrl-C: stop starting trials, kill running harnesses, write partial results.
        // Second: leave at once.
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("\ninterrupted: stopping trials and writing partial results (Ctrl-C again to quit at once)");
                let _ = interrupt.send(true);
                if tokio::signal::ctrl_c().await.is_ok() {
                    std::process::exit(i32::from(exit::INTERRUPTED));
                }
            }
        });
        let mut reporter = TerminalReporter::new(std::io::stdout(), std::io::stderr().is_terminal(), arguments.verbose);
        session::run(&config, &request, Arc::new(ProcessSandbox), &mut reporter, interrupted).await
    });
    let summary = match outcome {
        Ok(summary) => summary,
        Err(error) => return session_error_code(error),
    };
    if let Err(code) = write_reports(&summary, arguments) {
        return code;
    }
    match summary.status {
        RunStatus::Passed => exit::PASSED,
        RunStatus::Failed => exit::FAILED,
        RunStatus::Invalid => exit::INVALID,
        RunStatus::InfrastructureError => exit::INFRASTRUCTURE,
        RunStatus::Interrupted => exit::INTERRUPTED,
        // Unverified tasks must not pass CI; nothing broke, so it is not 102 either.
        RunStatus::BudgetExhausted => exit::FAILED,
    }
}

fn write_reports(summary: &RunSummary, arguments: &RunArgs) -> Result<(), u8> {
    let write = |path: &Path, text: &str| {
        if let Some(parent) = path
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
        {
            let _ = std::fs::create_dir_all(parent);
        }
        std::fs::write(path, text).map_err(|error| {
            eprintln!("error: could not write {}: {error}", path.display());
            exit::INFRASTRUCTURE
        })
    };
    if let Some(path) = &arguments.junit {
        match junit::render(summary) {
            Ok(xml) => write(path, &xml)?,
            Err(error) => {
                eprintln!("error: could not render JUnit XML: {error}");
                return Err(exit::INFRASTRUCTURE);
            }
        }
    }
    if let Some(path) = &arguments.json {
        write(path, &json::render(summary))?;
    }
    Ok(())
}

fn list_tasks(global: &cli::GlobalArgs, arguments: &ListArgs) -> u8 {
    let config = match load_config(global) {
        Ok(config) => config,
        Err(code) => return code,
    };
    let request = Request {
        paths: arguments.paths.clone(),
        filters: arguments.filters.clone(),
        ..Request::default()
    };
    let suite = match session::load_suite(&config, &request, &Catalogue::builtin()) {
        Ok(suite) => suite,
        Err(error) => return session_error_code(error),
    };
    let width = suite
        .tasks
        .iter()
        .map(|task| task.id.len())
        .max()
        .unwrap_or(0);
    for task in &suite.tasks {
        println!(
            "{:<width$}  {}  [{}]  {}",
            task.id,
            task.path.display(),
            task.services.join(", "),
            task.name
        );
    }
    let code = if suite.invalid.is_empty() {
        exit::PASSED
    } else {
        exit::INVALID
    };
    for invalid in suite.invalid {
        report_error(invalid);
    }
    code
}
