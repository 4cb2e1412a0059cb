//! `files[]`: a file of the task's folder copied into the trial's workspace, and the rule
//! that keeps it a file of the task's folder. A task file comes from a pull request like the
//! agent does: `notes.txt` may be a link to `/proc/self/environ` or to a folder outside, and
//! following it would copy the host's secrets into the sandbox. So a source is resolved
//! (links included) when the task is validated and must be a regular file inside the folder,
//! and it is checked again, without following links, when it is copied.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use rustix::fs::OFlags;
use serde::Serialize;

/// A file copied from the task's folder into the trial's workspace before the harness starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileCopy {
    /// Absolute path on the host, links resolved (so it names the file itself).
    pub source: PathBuf,
    /// Path relative to the workspace root (the `/workspace/` prefix removed).
    pub target: PathBuf,
    /// The task's folder, links resolved: what `source` must stay inside.
    #[serde(skip)]
    pub root: PathBuf,
}

/// Why a `files[].source` is not a file of the task's folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SourceRefused {
    /// Nothing is there (or the task's folder cannot be read).
    Missing,
    /// It resolves (through a link) to this place outside the task's folder.
    Outside(PathBuf),
    /// It is a folder, a device, a pipe or a socket.
    NotARegularFile,
}

/// `relative` under `folder`, resolved: the path of a regular file inside the folder.
pub(crate) fn resolve(folder: &Path, relative: &Path) -> Result<FileCopy, SourceRefused> {
    let root = folder.canonicalize().map_err(|_| SourceRefused::Missing)?;
    let source = folder
        .join(relative)
        .canonicalize()
        .map_err(|_| SourceRefused::Missing)?;
    if !source.starts_with(&root) {
        return Err(SourceRefused::Outside(source));
    }
    if !source.metadata().is_ok_and(|metadata| metadata.is_file()) {
        return Err(SourceRefused::NotARegularFile);
    }
    Ok(FileCopy {
        source,
        target: PathBuf::new(),
        root,
    })
}

impl FileCopy {
    /// What an agent can read of the file as text, from at most `limit` bytes of it: a PDF's
    /// pages (as `documents` answers them), a SQLite database its rows' values, any other file
    /// its bytes as UTF-8 (what `cat` shows of a CSV or a JSON file). Empty when it cannot
    /// be read: coverage and the feasibility proof look for words in it, they do not judge it.
    pub fn readable_text(&self, limit: u64) -> String {
        use std::io::Read as _;

        let mut bytes = Vec::new();
        if self
            .open_source()
            .and_then(|source| source.take(limit).read_to_end(&mut bytes))
            .is_err()
        {
            return String::new();
        }
        if bytes.starts_with(b"%PDF-") {
            let limits = crate::pdf::Limits {
                file_bytes: limit as usize,
                ..crate::pdf::Limits::default()
            };
            if let Ok(pages) = crate::pdf::page_texts(&bytes, limits) {
                return pages.join("\n");
            }
        }
        // A database's values as a query shows them, not run together as its pages store them.
        if let Some(values) = crate::workspace_files::sqlite_values_text(&bytes) {
            return values;
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Opens the source for copying, checking again what validation checked: the file may
    /// have been replaced by a link since (a harness on the process backend can write the
    /// task's folder). The path must still resolve to itself inside the root, its last part
    /// is opened without following a link, and the file opened must be the one resolved.
    pub fn open_source(&self) -> io::Result<File> {
        use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};

        let refused = |why: &str| {
            io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("{} {why}", self.source.display()),
            )
        };
        let resolved = self.source.canonicalize()?;
        if resolved != self.source || !resolved.starts_with(&self.root) {
            return Err(refused(
                "was replaced by a link since the task was validated; it is not copied",
            ));
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags((OFlags::NOFOLLOW | OFlags::NONBLOCK).bits() as i32)
            .open(&self.source)?;
        let opened = file.metadata()?;
        let named = std::fs::symlink_metadata(&self.source)?;
        if !opened.is_file() || (opened.dev(), opened.ino()) != (named.dev(), named.ino()) {
            return Err(refused(
                "is not the regular file that was validated; it is not copied",
            ));
        }
        Ok(file)
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::{SourceRefused, resolve};

    #[test]
    fn a_source_must_resolve_to_a_regular_file_inside_the_folder() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "key").unwrap();
        let folder = tempfile::tempdir().unwrap();
        let root = folder.path();
        std::fs::write(root.join("notes.txt"), "hello").unwrap();
        std::fs::create_dir(root.join("data")).unwrap();
        symlink(root.join("notes.txt"), root.join("alias.txt")).unwrap();
        symlink("/proc/self/environ", root.join("environ.txt")).unwrap();
        symlink(outside.path(), root.join("elsewhere")).unwrap();

        let copy = resolve(root, "notes.txt".as_ref()).unwrap();
        assert_eq!(copy.source, root.canonicalize().unwrap().join("notes.txt"));
        // A link that stays inside is the file it names.
        let alias = resolve(root, "alias.txt".as_ref()).unwrap();
        assert_eq!(alias.source, copy.source);
        assert!(matches!(
            resolve(root, "environ.txt".as_ref()),
            Err(SourceRefused::Outside(place)) if place.starts_with("/proc")
        ));
        assert!(matches!(
            resolve(root, "elsewhere/secret".as_ref()),
            Err(SourceRefused::Outside(_))
        ));
        assert_eq!(
            resolve(root, "data".as_ref()),
            Err(SourceRefused::NotARegularFile)
        );
        assert_eq!(
            resolve(root, "absent.txt".as_ref()),
            Err(SourceRefused::Missing)
        );
    }

    #[test]
    fn a_source_replaced_by_a_link_after_validation_is_not_opened() {
        let folder = tempfile::tempdir().unwrap();
        let root = folder.path();
        std::fs::write(root.join("notes.txt"), "hello").unwrap();
        let copy = resolve(root, "notes.txt".as_ref()).unwrap();
        assert!(copy.open_source().is_ok());
        std::fs::remove_file(root.join("notes.txt")).unwrap();
        symlink("/proc/self/environ", root.join("notes.txt")).unwrap();
        let error = copy.open_source().unwrap_err();
        assert!(error.to_string().contains("replaced by a link"), "{error}");
    }
}
