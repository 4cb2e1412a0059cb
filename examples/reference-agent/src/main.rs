//! Entry point: reads the configuration, runs the agent, prints the final answer on stdout and
//! maps failures to exit codes (1 model error, 2 bad input, 3 turn budget exhausted).

use std::io::Write;
use std::process::ExitCode;

use reference_agent::{agent, config::Config};

/// Exit code for a missing or invalid prompt, tools file or variable.
const INVALID_INPUT: u8 = 2;

fn main() -> ExitCode {
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(error) => {
            eprintln!("reference-agent: {error}");
            return ExitCode::from(INVALID_INPUT);
        }
    };
    match agent::run(&config) {
        Ok(answer) => {
            // Write explicitly rather than println!, which panics if stdout is closed.
            let mut stdout = std::io::stdout().lock();
            match writeln!(stdout, "{answer}").and_then(|()| stdout.flush()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("reference-agent: cannot write the answer to stdout: {error}");
                    ExitCode::FAILURE
                }
            }
        }
        Err(error) => {
            eprintln!("reference-agent: {error}");
            ExitCode::from(error.exit_code())
        }
    }
}
