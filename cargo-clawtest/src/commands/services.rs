//! `cargo clawtest services [NAME] [--format json]`: the built-in services, or one of them
//! with its routes, actions, parameters and fixture keys.

use clawtest::services::Catalogue;
use clawtest::services::listing;

use super::Outcome;
use crate::cli::{Format, ServicesArgs};
use crate::errors::ExpectedError;

pub fn run(arguments: &ServicesArgs) -> Outcome {
    let catalogue = Catalogue::builtin();
    let services = listing::select(&catalogue, arguments.name.as_deref())
        .map_err(ExpectedError::UnknownService)?;
    match (arguments.format, arguments.name.is_some()) {
        (Format::Json, _) => outln!("{:#}", listing::to_json(&services)),
        (Format::Human, false) => out!("{}", listing::render_summary(&services)),
        (Format::Human, true) => {
            for service in services {
                out!("{}", listing::render_service(service));
            }
        }
    }
    Ok(())
}
