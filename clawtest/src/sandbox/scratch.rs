//! The temporary folders a run makes (each trial's workspace and control folder, the docker
//! backend's socket folders): named `clawtest-…` in the system's temporary folder, each with
//! an owner marker (`.clawtest-owner`: host name and process id), so that `cargo clawtest
//! clean` can remove what a killed run left (SIGKILL, a crash) and only that: a folder
//! without the marker, of another user, or whose owner is still alive is never touched.
//!
//! The process backend's trial folders go to memory (`/dev/shm`) when it is a tmpfs clawtest
//! may write to with room for one trial at its disk cap, and `TMPDIR` does not name another
//! place: a trial makes, writes and removes a dozen files and folders, and on a disk file
//! system their inodes cost more than the rest of clawtest's work (docs/development.md).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::owner::{owner, owner_alive};

/// Every scratch folder's name starts with this.
const PREFIX: &str = "clawtest-";
/// The owner marker's file name inside a scratch folder.
pub(crate) const MARKER: &str = ".clawtest-owner";

/// A new scratch folder `clawtest-<kind>-…`, removed when the guard is dropped. It is the
/// user's alone (mode 0700): what a harness leaves in a trial's workspace (a setuid binary,
/// when clawtest runs as root) is out of every other local user's reach while the trial runs.
pub(crate) fn folder(kind: &str) -> std::io::Result<tempfile::TempDir> {
    folder_in(kind, &std::env::temp_dir())
}

/// [`folder`], in `parent`.
pub(crate) fn folder_in(kind: &str, parent: &Path) -> std::io::Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt as _;
    let folder = tempfile::Builder::new()
        .prefix(&format!("{PREFIX}{kind}-"))
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir_in(parent)?;
    std::fs::write(folder.path().join(MARKER), owner())?;
    Ok(folder)
}

/// The memory file system a trial's folder may go to.
const MEMORY: &str = "/dev/shm";

/// Where a trial folder of the process backend goes, each of whose trials may take `cap`
/// bytes: the system's temporary folder when `TMPDIR` is set (the user chose it), else
/// [`MEMORY`] when it is a tmpfs clawtest may write to with at least `cap` bytes free (looked
/// at once per process), else the system's temporary folder.
pub(crate) fn trial_parent(cap: u64) -> PathBuf {
    static MEMORY_FREE: OnceLock<Option<u64>> = OnceLock::new();
    if std::env::var_os("TMPDIR").is_some() {
        return std::env::temp_dir();
    }
    match MEMORY_FREE.get_or_init(|| memory_free(Path::new(MEMORY))) {
        Some(free) if *free >= cap => PathBuf::from(MEMORY),
        _ => std::env::temp_dir(),
    }
}

/// The bytes free in `folder` when it is a tmpfs this user may write to.
fn memory_free(folder: &Path) -> Option<u64> {
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    let stat = rustix::fs::statfs(folder).ok()?;
    let writable = rustix::fs::access(folder, rustix::fs::Access::WRITE_OK).is_ok();
    #[allow(
        clippy::useless_conversion,
        reason = "the field's type differs between targets"
    )]
    let tmpfs = i64::from(stat.f_type) == TMPFS_MAGIC;
    (tmpfs && writable).then(|| {
        #[allow(
            clippy::useless_conversion,
            reason = "the fields' types differ between targets"
        )]
        u64::try_from(stat.f_bavail)
            .unwrap_or_default()
            .saturating_mul(u64::try_from(stat.f_bsize).unwrap_or_default())
    })
}

/// The folders scratch folders may be in (for `cargo clawtest clean`): the system's temporary
/// folder, and the memory file system when there is one and `TMPDIR` is unset (with `TMPDIR`
/// set, no trial folder goes there: [`trial_parent`]; a clean of one `TMPDIR` leaves other
/// runs' folders alone).
pub fn parents() -> Vec<PathBuf> {
    let mut parents = vec![std::env::temp_dir()];
    if std::env::var_os("TMPDIR").is_some() {
        return parents;
    }
    if memory_free(Path::new(MEMORY)).is_some() && !parents.iter().any(|known| known == MEMORY) {
        parents.push(PathBuf::from(MEMORY));
    }
    parents
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

    /// The file system type `/proc/self/mounts` gives the mount at exactly `point`.
    fn mounted_type(point: &str) -> Option<String> {
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
        // The last mount at a point is the one seen.
        mounts.lines().rev().find_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            (fields.get(1) == Some(&point)).then(|| fields[2].to_string())
        })
    }

    #[test]
    fn only_a_writable_tmpfs_counts_as_memory_and_only_with_room_for_a_trial() {
        assert_eq!(memory_free(Path::new("/proc")), None);
        let tmpfs = mounted_type(MEMORY).as_deref() == Some("tmpfs");
        assert_eq!(memory_free(Path::new(MEMORY)).is_some(), tmpfs);
        // No file system has room for a trial that may take every byte.
        assert_ne!(trial_parent(u64::MAX), Path::new(MEMORY));
        if tmpfs && std::env::var_os("TMPDIR").is_none() {
            assert_eq!(trial_parent(1 << 20), Path::new(MEMORY));
            assert!(parents().iter().any(|parent| parent == Path::new(MEMORY)));
        }
    }

    #[test]
    fn a_scratch_folder_is_the_users_alone_with_its_owner_marker_and_goes_with_its_guard() {
        use std::os::unix::fs::PermissionsExt as _;
        let parent = tempfile::tempdir().unwrap();
        let folder = folder_in("trial", parent.path()).unwrap();
        let path = folder.path().to_path_buf();
        assert!(
            path.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("clawtest-trial-")
        );
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        assert_eq!(std::fs::read_to_string(path.join(MARKER)).unwrap(), owner());
        drop(folder);
        assert!(!path.exists());
    }
}
