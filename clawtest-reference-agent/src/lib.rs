//! A small OpenAI-compatible tool-calling agent that knows only the sandbox contract: a prompt, a
//! tools file whose entries say which HTTP endpoint executes them, a services URL and a
//! chat-completions endpoint, all given through environment variables (see [`config`]).
//!
//! A crate of its own so that two binaries link it: `cargo clawtest example-agent` (the starter
//! harness `cargo clawtest init` configures, there after `cargo install`) and the stand-alone
//! `reference-agent` of `examples/reference-agent` (the demo suite's and the tests' harness).

pub mod agent;
pub mod config;
pub mod mcp;
pub mod model;
pub mod tools;

use std::io::Write;

/// Exit code for a missing or invalid prompt, tools file or variable.
pub const INVALID_INPUT: u8 = 2;

/// Reads the configuration from the environment, runs the agent, prints the final answer on
/// stdout and returns the exit code (0 answered, 1 model error, 2 bad input, 3 turn budget
/// exhausted).
pub fn run_from_env() -> u8 {
    let config = match config::Config::from_env() {
        Ok(config) => config,
        Err(error) => {
            eprintln!("reference-agent: {error}");
            return INVALID_INPUT;
        }
    };
    match agent::run(&config) {
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
