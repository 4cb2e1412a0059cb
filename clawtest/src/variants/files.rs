//! Variants as files and as a suite: the task files the paths name, loaded and each
//! given its variants (`cargo clawtest vary`); a variant written into the output folder with
//! the workspace files it copies, so it loads there as it did beside its source; a suite's
//! tasks replaced by their variants, drawn one at a time as a run asks for them (`run
//! --variants`).

use std::path::{Path, PathBuf};

use std::sync::Arc;

use super::{Drawer, Generated, Options, Variant, generate};
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

/// What `run --variants` runs, one at a time: a variant, or a line about a variant that failed
/// or a task that was skipped.
#[derive(Debug)]
pub enum Expanded {
    /// A variant to run, as a task.
    Task(Box<Task>),
    /// Why a variant is not run, or a task has none.
    Note(String),
}

/// `tasks` replaced by their variants, in order, drawn one at a time as they are asked for
/// (`run --variants`: nothing is written, and only the variant being drawn and the surfaces
/// drawn before it, for the task being varied, are held).
pub struct Expansion {
    tasks: std::vec::IntoIter<Task>,
    current: Option<Drawer>,
    catalogue: Arc<Catalogue>,
    options: Options,
    commands: Commands,
}

/// The variants of `tasks`, as a stream ([`Expansion`]).
pub fn expand(
    tasks: Vec<Task>,
    catalogue: Arc<Catalogue>,
    options: Options,
    commands: Commands,
) -> Expansion {
    Expansion {
        tasks: tasks.into_iter(),
        current: None,
        catalogue,
        options,
        commands,
    }
}

impl Expansion {
    /// How many variants of the task being varied have been drawn (for tests: one a request).
    #[cfg(test)]
    pub(super) fn drawn(&self) -> u32 {
        self.current.as_ref().map_or(0, |drawer| drawer.index)
    }
}

impl Iterator for Expansion {
    type Item = Expanded;

    fn next(&mut self) -> Option<Expanded> {
        loop {
            if let Some(drawer) = &mut self.current {
                let drawn = drawer.next(&self.catalogue, &self.options, &self.commands);
                let shown = drawer.task.path.display();
                match drawn {
                    Some(Ok(variant)) => return Some(Expanded::Task(Box::new(variant.task))),
                    Some(Err(failure)) => {
                        return Some(Expanded::Note(format!(
                            "{shown}: variant `{}` not run: {}",
                            failure.id, failure.reason
                        )));
                    }
                    None => self.current = None,
                }
            }
            let task = self.tasks.next()?;
            match Drawer::new(&task, &self.options) {
                Ok(drawer) => self.current = Some(drawer),
                Err((reason, _)) => {
                    let shown = task.path.display();
                    return Some(Expanded::Note(format!("{shown}: no variants: {reason}")));
                }
            }
        }
    }
}
