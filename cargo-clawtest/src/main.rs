//! `cargo clawtest`: the thin binary. It parses argv, calls the clawtest library through one
//! command module each (`commands/`), prints what the library returns, and maps how a command
//! ended to the process's exit code (`errors.rs`, where the codes are listed). Nothing else
//! lives here.

#[macro_use]
mod output;
mod cli;
mod commands;
mod errors;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command};

/// mimalloc, not the system allocator: a trial allocates and frees a few thousand small values
/// across the runtime's threads (requests, answers, the trajectory), and glibc's malloc spent a
/// sixth of clawtest's CPU a trial on it (its arena locks, `malloc_consolidate`, the aligned
/// allocations of tokio's tasks, pages trimmed and faulted back in); see docs/development.md.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // `cargo clawtest …` runs `cargo-clawtest clawtest …`: drop the repeated subcommand name.
    let mut arguments: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if arguments
        .get(1)
        .is_some_and(|argument| argument == "clawtest")
    {
        arguments.remove(1);
    }
    if cli::deprecated_alias(&mut arguments) {
        eprintln!("{}", cli::VARY_NOTICE);
    }
    let cli = Cli::parse_from(arguments);
    let global = &cli.global;
    let outcome = match &cli.command {
        Some(Command::Run(run)) => commands::run::run(global, run),
        Some(Command::List(list)) => commands::list::run(global, list),
        Some(Command::Merge(merge)) => commands::merge::run(global, merge),
        Some(Command::Grade(grade)) => commands::grade::run(global, grade),
        Some(Command::Report(report)) => commands::report::run(report),
        Some(Command::Init(init)) => commands::init::run(init),
        Some(Command::ExampleAgent) => return commands::example_agent::run(),
        Some(Command::OracleAgent) => return commands::oracle_agent::run(),
        Some(Command::Validate(validate)) => commands::validate::run(global, validate),
        Some(Command::Schema) => commands::schema::run(),
        Some(Command::Clean) => commands::clean::run(),
        Some(Command::Serve(serve)) => commands::serve::run(serve),
        Some(Command::Model(model)) => commands::model::run(model),
        Some(Command::Services(services)) => commands::services::run(services),
        Some(Command::Cassettes(cassettes)) => commands::cassettes::run(global, cassettes),
        Some(Command::Generate(generate)) => commands::generate::run(global, generate),
        Some(Command::Vary(vary)) => commands::vary::run(global, vary),
        None => commands::run::run(global, &cli.run),
    };
    match outcome {
        Ok(()) => ExitCode::from(errors::exit::PASSED),
        Err(error) => {
            let code = error.exit_code();
            error.report();
            ExitCode::from(code)
        }
    }
}
