//! Writing a file clawtest leaves for the user (a snapshot, a cassette, a generated task, the
//! judge's cache, results and reports): never through a link, never half-written.
//!
//! A suite comes from a pull request, so a snapshot or a cassette path may be a symbolic link
//! a reviewer did not notice — or a folder on the way to it may be (`snapshots/` committed as
//! a link to `~/.ssh`): writing through it would overwrite, or create, any file the reviewer
//! can write. [`write`] refuses a link in every folder of the path below the current
//! directory's (see [`create_folder`]), creates the folders missing without following one,
//! refuses a last component that is a link (or anything but a regular file), writes a
//! temporary file beside the target and renames it over the target:
//! the rename replaces the name itself (a link put there meanwhile included), and a crash, a
//! SIGKILL or a full disk leaves the old file whole, never a cut one. A recording (a cassette,
//! a snapshot, a generated task) is also synced before the rename and its folder after, so a
//! power cut cannot lose it either.

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Component, Path, PathBuf};

/// How hard a write insists on reaching the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Written again by the next run (a report): renamed into place, not synced.
    Report,
    /// What the user would lose to a crash (a recording, a snapshot, a generated task): synced
    /// to the disk before the rename, and its folder after.
    Recording,
}

/// Writes `contents` to `path` (its folder must exist): refuses a link or a path that is not a
/// regular file, and replaces the file whole or not at all. A new file gets the permissions
/// the user's umask allows; a replaced one keeps its own.
pub fn write(path: &Path, contents: &[u8], durability: Durability) -> std::io::Result<()> {
    // The path as checked is the path written: a `..` after a linked folder would otherwise
    // be resolved by the kernel through the link.
    let path = &absolute(path);
    if let Some(parent) = path.parent() {
        create_folder(parent)?;
    }
    let existing = match std::fs::symlink_metadata(path) {
        Ok(metadata) => Some(metadata),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
        Err(error) => return Err(error),
    };
    let permissions = match &existing {
        Some(metadata) if metadata.file_type().is_symlink() => {
            return Err(refused(
                "it is a symbolic link; clawtest never writes through a link (remove the link, then run again)",
            ));
        }
        Some(metadata) if !metadata.is_file() => {
            return Err(refused(
                "it is not a regular file (a folder, a FIFO or a device); remove it, then run again",
            ));
        }
        Some(metadata) => metadata.permissions(),
        None => std::fs::Permissions::from_mode(0o666),
    };
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| refused("the path names no file"))?;
    let mut temporary = tempfile::Builder::new()
        .prefix(&format!(".{}.", name.to_string_lossy()))
        .suffix(".tmp")
        .permissions(permissions)
        .tempfile_in(folder)?;
    temporary.write_all(contents)?;
    if durability == Durability::Recording {
        temporary.as_file().sync_all()?;
    }
    // The temporary file is removed when the rename fails.
    temporary.persist(path).map_err(|error| error.error)?;
    if durability == Durability::Recording {
        // The rename is in the folder: without this, a power cut may forget it.
        std::fs::File::open(folder)?.sync_all()?;
    }
    Ok(())
}

/// Creates `folder` and the folders missing above it, refusing a symbolic link (or anything
/// but a folder) in any component below the deepest folder the path shares with the current
/// directory, with an error naming the link. The folders the current directory is in are the
/// user's own choice (a home folder may well be a link); those below it are what a suite (a
/// pull request) can commit. A check before each step, not an `openat` walk: what it guards
/// against is a link committed in the suite, not one swapped in while clawtest runs.
pub fn create_folder(folder: &Path) -> std::io::Result<()> {
    if folder.as_os_str().is_empty() {
        return Ok(());
    }
    let current = lexical(&std::env::current_dir().unwrap_or_default());
    let folder = absolute(folder);
    let shared = folder
        .components()
        .zip(current.components())
        .take_while(|(one, other)| one == other)
        .count();
    let mut walked = PathBuf::new();
    for (index, component) in folder.components().enumerate() {
        walked.push(component);
        if index < shared.max(1) {
            continue;
        }
        if !existing_folder(&walked)? {
            // `mkdir` never follows a link put at its last component: it fails instead, and
            // the folder another writer made meanwhile is checked like any other.
            match std::fs::create_dir(&walked) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                    existing_folder(&walked)?;
                }
                Err(error) => return Err(error),
            }
        }
    }
    Ok(())
}

/// Whether `path` is a folder (false: nothing is there); an error naming it when it is a link
/// or anything else.
fn existing_folder(path: &Path) -> std::io::Result<bool> {
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if metadata.file_type().is_symlink() => Err(refused(&format!(
            "{} is a symbolic link; clawtest never writes through a link, in a folder either (remove the link, or write elsewhere)",
            path.display()
        ))),
        Ok(metadata) if !metadata.is_dir() => Err(refused(&format!(
            "{} is not a folder; remove it, or write elsewhere",
            path.display()
        ))),
        Ok(_) => Ok(true),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(error) => Err(error),
    }
}

/// `path` from the root, relative to the current directory when it is relative, made
/// [`lexical`].
fn absolute(path: &Path) -> PathBuf {
    lexical(&std::env::current_dir().unwrap_or_default().join(path))
}

/// `path` with `.` left out and each `..` taking off the component before it, without asking
/// the file system (which would follow the links this module looks for).
fn lexical(path: &Path) -> PathBuf {
    let mut result = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                result.pop();
            }
            other => result.push(other),
        }
    }
    result
}

fn refused(why: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, why.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_is_refused_and_its_target_is_untouched() {
        let folder = tempfile::tempdir().unwrap();
        let victim = folder.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let link = folder.path().join("out.snap");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let error = write(&link, b"attacker", Durability::Recording).unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        // A dangling link would have created its target.
        let dangling = folder.path().join("new.snap");
        std::os::unix::fs::symlink(folder.path().join("created"), &dangling).unwrap();
        assert!(write(&dangling, b"x", Durability::Report).is_err());
        assert!(!folder.path().join("created").exists());
    }

    #[test]
    fn a_linked_folder_on_the_way_is_refused_naming_the_link() {
        let folder = tempfile::tempdir().unwrap();
        let victim = folder.path().join("victim");
        std::fs::create_dir(&victim).unwrap();
        let suite = folder.path().join("suite");
        std::fs::create_dir(&suite).unwrap();
        // `snapshots` committed as a link to the victim's folder; a file and a folder below it.
        let link = suite.join("snapshots");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        for path in [link.join("task.snap"), link.join("deeper/task.snap")] {
            let error = write(&path, b"attacker", Durability::Recording).unwrap_err();
            assert!(
                error
                    .to_string()
                    .contains(&format!("{} is a symbolic link", link.display())),
                "{error}"
            );
        }
        // Nothing was created through the link, not even a folder.
        assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 0);
        // A folder that is not linked is created, level by level.
        let fine = suite.join("reports/html/index.html");
        write(&fine, b"ok", Durability::Report).unwrap();
        assert_eq!(std::fs::read_to_string(&fine).unwrap(), "ok");
    }

    #[test]
    fn a_link_above_the_current_folder_is_the_user_s_own() {
        // The folders the current directory lies in were chosen by the user; only those below
        // the part a path shares with it are checked.
        let current = std::env::current_dir().unwrap();
        let shared = lexical(&current.join("a/../b/./c"));
        assert_eq!(shared, current.join("b/c"));
        // The current directory itself is never refused, whatever lies above it.
        create_folder(&current).unwrap();
        create_folder(Path::new(".")).unwrap();
    }

    #[test]
    fn a_fifo_is_refused_without_opening_it() {
        let folder = tempfile::tempdir().unwrap();
        let fifo = folder.path().join("junit.xml");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
        let error = write(&fifo, b"x", Durability::Report).unwrap_err();
        assert!(error.to_string().contains("not a regular file"), "{error}");
    }

    #[test]
    fn the_file_is_replaced_whole_and_keeps_its_permissions() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("cassette.yaml");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        write(&path, b"new", Durability::Recording).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        // Nothing is left beside it.
        let names: Vec<_> = std::fs::read_dir(folder.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn the_old_file_is_never_written_in_place() {
        // A write in place (truncate, then write) is what a SIGKILL or a full disk cuts; the
        // old file's own inode is never touched, so whatever stops the write, it stays whole.
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("cassette.yaml");
        std::fs::write(&path, "good recording").unwrap();
        let old = std::fs::File::open(&path).unwrap();
        write(&path, b"the new one", Durability::Recording).unwrap();
        let mut kept = String::new();
        std::io::Read::read_to_string(&mut &old, &mut kept).unwrap();
        assert_eq!(kept, "good recording");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "the new one");
    }
}
