//! The worker containers' folders (see `worker`): a worker's folder is lent to one trial at a
//! time ([`Pool::lend`]: the trial's `TrialFolder`), its container taken for each run of the
//! trial's harness and put back once reset ([`Pool::take`], [`Pool::put_back`]), and the
//! folder emptied when the trial gives it back ([`empty_worker_folder`]: every file the
//! trial left, no link followed; the mounted folders' mode, times and `user.` attributes put
//! back). A folder that cannot be emptied goes, with its container; once every trial has
//! started ([`Pool::close`]) a worker given back goes too, and a run's end removes the idle
//! workers and waits for those going ([`Pool::settle`]).

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use tokio::io::BufReader;
use tokio::net::UnixStream;

use super::container::ContainerGuard;
use crate::sandbox::TrialFolder;

/// The parts of a worker's folder its container mounts, which stay (a mount point removed on
/// the host would be unmounted in the container): emptied between trials.
const MOUNTED: [&str; 5] = [
    "clawtest",
    "clawtest/sockets",
    "sockets",
    "workspace",
    "home",
];

/// The run's worker containers and their folders.
#[derive(Default)]
pub(super) struct Pool {
    /// Workers no trial has: emptied, their container (if started) reset.
    idle: Mutex<Vec<Worker>>,
    /// Workers lent to a trial, by their folder's path.
    lent: Mutex<HashMap<PathBuf, Worker>>,
    /// Numbers the run's worker containers by.
    pub(super) started: AtomicU32,
    /// Set when a worker's shim would not promise a reset: later trials get containers of
    /// their own.
    refused: Mutex<Option<String>>,
    /// Set once every trial has started ([`Pool::close`]): a worker given back is removed
    /// then, not kept for a trial that will not come.
    closed: AtomicBool,
    /// The removals of workers given back after [`Pool::close`], awaited by
    /// [`Pool::settle`].
    removing: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

/// One worker: its folder on the host, and its container once started.
struct Worker {
    folder: tempfile::TempDir,
    /// The modes of the [`MOUNTED`] folders as made, put back between trials.
    modes: Vec<u32>,
    live: Option<Live>,
}

/// A worker's running container and its shim's connection, reset and ready for a trial.
pub(super) struct Live {
    pub(super) guard: ContainerGuard,
    pub(super) shim: BufReader<UnixStream>,
    /// The one-file cap (`fsize`) the container was made with.
    pub(super) disk_cap: u64,
}

/// A lent folder's worker, taken for a run of its harness: the container if it has one.
pub(super) struct Slot {
    pub(super) live: Option<Live>,
}

/// Gives the folder back to the pool when the trial drops it.
struct Lease {
    pool: Arc<Pool>,
    path: PathBuf,
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.pool.give_back(&self.path);
    }
}

impl Pool {
    /// A worker's folder for a trial: an idle worker's, else a new one (its container is made
    /// when the trial's harness first runs). Fresh folders once workers were refused.
    pub(super) fn lend(pool: &Arc<Pool>) -> std::io::Result<TrialFolder> {
        if held(&pool.refused).is_some() {
            return TrialFolder::fresh();
        }
        let idle = held(&pool.idle).pop();
        let worker = match idle {
            Some(worker) => worker,
            None => Worker::new()?,
        };
        let path = worker.folder.path().to_path_buf();
        held(&pool.lent).insert(path.clone(), worker);
        let lease = Lease {
            pool: Arc::clone(pool),
            path: path.clone(),
        };
        Ok(TrialFolder::lent(
            path.clone(),
            Some(path.join("sockets")),
            Box::new(lease),
        ))
    }

    /// The worker of lent folder `path`, taken for a run of its harness; `None` for a folder
    /// the pool did not lend.
    pub(super) fn take(&self, path: &Path) -> Option<Slot> {
        let mut lent = held(&self.lent);
        let worker = lent.get_mut(path)?;
        Some(Slot {
            live: worker.live.take(),
        })
    }

    /// The worker's container back, reset, after a run in lent folder `path`.
    pub(super) fn put_back(&self, path: &Path, slot: Slot) {
        if let Some(worker) = held(&self.lent).get_mut(path) {
            worker.live = slot.live;
        }
    }

    /// The trial has ended: its folder emptied, the worker idle again. A folder that cannot
    /// be emptied goes, with its container.
    fn give_back(&self, path: &Path) {
        let Some(worker) = held(&self.lent).remove(path) else {
            return;
        };
        if empty_worker_folder(worker.folder.path(), &worker.modes).is_ok() {
            if self.closed.load(Ordering::Acquire)
                && let Ok(runtime) = tokio::runtime::Handle::try_current()
            {
                held(&self.removing).push(runtime.spawn(worker.remove()));
            } else {
                held(&self.idle).push(worker);
            }
        }
        // Otherwise dropped: its container removed (`ContainerGuard`), its folder with it.
    }

    /// Every trial has started: the workers idle now stay for the trials that have started
    /// but not yet taken a folder, and each worker given back from now on is removed at once.
    pub(super) fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    /// Removes the idle workers' containers and folders, and waits until they and those
    /// removed since [`Pool::close`] are gone.
    pub(super) async fn settle(&self) {
        let idle: Vec<Worker> = std::mem::take(&mut *held(&self.idle));
        let removing: Vec<_> = std::mem::take(&mut *held(&self.removing));
        let removals = idle.into_iter().map(Worker::remove);
        futures_util::future::join(
            futures_util::future::join_all(removals),
            futures_util::future::join_all(removing),
        )
        .await;
    }

    pub(super) fn refuse(&self, why: String) {
        held(&self.refused).get_or_insert(why);
    }
}

/// The pool's lock, even after a panic elsewhere: every change to what it guards is one
/// statement, never left half done.
fn held<T>(lock: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    lock.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Worker {
    /// Removes the worker's container, waiting until it is gone, then its folder.
    async fn remove(self) {
        if let Some(live) = self.live {
            live.guard.remove().await;
        }
    }

    fn new() -> std::io::Result<Worker> {
        let folder = crate::sandbox::scratch::folder("trial")?;
        let mut modes = Vec::with_capacity(MOUNTED.len());
        for part in MOUNTED {
            let path = folder.path().join(part);
            std::fs::create_dir_all(&path)?;
            modes.push(std::fs::metadata(&path)?.permissions().mode());
        }
        Ok(Worker {
            folder,
            modes,
            live: None,
        })
    }
}

/// Empties a worker's folder for the next trial: everything in the [`MOUNTED`] folders goes
/// (no link followed; a folder a harness locked is opened first), each gets its mode back, its
/// times set to now, and its `user.` extended attributes removed; anything else a trial made in
/// the folder (a kept session's) goes too. Only run when nothing runs in the container.
pub(super) fn empty_worker_folder(root: &Path, modes: &[u32]) -> std::io::Result<()> {
    for entry in std::fs::read_dir(root)? {
        let entry = entry?;
        let name = entry.file_name();
        let kept = MOUNTED.contains(&name.to_string_lossy().as_ref())
            || name == crate::sandbox::scratch::MARKER;
        if !kept {
            remove_tree(&entry.path())?;
        }
    }
    for (part, mode) in MOUNTED.iter().zip(modes) {
        let path = root.join(part);
        for entry in std::fs::read_dir(&path)? {
            let entry = entry?;
            // `clawtest/sockets` is a mount point of its own.
            if *part == "clawtest" && entry.file_name() == "sockets" {
                continue;
            }
            remove_tree(&entry.path())?;
        }
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(*mode))?;
        remove_user_attributes(&path)?;
        let now = SystemTime::now();
        std::fs::File::open(&path)?.set_times(
            std::fs::FileTimes::new()
                .set_accessed(now)
                .set_modified(now),
        )?;
    }
    Ok(())
}

/// Removes `path` and everything under it, never following a link.
fn remove_tree(path: &Path) -> std::io::Result<()> {
    let metadata = std::fs::symlink_metadata(path)?;
    if !metadata.is_dir() {
        return std::fs::remove_file(path);
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))?;
    for entry in std::fs::read_dir(path)? {
        remove_tree(&entry?.path())?;
    }
    std::fs::remove_dir(path)
}

/// Removes the `user.` extended attributes of `path` (the ones its owner may set).
fn remove_user_attributes(path: &Path) -> std::io::Result<()> {
    let mut names = vec![0u8; 64 * 1024];
    let length = match rustix::fs::llistxattr(path, &mut names[..]) {
        Ok(length) => length,
        // A file system without extended attributes holds none.
        Err(rustix::io::Errno::OPNOTSUPP) => return Ok(()),
        Err(error) => return Err(error.into()),
    };
    for name in names[..length.min(names.len())]
        .split(|byte| *byte == 0)
        .filter(|name| name.starts_with(b"user."))
    {
        rustix::fs::lremovexattr(path, name)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Before a worker's folder is lent again, nothing of the trial before is left in it.
    #[test]
    fn an_emptied_worker_folder_holds_nothing_of_the_trial_before() {
        let worker = Worker::new().unwrap();
        let root = worker.folder.path();
        let made: Vec<(String, u32)> = MOUNTED
            .iter()
            .map(|part| {
                let mode = std::fs::metadata(root.join(part))
                    .unwrap()
                    .permissions()
                    .mode();
                (part.to_string(), mode)
            })
            .collect();
        // A trial's leftovers: files, a locked folder, a link out, a changed mode, an
        // attribute, a kept session's folder.
        std::fs::write(root.join("workspace/answer.txt"), "42").unwrap();
        std::fs::create_dir_all(root.join("home/.cache/deep")).unwrap();
        std::fs::write(root.join("home/.cache/deep/note"), "remember").unwrap();
        std::fs::set_permissions(
            root.join("home/.cache"),
            std::fs::Permissions::from_mode(0o000),
        )
        .unwrap();
        std::os::unix::fs::symlink("/etc", root.join("workspace/out")).unwrap();
        std::fs::set_permissions(
            root.join("workspace"),
            std::fs::Permissions::from_mode(0o711),
        )
        .unwrap();
        let _ = rustix::fs::lsetxattr(
            root.join("home"),
            "user.left",
            b"behind",
            rustix::fs::XattrFlags::empty(),
        );
        std::fs::write(root.join("clawtest/prompt.md"), "the prompt").unwrap();
        std::fs::write(root.join("sockets/stdout.sock"), "").unwrap();
        std::fs::create_dir_all(root.join("session")).unwrap();
        empty_worker_folder(root, &worker.modes).unwrap();
        for (part, mode) in &made {
            let path = root.join(part);
            let left: Vec<_> = std::fs::read_dir(&path)
                .unwrap()
                .map(|entry| entry.unwrap().file_name())
                .filter(|name| !(part == "clawtest" && name == "sockets"))
                .collect();
            assert!(left.is_empty(), "{part}: {left:?}");
            assert_eq!(
                std::fs::metadata(&path).unwrap().permissions().mode(),
                *mode
            );
        }
        assert!(!root.join("session").exists());
        assert!(root.join(crate::sandbox::scratch::MARKER).exists());
        assert!(
            std::fs::metadata("/etc").is_ok(),
            "the link was not followed"
        );
        let mut names = vec![0u8; 1024];
        let length = rustix::fs::llistxattr(root.join("home"), &mut names[..]).unwrap_or(0);
        assert!(
            !names[..length]
                .windows(9)
                .any(|window| window == b"user.left"),
            "the attribute stayed"
        );
    }
}
