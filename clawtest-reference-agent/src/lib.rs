//! A small OpenAI-compatible tool-calling agent that knows only the sandbox contract: a prompt, a
//! tools file whose entries say which HTTP endpoint executes them, a services URL and a
//! chat-completions endpoint, all given through environment variables (see [`config`]).
//!
//! A crate of its own so that two binaries link it: `cargo clawtest example-agent` (the starter
//! harness `cargo clawtest init` configures, there after `cargo install`) and the stand-alone
//! `reference-agent` of `examples/reference-agent` (the demo suite's and the tests' harness).

pub mod agent;
pub mod config;
mod http;
pub mod image;
pub mod mcp;
pub mod model;
pub mod session;
pub mod tools;
pub mod workspace;

use std::io::Write;

/// Exit code for a missing or invalid prompt, tools file or variable.
pub const INVALID_INPUT: u8 = 2;

/// The argument that turns the agent's retries off: a tool call answered 429 or 5xx goes
/// straight to the model (whose recording then decides), as a careless agent's would.
pub const NO_RETRIES_FLAG: &str = "--no-retries";

/// Reads the configuration from the environment (and [`NO_RETRIES_FLAG`] from `arguments`,
/// the command line's after the program), runs the agent, prints the final answer on stdout
/// and returns the exit code (0 answered, 1 model error, 2 bad input, 3 turn budget
/// exhausted).
pub fn run_from_env(arguments: &[String]) -> u8 {
    let mut no_retries = false;
    for argument in arguments {
        if argument == NO_RETRIES_FLAG {
            no_retries = true;
        } else {
            eprintln!(
                "reference-agent: unknown argument {argument:?} (the only one is {NO_RETRIES_FLAG})"
            );
            return INVALID_INPUT;
        }
    }
    let config = match config::Config::from_env() {
        Ok(mut config) => {
            if no_retries {
                config.retries = 0;
            }
            config
        }
        Err(error) => {
            eprintln!("reference-agent: {error}");
            return INVALID_INPUT;
        }
    };
    let answered = match config.session.clone() {
        Some(mut session) => agent::run_session(&config, |answer| session.next(answer)),
        None => agent::run(&config),
    };
    match answered {
        Ok(answer) => {
            // Write explicitly rather than println!, which panics if stdout is closed.
            let mut stdout = std::io::stdout().lock();
            match writeln!(stdout, "{answer}").and_then(|()| stdout.flush()) {
                Ok(()) => 0,
                Err(error) => {
                    eprintln!("reference-agent: cannot write the answer to stdout: {error}");
                    1
                }
            }
        }
        Err(error) => {
            eprintln!("reference-agent: {error}");
            error.exit_code()
        }
    }
}
