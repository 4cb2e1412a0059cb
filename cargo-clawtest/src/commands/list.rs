//! `cargo clawtest list [FILTER…]`: the suite's tasks, one line each; invalid files after them.

use clawtest::run::session::{self, Request};
use clawtest::services::Catalogue;

use super::{Outcome, load_config};
use crate::cli::{GlobalArgs, ListArgs};
use crate::errors::{self, ExpectedError};

pub fn run(global: &GlobalArgs, arguments: &ListArgs) -> Outcome {
    let config = load_config(global)?;
    let request = Request {
        paths: arguments.paths.clone(),
        filters: arguments.filters.clone(),
        ..Request::default()
    };
    let suite = session::load_suite(&config, &request, &Catalogue::builtin())
        .map_err(ExpectedError::Session)?;
    let width = suite
        .tasks
        .iter()
        .map(|task| task.id.len())
        .max()
        .unwrap_or(0);
    for task in &suite.tasks {
        sayln!(
            "{:<width$}  {}  [{}]  {}",
            task.id,
            task.path.display(),
            task.services.join(", "),
            task.name
        );
    }
    if suite.invalid.is_empty() {
        return Ok(());
    }
    for invalid in suite.invalid {
        errors::report(invalid);
    }
    Err(ExpectedError::Reported)
}
