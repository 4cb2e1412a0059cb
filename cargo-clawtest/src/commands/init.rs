//! `cargo clawtest init [DIR]`: writes a starter suite and says what to do next, from where
//! the user is (`cd DIR` first when DIR is not here).

use std::path::{Component, Path};

use super::Outcome;
use crate::cli::InitArgs;
use crate::errors::ExpectedError;

pub fn run(arguments: &InitArgs) -> Outcome {
    let written =
        clawtest::init::init(&arguments.folder, arguments.force).map_err(ExpectedError::Init)?;
    for path in written {
        sayln!("wrote {}", arguments.folder.join(path).display());
    }
    let enter = if is_here(&arguments.folder) {
        String::new()
    } else {
        format!("cd {} && ", arguments.folder.display())
    };
    sayln!(
        "\nnext:\n  {enter}cargo clawtest       # replays the two example tasks against the example agent: both pass\n  then point [harness] command in clawtest.toml at your agent, and record its model calls\n  with the scripted model: tasks/README.md says how (cargo clawtest model --script model-scripts)\n  CI: fill in CLAWTEST_GIT and CLAWTEST_REV at the top of .github/workflows/clawtest.yml"
    );
    Ok(())
}

/// Whether `folder` is the current directory as written (`.`, `./`, or empty).
fn is_here(folder: &Path) -> bool {
    folder
        .components()
        .all(|component| component == Component::CurDir)
}
