//! `cargo clawtest model --script FILE_OR_FOLDER [--port N]`: the scripted model on loopback,
//! until Ctrl-C (exit 0: stopping is its normal end).

use clawtest::llm::gateway::scripted::{ScriptedModel, serve_scripts};

use super::{Outcome, runtime};
use crate::cli::ModelArgs;
use crate::errors::ExpectedError;

pub fn run(arguments: &ModelArgs) -> Outcome {
    let model = ScriptedModel::load(&arguments.script).map_err(ExpectedError::Script)?;
    runtime()?
        .block_on(serve_scripts(
            model,
            &arguments.script.display().to_string(),
            arguments.port,
            std::io::stdout(),
            async {
                let _ = tokio::signal::ctrl_c().await;
            },
        ))
        .map_err(ExpectedError::Model)
}
