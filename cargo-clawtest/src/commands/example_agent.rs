//! `cargo clawtest example-agent`: the reference agent that `init` configures as the harness,
//! linked in from the `clawtest-reference-agent` crate so that `cargo install` brings it along.

use std::process::ExitCode;

/// Runs the agent. Its exit codes are its own (0 answered, 1 model error, 2 bad input, 3 turn
/// budget exhausted), not clawtest's.
pub fn run() -> ExitCode {
    ExitCode::from(clawtest_reference_agent::run_from_env(&[]))
}
