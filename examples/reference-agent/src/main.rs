//! Entry point: everything is in the `clawtest-reference-agent` library's `run_from_env`, which
//! `cargo clawtest example-agent` also calls.

use std::process::ExitCode;

fn main() -> ExitCode {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    ExitCode::from(clawtest_reference_agent::run_from_env(&arguments))
}
