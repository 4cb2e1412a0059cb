//! What holds one trial's processes on the process backend, so that all of them end with the
//! trial, `setsid` or not: a cgroup v2 of the trial's own where the machine lets clawtest make
//! one (below its own cgroup, `clawtest-<pid>-<n>`; every descendant of the harness is born
//! in it, so membership needs no scan, and `cgroup.kill` ends them all at once), else a mark
//! in their environment (`CLAWTEST_TRIAL_MARK`, a random value) and a scan of `/proc` for it,
//! which reads the environment of every process of the machine, so it costs more the more
//! runs beside clawtest.
//!
//! A child is born in the trial's group (`clone3` with `CLONE_INTO_CGROUP`, `spawn`), or, when
//! forked, joins it between fork and exec (it writes `0` to the group's `cgroup.procs`, opened
//! before the fork): either way nothing it starts can be born outside it. Whether the machine
//! allows it is found once per process, by a probe child that joins a group and exits before
//! exec; groups a crashed clawtest left behind (their process gone) are killed and removed
//! then too. A group whose processes all ended by themselves is never killed, and the next
//! trial of the same backend is born in it ([`GroupPool`]); a killed group is removed.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rustix::fs::{Mode, OFlags};

use super::spawn::{Child, GroupFds, Launcher, Spawn};

/// The variable holding a trial's mark in the environment of everything it starts (the
/// fallback).
const MARK_VARIABLE: &str = "CLAWTEST_TRIAL_MARK";

/// The prefix of the groups clawtest makes: `clawtest-<pid>-<n>`.
const GROUP_PREFIX: &str = "clawtest-";

/// How long [`Containment::release`] waits for killed processes to leave the group before
/// it leaves the empty group behind (removed by the next clawtest's start-up).
const RELEASE_WAIT: Duration = Duration::from_secs(2);

/// Which way a trial's processes are held.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Mechanism {
    /// A cgroup v2 where the machine allows it, else the mark.
    #[default]
    Cgroup,
    /// The mark and the scan of `/proc`, whatever the machine allows (for tests of the
    /// fallback).
    #[cfg_attr(
        not(test),
        allow(dead_code, reason = "only the fallback's tests ask for it")
    )]
    Mark,
}

/// One trial's hold on its processes: [`start`](Self::start) each child through it,
/// [`kill`](Self::kill) to end everything started so far, [`release`](Self::release) at the
/// end (dropping it kills too).
#[derive(Debug)]
pub(crate) struct Containment {
    hold: Hold,
    /// How its children are made.
    launcher: Launcher,
    /// Where its groups go back to when they were never killed.
    pool: Option<Arc<GroupPool>>,
}

/// Empty groups kept for the next trials, removed with the pool. A trial whose processes all
/// ended by themselves leaves its group empty and never killed, and such a group can be born
/// into again; a new group costs a `mkdir` and an `rmdir` of the kernel's cgroup code, about
/// a twentieth of clawtest's own CPU in a replayed trial.
#[derive(Debug, Default)]
pub(crate) struct GroupPool {
    groups: std::sync::Mutex<Vec<Group>>,
}

/// How many empty groups a pool keeps: more than the trials a run runs at once is waste.
const POOL_LIMIT: usize = 64;

impl GroupPool {
    fn take(&self) -> Option<Group> {
        self.groups.lock().ok()?.pop()
    }

    /// Keeps `group` (empty, never killed) for a later trial, or removes it.
    fn give(&self, group: Group) {
        if let Ok(mut groups) = self.groups.lock()
            && groups.len() < POOL_LIMIT
        {
            groups.push(group);
            return;
        }
        group.remove();
    }
}

impl Drop for GroupPool {
    fn drop(&mut self) {
        if let Ok(groups) = self.groups.get_mut() {
            // Empty and never killed: each goes by an `rmdir`.
            for group in groups.drain(..) {
                group.remove();
            }
        }
    }
}

#[derive(Debug)]
enum Hold {
    Groups(std::sync::Mutex<Groups>),
    Mark(String),
    Released,
}

/// A trial's cgroups: the one its next child is born in (the last), and those before it. A
/// group that was killed is not cloned into again: Linux (6.1x) kills a child cloned into a
/// cgroup whose `cgroup.kill` was written before (its kill count is not its parent's), so the
/// next child after a kill gets a new group. A killed group is removed with the trial; one
/// never killed and empty goes back to the pool.
#[derive(Debug)]
struct Groups {
    held: Vec<Group>,
}

#[derive(Debug)]
struct Group {
    directory: PathBuf,
    /// The group's folder, opened: a cloned child is born in it (`CLONE_INTO_CGROUP`).
    opened: OwnedFd,
    /// The group's `cgroup.procs`, opened for writing: a forked child writes `0` to it to join.
    procs: OwnedFd,
    /// Its `cgroup.kill` was written: nothing is cloned into it again.
    killed: bool,
}

impl Containment {
    /// A new hold by `mechanism` (a cgroup falls back to the mark where the machine does not
    /// allow one).
    pub(crate) fn new(mechanism: Mechanism) -> Containment {
        Containment::drawing_on(mechanism, None)
    }

    /// [`Containment::new`], its group taken from `pool` when one is there and given back
    /// at [`release`](Self::release) when it was never killed.
    pub(crate) fn drawing_on(mechanism: Mechanism, pool: Option<Arc<GroupPool>>) -> Containment {
        let group = match mechanism {
            Mechanism::Cgroup => cgroup_base().and_then(|base| {
                pool.as_ref()
                    .and_then(|pool| pool.take())
                    .or_else(|| Group::make(base).ok())
            }),
            Mechanism::Mark => None,
        };
        Containment {
            hold: match group {
                Some(group) => Hold::Groups(std::sync::Mutex::new(Groups { held: vec![group] })),
                None => Hold::Mark(crate::http::random_token()),
            },
            launcher: Launcher::default(),
            pool,
        }
    }

    /// The same, its children made by `launcher`.
    pub(crate) fn made_by(mut self, launcher: Launcher) -> Containment {
        self.launcher = launcher;
        self
    }

    /// Whether the trial's processes are in a cgroup of its own (not the mark).
    #[cfg(test)]
    pub(crate) fn is_cgroup(&self) -> bool {
        matches!(self.hold, Hold::Groups(_))
    }

    /// The folders of the trial's cgroups so far, when the hold is one.
    #[cfg(test)]
    pub(crate) fn group_directories(&self) -> Vec<PathBuf> {
        match &self.hold {
            Hold::Groups(groups) => groups
                .lock()
                .map(|groups| {
                    groups
                        .held
                        .iter()
                        .map(|group| group.directory.clone())
                        .collect()
                })
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    /// Starts `spawn`'s child held, and all it starts: born in the trial's group, or carrying
    /// the mark.
    pub(crate) fn start(&self, spawn: &mut Spawn) -> std::io::Result<Child> {
        match &self.hold {
            Hold::Groups(groups) => {
                let mut groups = groups
                    .lock()
                    .map_err(|_| std::io::Error::other("a trial's cgroups were poisoned"))?;
                let mut launcher = self.launcher;
                if groups.held.last().is_some_and(|group| group.killed) {
                    match cgroup_base().map(Group::make) {
                        Some(Ok(group)) => groups.held.push(group),
                        // No new group: a forked child joins the killed one by a write, which
                        // its kill count does not stop.
                        _ => launcher = Launcher::Fork,
                    }
                }
                let Some(group) = groups.held.last() else {
                    return spawn.start(launcher, None);
                };
                let fds = GroupFds {
                    directory: group.opened.as_fd(),
                    procs: group.procs.as_fd(),
                };
                spawn.start(launcher, Some(fds))
            }
            Hold::Mark(mark) => {
                spawn.env(MARK_VARIABLE, mark);
                spawn.start(self.launcher, None)
            }
            Hold::Released => spawn.start(self.launcher, None),
        }
    }

    /// Kills every process held so far (what the trial started, escaped or not). A group
    /// with no process left is not killed: it stays one to be born into.
    pub(crate) fn kill(&self) {
        match &self.hold {
            Hold::Groups(groups) => {
                if let Ok(mut groups) = groups.lock() {
                    for group in &mut groups.held {
                        if group.populated() {
                            group.kill();
                        }
                    }
                }
            }
            Hold::Mark(mark) => kill_marked(mark),
            Hold::Released => {}
        }
    }

    /// Kills what is left and removes the groups, once their processes have gone (waiting for
    /// them at most [`RELEASE_WAIT`]); a group never killed goes back to the pool instead.
    pub(crate) async fn release(mut self) {
        self.kill();
        if let Hold::Groups(groups) = std::mem::replace(&mut self.hold, Hold::Released) {
            let mut held = groups
                .into_inner()
                .map(|groups| groups.held)
                .unwrap_or_default();
            if let Some(pool) = &self.pool {
                let reusable;
                (reusable, held) = held.into_iter().partition(|group| !group.killed);
                reusable.into_iter().for_each(|group| pool.give(group));
            }
            let mut waited = Duration::ZERO;
            let mut pause = Duration::from_millis(1);
            loop {
                held.retain(|group| !group.remove());
                if held.is_empty() || waited >= RELEASE_WAIT {
                    break;
                }
                tokio::time::sleep(pause).await;
                waited += pause;
                pause = (pause * 2).min(Duration::from_millis(100));
                held.iter_mut().for_each(Group::kill);
            }
        }
    }
}

impl Drop for Containment {
    fn drop(&mut self) {
        self.kill();
        if let Hold::Groups(groups) = &self.hold
            && let Ok(groups) = groups.lock()
        {
            for group in &groups.held {
                group.remove();
            }
        }
    }
}

impl Group {
    /// Makes a new group below `base` and opens its `cgroup.procs`.
    fn make(base: &Path) -> std::io::Result<Group> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "{GROUP_PREFIX}{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let directory = base.join(name);
        std::fs::create_dir(&directory)?;
        let opened = rustix::fs::open(
            &directory,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .and_then(|opened| {
            let procs = rustix::fs::openat(
                &opened,
                "cgroup.procs",
                OFlags::WRONLY | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            Ok((opened, procs))
        });
        match opened {
            Ok((opened, procs)) => Ok(Group {
                directory,
                opened,
                procs,
                killed: false,
            }),
            Err(error) => {
                let _ = std::fs::remove_dir(&directory);
                Err(error.into())
            }
        }
    }

    fn kill(&mut self) {
        kill_group_folder(&self.directory);
        self.killed = true;
    }

    /// Whether a process is in the group or below it (`cgroup.events`); one that cannot be
    /// read counts as populated, so that it is killed.
    fn populated(&self) -> bool {
        let Ok(events) = rustix::fs::openat(
            &self.opened,
            "cgroup.events",
            OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        ) else {
            return true;
        };
        let mut buffer = [0u8; 128];
        match rustix::io::read(&events, &mut buffer) {
            Ok(read) => !buffer[..read]
                .split(|byte| *byte == b'\n')
                .any(|line| line == b"populated 0"),
            Err(_) => true,
        }
    }

    /// Removes the group; false while processes are still in it.
    fn remove(&self) -> bool {
        match std::fs::remove_dir(&self.directory) {
            Ok(()) => true,
            Err(error) => error.kind() == std::io::ErrorKind::NotFound,
        }
    }
}

/// Writes `1` to a group's `cgroup.kill`: SIGKILL to every process in it and below.
fn kill_group_folder(directory: &Path) {
    if let Ok(kill) = rustix::fs::open(
        directory.join("cgroup.kill"),
        OFlags::WRONLY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        let _ = rustix::io::write(&kill, b"1");
    }
}

/// The cgroup v2 folder trial groups are made in (clawtest's own cgroup), when the machine
/// lets clawtest make them and move its children there; found once per process.
fn cgroup_base() -> Option<&'static Path> {
    static BASE: OnceLock<Option<PathBuf>> = OnceLock::new();
    BASE.get_or_init(|| {
        let base = own_cgroup()?;
        remove_abandoned(&base);
        probe(&base).then_some(base)
    })
    .as_deref()
}

/// This process's cgroup v2 folder: the cgroup2 mount (`/proc/self/mountinfo`) joined with
/// the `0::` line of `/proc/self/cgroup`.
fn own_cgroup() -> Option<PathBuf> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let own = cgroups.lines().find_map(|line| line.strip_prefix("0::"))?;
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mount = mounts.lines().find_map(|line| {
        let (fields, filesystem) = line.split_once(" - ")?;
        // The mount point is the fifth field; in the cgroup namespace the root is `/`.
        (filesystem.split_whitespace().next() == Some("cgroup2"))
            .then(|| fields.split_whitespace().nth(4))
            .flatten()
    })?;
    let base = Path::new(mount).join(own.trim_start_matches('/'));
    base.is_dir().then_some(base)
}

/// Whether a child can join a group made below `base` and the group can be killed: a probe
/// child joins one and fails on purpose before exec.
fn probe(base: &Path) -> bool {
    use std::os::unix::process::CommandExt;
    let Ok(mut group) = Group::make(base) else {
        return false;
    };
    // `cgroup.kill` came with Linux 5.14; without it nothing ends a group at once.
    if !group.directory.join("cgroup.kill").exists() {
        group.remove();
        return false;
    }
    let procs = group.procs.as_raw_fd();
    let mut command = std::process::Command::new("/");
    // SAFETY: as in `Containment::prepare`: one write on a descriptor kept open by `group`.
    unsafe {
        command.pre_exec(move || {
            rustix::io::write(BorrowedFd::borrow_raw(procs), b"0")?;
            // Joined: stop here, no program is run.
            Err(rustix::io::Errno::CANCELED.into())
        });
    }
    let joined = command.spawn().err().and_then(|error| error.raw_os_error())
        == Some(rustix::io::Errno::CANCELED.raw_os_error());
    group.kill();
    for _ in 0..100 {
        if group.remove() {
            return joined;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    false
}

/// Kills and removes the groups below `base` whose clawtest is gone (it crashed, or was
/// killed before removing them).
fn remove_abandoned(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix(GROUP_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .map(|(pid, _)| pid)
        else {
            continue;
        };
        if Path::new("/proc").join(pid).exists() {
            continue;
        }
        kill_group_folder(&entry.path());
        let _ = std::fs::remove_dir(entry.path());
    }
}

/// Kills every process of this user whose environment carries `mark` (the fallback): what a
/// trial started, escaped from its process group or not.
fn kill_marked(mark: &str) {
    let needle = format!("{MARK_VARIABLE}={mark}\0").into_bytes();
    let Ok(processes) = std::fs::read_dir("/proc") else {
        return;
    };
    let own = std::process::id();
    for entry in processes.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == own {
            continue;
        }
        // Other users' processes cannot be read, and cannot carry the mark.
        let Ok(environment) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if environment
            .windows(needle.len())
            .any(|window| window == needle.as_slice())
            && let Some(pid) = i32::try_from(pid)
                .ok()
                .and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
}

#[cfg(test)]
/// Whether this machine gives trials a cgroup; when not, a cgroup test is skipped, or
/// fails under `CLAWTEST_REQUIRE_CGROUP=1` (set by `.ci/run`).
#[allow(clippy::print_stderr)]
pub(crate) fn cgroups_here() -> bool {
    if Containment::new(Mechanism::Cgroup).is_cgroup() {
        return true;
    }
    assert!(
        std::env::var("CLAWTEST_REQUIRE_CGROUP").as_deref() != Ok("1"),
        "CLAWTEST_REQUIRE_CGROUP=1 but this machine gives clawtest no cgroup v2 of its own"
    );
    eprintln!(
        "\n!!!!!!!! SKIPPED: no cgroup v2 clawtest may use here; set CLAWTEST_REQUIRE_CGROUP=1 to make this a failure !!!!!!!!\n"
    );
    false
}
