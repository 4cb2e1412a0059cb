//! Between two trials of a worker container: every process but the shim ended, and what the
//! container itself can write put back as the worker found it, so that a trial sees nothing
//! of the one before.
//!
//! What a harness can write in a container: the host's bind mounts (the workspace, the home
//! folder: the host empties them, `--host-empties`), the image's root file system (the host
//! checks it: the engine lists its changes), and the container's own writable mounts, which
//! are this module's: the `/tmp` tmpfs, `/dev` and `/dev/shm`, `/dev/mqueue`, an image's
//! `VOLUME`s, the files the engine mounts (`/etc/hosts`, …). Each is recorded when the worker
//! starts ([`Baseline::take`]); at a reset, whatever was made since is removed, and a recorded
//! entry that was changed (its inode, type, owner or mode; a file's content, by its change
//! time) makes the reset fail: the host removes the container rather than reuse it. System V
//! IPC objects (shared memory, queues, semaphores) outlive processes, so they are removed too.
//!
//! Processes: the shim is PID 1 of the container's PID namespace, so `kill(-1, SIGKILL)`
//! reaches every other process in it (they all run as the container's one user: no
//! capabilities, no new privileges), whatever session or group they made for themselves;
//! orphans are the shim's children, and it reaps them. The reset waits until `/proc` lists
//! the shim alone.

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::{SIGKILL, kill};

unsafe extern "C" {
    fn waitpid(pid: i32, status: *mut i32, options: i32) -> i32;
    fn shmctl(id: i32, command: i32, buffer: *mut u8) -> i32;
    fn msgctl(id: i32, command: i32, buffer: *mut u8) -> i32;
    fn semctl(id: i32, number: i32, command: i32, ...) -> i32;
}

const WNOHANG: i32 = 1;
const IPC_RMID: i32 = 0;
/// How long a reset waits for the killed processes to be gone.
const PROCESSES_GONE: Duration = Duration::from_secs(5);
/// File systems whose writable mounts hold nothing a trial can leave behind (`proc`'s and
/// `sysfs`'s writes are per process or refused; a `devpts` holds only open terminals).
const STATELESS: [&str; 5] = ["proc", "sysfs", "devpts", "cgroup", "cgroup2"];

/// An entry as recorded: what must be the same at a reset.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    kind: Kind,
    inode: u64,
    mode: u32,
    owner: (u32, u32),
    /// A file's change time (content, owner, mode, links); `None` for a folder, whose change
    /// time moves when what was made in it is removed.
    changed: Option<(i64, i64)>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Folder,
    /// Another file system mounted here: its own place, or none of this module's.
    Mount,
    Other,
}

/// One writable mount of the container and what it held when the worker started, by path.
#[derive(Debug)]
struct Place {
    root: PathBuf,
    device: u64,
    entries: BTreeMap<PathBuf, Entry>,
}

/// The container's writable mounts as the worker found them.
#[derive(Debug)]
pub(crate) struct Baseline {
    places: Vec<Place>,
}

impl Baseline {
    /// Records the container's own writable mounts (from `/proc/self/mountinfo`), but for the
    /// root file system and `host_empties`.
    pub(crate) fn take(host_empties: &[String]) -> Result<Baseline, String> {
        let mounts = std::fs::read_to_string("/proc/self/mountinfo")
            .map_err(|error| format!("cannot read /proc/self/mountinfo: {error}"))?;
        let places = writable_mounts(&mounts, host_empties)
            .into_iter()
            .map(|root| Place::record(&root))
            .collect::<Result<Vec<Place>, String>>()?;
        Ok(Baseline { places })
    }
}

/// The mount points of `mountinfo` a trial can write and this module puts back: read-write,
/// not the root, not under `/proc` or `/sys`, not of a [`STATELESS`] file system, not one the
/// host empties.
fn writable_mounts(mountinfo: &str, host_empties: &[String]) -> Vec<PathBuf> {
    let mut points = Vec::new();
    for line in mountinfo.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let Some(separator) = fields.iter().position(|field| *field == "-") else {
            continue;
        };
        let (Some(point), Some(options), Some(kind)) =
            (fields.get(4), fields.get(5), fields.get(separator + 1))
        else {
            continue;
        };
        let point = unescape(point);
        let writable = options.split(',').any(|option| option == "rw");
        let system = point == "/"
            || ["/proc", "/sys"]
                .iter()
                .any(|system| Path::new(&point).starts_with(system));
        let emptied = host_empties
            .iter()
            .any(|folder| Path::new(&point).starts_with(folder));
        if writable && !system && !emptied && !STATELESS.contains(kind) {
            points.push(PathBuf::from(point));
        }
    }
    points.sort();
    points.dedup();
    points
}

/// A mountinfo path: spaces, tabs, newlines and backslashes are octal escapes there.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let code = bytes
            .get(at + 1..at + 4)
            .filter(|_| bytes[at] == b'\\')
            .and_then(|digits| std::str::from_utf8(digits).ok())
            .and_then(|digits| u8::from_str_radix(digits, 8).ok());
        match code {
            Some(byte) => {
                out.push(byte);
                at += 4;
            }
            None => {
                out.push(bytes[at]);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Place {
    fn record(root: &Path) -> Result<Place, String> {
        let metadata = std::fs::symlink_metadata(root)
            .map_err(|error| format!("cannot read {}: {error}", root.display()))?;
        let mut place = Place {
            root: root.to_path_buf(),
            device: metadata.dev(),
            entries: BTreeMap::new(),
        };
        place.walk(root, &metadata)?;
        Ok(place)
    }

    /// Records `path` and, for a folder of this file system, what it holds.
    fn walk(&mut self, path: &Path, metadata: &std::fs::Metadata) -> Result<(), String> {
        let entry = self.entry(metadata);
        self.entries.insert(path.to_path_buf(), entry.clone());
        if entry.kind != Kind::Folder {
            return Ok(());
        }
        for child in read_folder(path)? {
            let metadata = std::fs::symlink_metadata(&child)
                .map_err(|error| format!("cannot read {}: {error}", child.display()))?;
            self.walk(&child, &metadata)?;
        }
        Ok(())
    }

    fn entry(&self, metadata: &std::fs::Metadata) -> Entry {
        let kind = if metadata.dev() != self.device {
            Kind::Mount
        } else if metadata.file_type().is_dir() {
            Kind::Folder
        } else {
            Kind::Other
        };
        Entry {
            kind,
            inode: metadata.ino(),
            mode: metadata.mode(),
            owner: (metadata.uid(), metadata.gid()),
            changed: (kind == Kind::Other).then(|| (metadata.ctime(), metadata.ctime_nsec())),
        }
    }

    /// Removes what was made under `path` since the baseline; fails on a recorded entry that
    /// changed.
    fn put_back(&self, path: &Path) -> Result<(), String> {
        let metadata =
            std::fs::symlink_metadata(path).map_err(|_| format!("{} is gone", path.display()))?;
        let now = self.entry(&metadata);
        let Some(recorded) = self.entries.get(path) else {
            return remove(path, &metadata);
        };
        if recorded.kind == Kind::Folder
            && now.kind == Kind::Folder
            && recorded.inode == now.inode
            && recorded.owner == now.owner
            && recorded.mode != now.mode
        {
            // Its owner may give a folder its mode back.
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(recorded.mode))
                .map_err(|error| format!("{} changed mode: {error}", path.display()))?;
        } else if now != *recorded {
            return Err(format!("{} was changed", path.display()));
        }
        if now.kind != Kind::Folder {
            return Ok(());
        }
        for child in read_folder(path)? {
            self.put_back(&child)?;
        }
        // What the baseline holds must still be there.
        match self
            .entries
            .keys()
            .filter(|recorded| recorded.parent() == Some(path))
            .find(|recorded| std::fs::symlink_metadata(recorded).is_err())
        {
            Some(gone) => Err(format!("{} was removed", gone.display())),
            None => Ok(()),
        }
    }
}

/// The paths of a folder's entries.
fn read_folder(path: &Path) -> Result<Vec<PathBuf>, String> {
    std::fs::read_dir(path)
        .and_then(|entries| {
            entries
                .map(|entry| entry.map(|entry| entry.path()))
                .collect()
        })
        .map_err(|error| format!("cannot list {}: {error}", path.display()))
}

/// Removes `path` and everything under it, never following a link; a folder its owner made
/// unreadable is opened up first (everything here is the container's one user's).
fn remove(path: &Path, metadata: &std::fs::Metadata) -> Result<(), String> {
    let failed = |error: std::io::Error| format!("cannot remove {}: {error}", path.display());
    if !metadata.file_type().is_dir() {
        return std::fs::remove_file(path).map_err(failed);
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700)).map_err(failed)?;
    for child in read_folder(path)? {
        let metadata = std::fs::symlink_metadata(&child).map_err(failed)?;
        remove(&child, &metadata)?;
    }
    std::fs::remove_dir(path).map_err(failed)
}

/// Ends every process but the shim, then puts back the container's writable mounts and
/// removes its System V IPC objects. An error says what could not be put back.
pub(crate) fn reset(baseline: &Baseline) -> Result<(), String> {
    end_every_process()?;
    remove_ipc_objects()?;
    for place in &baseline.places {
        place.put_back(&place.root)?;
    }
    Ok(())
}

/// Kills every process of the container but the shim, reaps its children, and waits until
/// `/proc` lists no other (an exec's process is reaped by the engine, outside).
pub(crate) fn end_every_process() -> Result<(), String> {
    let started = Instant::now();
    let mut pause = Duration::from_micros(200);
    loop {
        // SAFETY: sends a signal; -1 is every process the shim may signal but itself and PID 1.
        unsafe {
            kill(-1, SIGKILL);
        }
        reap();
        let others = other_processes();
        if others.is_empty() {
            return Ok(());
        }
        if started.elapsed() > PROCESSES_GONE {
            return Err(format!("processes still running: {others:?}"));
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// Reaps every child that has ended.
fn reap() {
    let mut status = 0;
    // SAFETY: waits for any child without blocking; status is a valid pointer.
    while unsafe { waitpid(-1, &mut status, WNOHANG) } > 0 {}
}

/// The processes `/proc` lists besides the shim.
fn other_processes() -> Vec<u32> {
    let own = std::process::id();
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
                .filter(|pid| *pid != own)
                .collect()
        })
        .unwrap_or_default()
}

/// Removes every System V shared memory segment, message queue and semaphore set of the
/// container's IPC namespace (all its user's: nothing else runs there).
fn remove_ipc_objects() -> Result<(), String> {
    for (kind, remove) in [
        ("shm", remove_shared_memory as fn(i32) -> i32),
        ("msg", remove_queue),
        ("sem", remove_semaphores),
    ] {
        let listed = format!("/proc/sysvipc/{kind}");
        let Ok(text) = std::fs::read_to_string(&listed) else {
            continue;
        };
        for id in ipc_ids(&text) {
            if remove(id) != 0 {
                return Err(format!(
                    "cannot remove System V {kind} {id}: {}",
                    std::io::Error::last_os_error()
                ));
            }
        }
    }
    Ok(())
}

fn remove_shared_memory(id: i32) -> i32 {
    // SAFETY: IPC_RMID takes no buffer.
    unsafe { shmctl(id, IPC_RMID, std::ptr::null_mut()) }
}

fn remove_queue(id: i32) -> i32 {
    // SAFETY: IPC_RMID takes no buffer.
    unsafe { msgctl(id, IPC_RMID, std::ptr::null_mut()) }
}

fn remove_semaphores(id: i32) -> i32 {
    // SAFETY: IPC_RMID takes no further argument.
    unsafe { semctl(id, 0, IPC_RMID) }
}

/// The ids listed in a `/proc/sysvipc/*` file: the second column, after the heading.
fn ipc_ids(text: &str) -> Vec<i32> {
    text.lines()
        .skip(1)
        .filter_map(|line| line.split_whitespace().nth(1)?.parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
800 700 0:50 / / rw,relatime master:1 - overlay overlay rw,lowerdir=/a
801 800 0:52 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
802 800 0:53 / /dev rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755
803 802 0:54 / /dev/pts rw,nosuid,noexec,relatime - devpts devpts rw,gid=5
804 800 0:55 / /sys ro,nosuid,nodev,noexec,relatime - sysfs sysfs ro
805 802 0:51 / /dev/mqueue rw,nosuid,nodev,noexec,relatime - mqueue mqueue rw
806 800 8:1 /docker/containers/x/hosts /etc/hosts rw,relatime - ext4 /dev/sda1 rw
807 800 8:1 /tmp/trial/workspace /workspace rw,relatime - ext4 /dev/sda1 rw
808 800 8:1 /tmp/trial/clawtest /clawtest ro,relatime - ext4 /dev/sda1 rw
809 802 0:56 / /dev/shm rw,nosuid,nodev,noexec,relatime - tmpfs shm rw,size=65536k
810 800 0:57 / /tmp rw,nosuid,nodev - tmpfs tmpfs rw,size=262144k
811 801 0:53 /null /proc/kcore rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755
812 800 8:1 /tmp/trial/home /home/clawtest rw,relatime - ext4 /dev/sda1 rw
813 800 8:1 /var/lib/docker/volumes/v/_data /data\\040set rw,relatime - ext4 /dev/sda1 rw
";

    #[test]
    fn the_places_are_the_writable_mounts_but_the_root_the_system_and_the_host_s() {
        let places = writable_mounts(
            MOUNTINFO,
            &["/workspace".to_string(), "/home/clawtest".to_string()],
        );
        let expected: Vec<PathBuf> = [
            "/data set",
            "/dev",
            "/dev/mqueue",
            "/dev/shm",
            "/etc/hosts",
            "/tmp",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(places, expected);
    }

    #[test]
    fn ipc_ids_are_the_second_column() {
        let text = "       key      shmid perms size\n         0      32768   600 4096\n     1234      32769   644 8\n";
        assert_eq!(ipc_ids(text), vec![32768, 32769]);
    }

    /// A scratch folder of the test's own.
    fn folder(name: &str) -> PathBuf {
        let path =
            std::env::temp_dir().join(format!("clawtest-shim-reset-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(path.join("kept")).unwrap();
        std::fs::write(path.join("kept/file"), "as found").unwrap();
        path
    }

    #[test]
    fn what_a_trial_made_is_removed_and_what_was_there_is_kept() {
        let root = folder("made");
        let place = Place::record(&root).unwrap();
        // A trial leaves files, a locked folder, a link out, and changes a folder's mode.
        std::fs::write(root.join("left.txt"), "secret").unwrap();
        std::fs::create_dir_all(root.join("deep/er")).unwrap();
        std::fs::write(root.join("deep/er/file"), "x").unwrap();
        std::fs::set_permissions(root.join("deep"), std::fs::Permissions::from_mode(0o000))
            .unwrap();
        std::os::unix::fs::symlink("/etc", root.join("kept/link")).unwrap();
        std::fs::set_permissions(root.join("kept"), std::fs::Permissions::from_mode(0o711))
            .unwrap();
        place.put_back(&root).unwrap();
        let mut left: Vec<String> = read_folder(&root)
            .unwrap()
            .into_iter()
            .chain(read_folder(&root.join("kept")).unwrap())
            .map(|path| path.strip_prefix(&root).unwrap().display().to_string())
            .collect();
        left.sort();
        assert_eq!(left, ["kept", "kept/file"]);
        assert_eq!(
            std::fs::read_to_string(root.join("kept/file")).unwrap(),
            "as found"
        );
        assert_eq!(
            std::fs::metadata(root.join("kept")).unwrap().mode(),
            place.entries[&root.join("kept")].mode
        );
        assert!(
            std::fs::metadata("/etc").is_ok(),
            "the link was not followed"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_recorded_file_that_changed_or_went_fails_the_reset() {
        let root = folder("changed");
        let place = Place::record(&root).unwrap();
        std::fs::write(root.join("kept/file"), "rewritten").unwrap();
        let error = place.put_back(&root).unwrap_err();
        assert!(error.contains("kept/file was changed"), "{error}");
        std::fs::remove_file(root.join("kept/file")).unwrap();
        let error = place.put_back(&root).unwrap_err();
        assert!(error.contains("kept/file was removed"), "{error}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
