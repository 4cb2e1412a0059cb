//! `cargo clawtest init [DIR]`: writes a starter suite and says what to do next.

use super::Outcome;
use crate::cli::InitArgs;
use crate::errors::ExpectedError;

pub fn run(arguments: &InitArgs) -> Outcome {
    let written =
        clawtest::init::init(&arguments.folder, arguments.force).map_err(ExpectedError::Init)?;
    for path in written {
        sayln!("wrote {}", arguments.folder.join(path).display());
    }
    sayln!(
        "\nnext: run `cargo clawtest` here; then point [harness] command in clawtest.toml at your agent"
    );
    Ok(())
}
