//! Variants as files and as a suite: the task files the paths name, loaded and each
//! given its variants (`cargo clawtest vary`); a variant written into the output folder with
//! the workspace files it copies, so it loads there as it did beside its source; a suite's
//! tasks replaced by their variants in memory (`run --variants`).

use std::path::{Path, PathBuf};

use super::{Generated, Options, Variant, generate};
use crate::discover::{self, DiscoverError};
use crate::sandbox::commands::Commands;
use crate::services::Catalogue;
use crate::task::{self, InvalidTask, Task};

/// One source task file and what it gave.
#[derive(Debug)]
pub struct FromFile {
    /// The task file.
    pub source: PathBuf,
    /// The task and its variants, or why the file is not a valid task.
    pub outcome: Result<(Task, Generated), InvalidTask>,
}

/// The task files under `paths` (files, or folders searched for `*.yaml`), each loaded and
/// given its variants, in a stable order.
pub fn from_paths(
    paths: &[PathBuf],
    catalogue: &Catalogue,
    options: &Options,
    commands: &Commands,
) -> Result<Vec<FromFile>, DiscoverError> {
    let files = discover::explicit_files(paths)?;
    Ok(files
        .into_iter()
        .map(|source| {
            let outcome = task::load(&source, catalogue).map(|task| {
                let generated = generate(&task, catalogue, options, commands);
                (task, generated)
            });
            FromFile { source, outcome }
        })
        .collect())
}

/// Why a variant could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The output folder or file could not be written.
    #[error("cannot write `{}`: {error}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What the system said.
        error: std::io::Error,
    },
    /// A workspace file the variant copies is already in the output folder, different.
    #[error("`{}` already exists with other content (from another task's `files:`)", .0.display())]
    Clash(PathBuf),
}

/// Writes `variant` as `<out>/<id>.yaml`, with the files its `files:` copy beside it; gives
/// the path written.
pub fn write(variant: &Variant, out: &Path) -> Result<PathBuf, WriteError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |error| WriteError::Io { path, error }
    };
    crate::persist::create_folder(out).map_err(io(out))?;
    for file in &variant.task.files {
        let Ok(relative) = file.source.strip_prefix(&file.root) else {
            continue;
        };
        let target = out.join(relative);
        let content = std::fs::read(&file.source).map_err(io(&file.source))?;
        match std::fs::read(&target) {
            Ok(existing) if existing == content => continue,
            Ok(_) => return Err(WriteError::Clash(target)),
            Err(_) => {}
        }
        crate::persist::write(&target, &content, crate::persist::Durability::Recording)
            .map_err(io(&target))?;
    }
    let path = out.join(format!("{}.yaml", variant.task.id));
    crate::accept::write(&path, &variant.yaml).map_err(|failure| WriteError::Io {
        path: failure.path,
        error: failure.error,
    })?;
    Ok(path)
}

/// `tasks` replaced by their variants, in order, with one line for each variant that failed
/// and each task skipped (`run --variants`: nothing is written).
pub fn expand(
    tasks: Vec<Task>,
    catalogue: &Catalogue,
    options: &Options,
    commands: &Commands,
) -> (Vec<Task>, Vec<String>) {
    let mut variants = Vec::new();
    let mut notes = Vec::new();
    for task in tasks {
        let generated = generate(&task, catalogue, options, commands);
        if let Some(reason) = generated.skipped {
            notes.push(format!("{}: no variants: {reason}", task.path.display()));
        }
        for failure in generated.failures {
            notes.push(format!(
                "{}: variant `{}` not run: {}",
                task.path.display(),
                failure.id,
                failure.reason
            ));
        }
        variants.extend(generated.variants.into_iter().map(|variant| variant.task));
    }
    (variants, notes)
}
