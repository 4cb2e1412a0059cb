//! `cargo clawtest validate [PATH…]`: every error and warning of every task file, without
//! running anything.

use std::io::IsTerminal;

use clawtest::config::Config;
use clawtest::services::Catalogue;

use clawtest::sandbox::commands::CommandRule;

use super::{Outcome, command_place, working_directory};
use crate::cli::{Format, GlobalArgs, ValidateArgs};
use crate::errors::ExpectedError;

pub fn run(global: &GlobalArgs, arguments: &ValidateArgs) -> Outcome {
    let start = working_directory();
    // Explicit paths need no configuration: without one, the defaults apply.
    let config = if arguments.paths.is_empty() {
        Config::load(global.config.as_deref(), &start)
    } else {
        Config::optional(global.config.as_deref(), &start)
            .map(|config| config.unwrap_or_else(|| Config::defaults(start.clone())))
    }
    .map_err(ExpectedError::Config)?;
    let feasibility = if arguments.feasibility || config.validate.feasibility {
        let place = command_place(&config, arguments.backend)?;
        Some(CommandRule::new(place, false))
    } else {
        None
    };
    let options = clawtest::validate::Options {
        coverage: arguments.coverage,
        feasibility,
    };
    let report =
        clawtest::validate::validate(&config, &arguments.paths, &Catalogue::builtin(), &options)
            .map_err(ExpectedError::Validate)?;
    if report.files.is_empty() {
        return Err(ExpectedError::NoTaskFiles);
    }
    match arguments.format {
        Format::Json => out!("{}", report.to_json()),
        Format::Human => out!("{}", report.render_human(std::io::stdout().is_terminal())),
    }
    if report.is_valid() {
        Ok(())
    } else {
        Err(ExpectedError::Reported)
    }
}
