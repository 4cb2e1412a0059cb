//! `cargo clawtest init`: the starter files of a suite, from templates/ (embedded at build
//! time), written into a repository without overwriting anything unless asked to.

use std::path::{Path, PathBuf};

/// One file `init` writes: where (relative to the repository) and what.
#[derive(Debug, Clone, Copy)]
pub struct Template {
    /// Where the file goes, relative to the repository (`/`-separated).
    pub path: &'static str,
    /// The file's text, from `templates/` at build time.
    pub contents: &'static str,
}

/// A [`Template`] written at `path` from `templates/<source>` (by default the same path).
macro_rules! template {
    ($path:literal) => {
        template!($path, $path)
    };
    ($path:literal, $source:literal) => {
        Template {
            path: $path,
            contents: include_str!(concat!("../../templates/", $source)),
        }
    };
}

/// Everything `init` writes.
pub const TEMPLATES: [Template; 10] = [
    template!("clawtest.toml"),
    template!("tasks/todo-review.yaml"),
    template!("tasks/offsite-reply.yaml"),
    template!("cassettes/todo-review.yaml"),
    template!("cassettes/offsite-reply.yaml"),
    template!("model-scripts/todo-review.yaml"),
    template!("model-scripts/offsite-reply.yaml"),
    template!("tasks/README.md", "suite-README.md"),
    template!("Dockerfile.clawtest", "Dockerfile"),
    template!(".github/workflows/clawtest.yml", "github-workflow.yml"),
];

/// Why `init` wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// Some of the files are already there and `force` was not given.
    #[error("{} already exist(s) in {}: nothing was written", existing.iter().map(|path| path.display().to_string()).collect::<Vec<_>>().join(", "), folder.display())]
    Exists {
        /// The repository written into.
        folder: PathBuf,
        /// The templates' paths (relative to `folder`) that already exist.
        existing: Vec<PathBuf>,
    },
    /// A file or its folder could not be written; the files before it were.
    #[error("cannot write {}: {message}", path.display())]
    Write {
        /// The file that could not be written.
        path: PathBuf,
        /// The I/O error, in words.
        message: String,
    },
}

/// Writes the templates into `folder`. Without `force`, any file that already exists stops
/// the whole operation before anything is written, so a half-initialised repository never
/// results. Returns the files written.
pub fn init(folder: &Path, force: bool) -> Result<Vec<PathBuf>, InitError> {
    let existing: Vec<PathBuf> = TEMPLATES
        .iter()
        .map(|template| PathBuf::from(template.path))
        .filter(|path| folder.join(path).exists())
        .collect();
    if !force && !existing.is_empty() {
        return Err(InitError::Exists {
            folder: folder.to_path_buf(),
            existing,
        });
    }
    let mut written = Vec::new();
    for template in TEMPLATES {
        let path = folder.join(template.path);
        crate::persist::write(
            &path,
            template.contents.as_bytes(),
            crate::persist::Durability::Recording,
        )
        .map_err(|error| InitError::Write {
            path: path.clone(),
            message: error.to_string(),
        })?;
        written.push(PathBuf::from(template.path));
    }
    Ok(written)
}
