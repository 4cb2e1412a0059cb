//! `cargo clawtest oracle-agent` (hidden): the harness `run --oracle` starts in every trial,
//! playing the task's oracle (`clawtest::oracle::agent`).

use std::process::ExitCode;

/// Plays the plan; exit 0, or 1 with the reason on stderr.
pub fn run() -> ExitCode {
    match clawtest::oracle::agent::run_from_env() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            errln!("oracle-agent: {error}");
            ExitCode::FAILURE
        }
    }
}
