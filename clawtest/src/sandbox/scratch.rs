//! The temporary folders a run makes (each trial's workspace and control folder, the docker
//! backend's socket folders): named `clawtest-…` in the system's temporary folder, each with
//! an owner marker (`.clawtest-owner`: host name and process id), so that `cargo clawtest
//! clean` can remove what a killed run left (SIGKILL, a crash) and only that: a folder
//! without the marker, of another user, or whose owner is still alive is never touched.

use std::path::{Path, PathBuf};

use super::docker::owner::{owner, owner_alive};

/// Every scratch folder's name starts with this.
const PREFIX: &str = "clawtest-";
/// The owner marker's file name inside a scratch folder.
const MARKER: &str = ".clawtest-owner";

/// A new scratch folder `clawtest-<kind>-…`, removed when the guard is dropped.
pub(crate) fn folder(kind: &str) -> std::io::Result<tempfile::TempDir> {
    let folder = tempfile::Builder::new()
        .prefix(&format!("{PREFIX}{kind}-"))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The gateway recognises a trial's folder by its name, to write it to cassettes as a
    /// placeholder: a trial's scratch folder must carry that prefix.
    #[test]
    fn a_trial_folder_is_named_as_the_gateway_expects() {
        let trial = super::folder("trial").unwrap();
        let name = trial
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(
            name.starts_with(crate::sandbox::TRIAL_FOLDER_PREFIX),
            "{name}"
        );
    }

    #[test]
    fn clean_removes_only_marked_folders_of_dead_owners() {
        let parent = tempfile::tempdir().unwrap();
        let make = |name: &str, marker: Option<&str>| {
            let path = parent.path().join(name);
            std::fs::create_dir(&path).unwrap();
            std::fs::write(path.join("file"), "x").unwrap();
            if let Some(marker) = marker {
                std::fs::write(path.join(MARKER), marker).unwrap();
            }
            path
        };
        // A process id that cannot be alive: above the kernel's maximum.
        let dead = format!("{}/999999999", owner().rsplit_once('/').unwrap().0);
        let orphan = make("clawtest-trial-orphan", Some(&dead));
        let alive = make("clawtest-trial-alive", Some(&owner()));
        let unmarked = make("clawtest-trial-unmarked", None);
        let other = make("someone-else", Some(&dead));
        let removed = clean(parent.path()).unwrap();
        assert_eq!(removed, std::slice::from_ref(&orphan));
        assert!(!orphan.exists());
        assert!(alive.exists() && unmarked.exists() && other.exists());
    }
}
