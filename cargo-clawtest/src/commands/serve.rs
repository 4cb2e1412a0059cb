//! `cargo clawtest serve TASK.yaml`: one task's services alone, until Ctrl-C (exit 0: stopping
//! is its normal end).

use clawtest::services::Catalogue;
use clawtest::task::InjectionMode;
use clawtest::world::{FaultPlan, WorldOptions};

use super::{Outcome, runtime};
use crate::cli::ServeArgs;
use crate::errors::ExpectedError;

pub fn run(arguments: &ServeArgs) -> Outcome {
    let catalogue = Catalogue::builtin();
    let task = clawtest::task::load(&arguments.task, &catalogue)
        .map_err(|error| ExpectedError::Task(Box::new(error)))?;
    let mode = if arguments.burst {
        InjectionMode::Burst
    } else {
        InjectionMode::Uniform
    };
    let options = WorldOptions {
        faults: FaultPlan::for_trial(&task.id, 0, arguments.error_rate, arguments.seed, mode),
        ..WorldOptions::default()
    };
    runtime()?
        .block_on(clawtest::serve::standalone::serve_task(
            &task,
            &catalogue,
            arguments.port,
            options,
            arguments.seed,
            std::io::stdout(),
            async {
                let _ = tokio::signal::ctrl_c().await;
            },
        ))
        .map_err(ExpectedError::Serve)
}
