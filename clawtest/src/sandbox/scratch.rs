//! The temporary folders a run makes (each trial's workspace and control folder, the docker
//! backend's socket folders): named `clawtest-…` in the system's temporary folder, each with
//! an owner marker (`.clawtest-owner`: host name and process id), so that `cargo clawtest
//! clean` can remove what a killed run left (SIGKILL, a crash) and only that: a folder
//! without the marker, of another user, or whose owner is still alive is never touched.

use std::path::{Path, PathBuf};

use super::owner::{owner, owner_alive};

/// Every scratch folder's name starts with this.
const PREFIX: &str = "clawtest-";
/// The owner marker's file name inside a scratch folder.
pub(crate) const MARKER: &str = ".clawtest-owner";

/// A new scratch folder `clawtest-<kind>-…`, removed when the guard is dropped. It is the
/// user's alone (mode 0700): what a harness leaves in a trial's workspace (a setuid binary,
/// when clawtest runs as root) is out of every other local user's reach while the trial runs.
pub(crate) fn folder(kind: &str) -> std::io::Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt as _;
    let folder = tempfile::Builder::new()
        .prefix(&format!("{PREFIX}{kind}-"))
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()?;
    std::fs::write(folder.path().join(MARKER), owner())?;
    Ok(folder)
}

/// Removes the scratch folders in `parent` (the system's temporary folder for `clean`) whose
/// owner is dead; returns what was removed.
pub fn clean(parent: &Path) -> std::io::Result<Vec<PathBuf>> {
    let user = rustix::process::getuid().as_raw();
    let mut removed = Vec::new();
    for entry in std::fs::read_dir(parent)? {
        let Ok(entry) = entry else { continue };
        let path = entry.path();
        let named = entry.file_name().to_string_lossy().starts_with(PREFIX);
        // A folder itself (not a link to one), and this user's.
        let ours = std::fs::symlink_metadata(&path).is_ok_and(|metadata| {
            use std::os::unix::fs::MetadataExt;
            metadata.is_dir() && metadata.uid() == user
        });
        if !named || !ours {
            continue;
        }
        let marker = path.join(MARKER);
        let Ok(marker_metadata) = std::fs::symlink_metadata(&marker) else {
            continue;
        };
        if !marker_metadata.is_file() {
            continue;
        }
        let Ok(owner) = std::fs::read_to_string(&marker) else {
            continue;
        };
        if owner_alive(owner.trim()) || !owner.contains('/') {
            continue;
        }
        if std::fs::remove_dir_all(&path).is_ok() {
            removed.push(path);
        }
    }
    Ok(removed)
}
