//! How the process backend starts a trial's children (its harness, its checks) without
//! copying clawtest. On x86-64 Linux a child is made by `clone3` sharing clawtest's memory
//! until it runs its program (`CLONE_VM | CLONE_VFORK`, what `posix_spawn` does: no page table
//! is copied, so a spawn costs the same whatever clawtest's size), born in the trial's cgroup
//! (`CLONE_INTO_CGROUP`: no instant outside it, and no migration later) when the trial has
//! one, with a pidfd to wait on. Elsewhere, or where the kernel refuses `clone3` (a seccomp
//! filter answering ENOSYS or EPERM, as Docker's default one does), the standard library's
//! fork and exec through tokio ([`Launcher::Fork`]).
//!
//! Either way the child, before its program runs: has default signal dispositions and an
//! empty signal mask, leads a process group of its own, has SIGKILL as its parent-death signal
//! (and gives up if clawtest is already gone), has each file capped (`RLIMIT_FSIZE`) when
//! asked, joins the trial's cgroup (a write to its `cgroup.procs`) when it was not born in it,
//! reads `/dev/null` and writes to two pipes, and runs in its folder with exactly the
//! environment given.

use std::ffi::{CString, OsStr, OsString};
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use tokio::net::unix::pipe::Receiver;

/// How children are made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Launcher {
    /// `clone3` where the machine has it (x86-64 Linux, not refused), else a fork.
    #[default]
    Clone,
    /// The standard library's fork and exec, whatever the machine has (for tests of the
    /// fallback).
    #[cfg_attr(
        not(test),
        allow(dead_code, reason = "only the fallback's tests ask for it")
    )]
    Fork,
}

/// Which way a child was made (for tests: that the path asked for is the one taken).
#[cfg_attr(
    not(test),
    allow(dead_code, reason = "tests ask which way a child was made")
)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Made {
    /// By `clone3`, born in the trial's cgroup.
    ClonedIntoGroup,
    /// By `clone3`, outside any trial cgroup (it joined one by a write, or there was none).
    Cloned,
    /// By a fork.
    Forked,
}

/// The trial's cgroup a child is to be held in: its folder (for `CLONE_INTO_CGROUP`) and its
/// `cgroup.procs` opened for writing (for a child that joins it by a write).
#[derive(Debug, Clone, Copy)]
pub(crate) struct GroupFds<'a> {
    pub(crate) directory: BorrowedFd<'a>,
    pub(crate) procs: BorrowedFd<'a>,
}

/// One child to start: its program and arguments, folder, whole environment, file size cap.
#[derive(Debug)]
pub(crate) struct Spawn {
    program: String,
    arguments: Vec<OsString>,
    directory: PathBuf,
    environment: Vec<(OsString, OsString)>,
    file_size: Option<u64>,
}

impl Spawn {
    /// `program` (a path, or a name looked up in the environment's `PATH`) with `arguments`,
    /// in `directory`, with an empty environment.
    pub(crate) fn new(
        program: &str,
        arguments: impl IntoIterator<Item = impl Into<OsString>>,
        directory: &Path,
    ) -> Spawn {
        Spawn {
            program: program.to_string(),
            arguments: arguments.into_iter().map(Into::into).collect(),
            directory: directory.to_path_buf(),
            environment: Vec::new(),
            file_size: None,
        }
    }

    /// Sets one variable of the child's environment (replacing an earlier value).
    pub(crate) fn env(&mut self, name: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Self {
        let (name, value) = (name.as_ref(), value.as_ref().to_os_string());
        match self.environment.iter_mut().find(|(known, _)| known == name) {
            Some((_, old)) => *old = value,
            None => self.environment.push((name.to_os_string(), value)),
        }
        self
    }

    /// Sets each of `variables`, in order.
    pub(crate) fn envs<N: AsRef<OsStr>, V: AsRef<OsStr>>(
        &mut self,
        variables: impl IntoIterator<Item = (N, V)>,
    ) -> &mut Self {
        for (name, value) in variables {
            self.env(name, value);
        }
        self
    }

    /// The child's environment so far.
    pub(crate) fn environment(&self) -> &[(OsString, OsString)] {
        &self.environment
    }

    /// Caps each file the child (and what it starts) writes at `bytes` (`RLIMIT_FSIZE`, soft
    /// and hard, so it cannot be raised).
    pub(crate) fn cap_file_size(&mut self, bytes: u64) -> &mut Self {
        self.file_size = Some(bytes);
        self
    }

    /// Starts the child, made the way `launcher` says (a `clone3` the machine refuses falls
    /// back to a fork), held in `group` from its start when there is one. An error of kind
    /// `NotFound` means the program was not found.
    pub(crate) fn start(
        &self,
        launcher: Launcher,
        group: Option<GroupFds<'_>>,
    ) -> std::io::Result<Child> {
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        if launcher == Launcher::Clone
            && let Some(started) = cloned::start(self, group)
        {
            return started;
        }
        let _ = launcher;
        self.fork(group)
    }

    /// The fallback: tokio's command, with the same steps before exec in a `pre_exec`.
    fn fork(&self, group: Option<GroupFds<'_>>) -> std::io::Result<Child> {
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args(&self.arguments)
            .current_dir(&self.directory)
            .env_clear()
            .envs(self.environment.iter().map(|(name, value)| (name, value)))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        die_with_parent(&mut command);
        if let Some(cap) = self.file_size {
            // SAFETY: between fork and exec the closure makes one system call (setrlimit),
            // which is async-signal-safe, and allocates nothing.
            unsafe {
                command.pre_exec(move || {
                    use rustix::process::{Resource, Rlimit, setrlimit};
                    let limit = Rlimit {
                        current: Some(cap),
                        maximum: Some(cap),
                    };
                    setrlimit(Resource::Fsize, limit)?;
                    Ok(())
                });
            }
        }
        if let Some(group) = group {
            let procs = group.procs.as_raw_fd();
            // SAFETY: between fork and exec the closure makes one system call (write), which
            // is async-signal-safe, on a descriptor the caller keeps open until the child is
            // started (the trial holds it), and allocates nothing.
            unsafe {
                command.pre_exec(move || {
                    rustix::io::write(BorrowedFd::borrow_raw(procs), b"0")?;
                    Ok(())
                });
            }
        }
        let mut child = command.spawn()?;
        let pid = child.id().unwrap_or_default();
        let stdout = child.stdout.take().map(|stdout| stdout.into_owned_fd());
        let stderr = child.stderr.take().map(|stderr| stderr.into_owned_fd());
        Ok(Child {
            pid,
            stdout: stdout
                .transpose()?
                .map(Receiver::from_owned_fd)
                .transpose()?,
            stderr: stderr
                .transpose()?
                .map(Receiver::from_owned_fd)
                .transpose()?,
            process: Process::Forked(child),
        })
    }
}

/// Has the kernel kill the command when this process dies, however it dies (a second Ctrl-C
/// that exits at once, SIGKILL): its process group is its own, so no terminal signal reaches it.
pub(crate) fn die_with_parent(command: &mut tokio::process::Command) {
    use rustix::process::{Signal, getpid, getppid, set_parent_process_death_signal};
    let parent = getpid();
    // SAFETY: between fork and exec the closure makes only system calls (prctl, getppid),
    // which are async-signal-safe, and allocates nothing (an `Errno` is a number).
    unsafe {
        command.pre_exec(move || {
            let _ = set_parent_process_death_signal(Some(Signal::KILL));
            // The parent died before the death signal was set: it will never be sent. The error
            // makes the child exit (status 1) before exec.
            if getppid() != Some(parent) {
                return Err(rustix::io::Errno::SRCH.into());
            }
            Ok(())
        });
    }
}

/// A started child: its pid (which is also its process group's), its output pipes, and how
/// to wait for it. Dropping it before it was waited for kills it.
#[derive(Debug)]
pub(crate) struct Child {
    pid: u32,
    /// The read end of its standard output, until taken.
    pub(crate) stdout: Option<Receiver>,
    /// The read end of its standard error, until taken.
    pub(crate) stderr: Option<Receiver>,
    process: Process,
}

#[derive(Debug)]
enum Process {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    Cloned(cloned::Cloned),
    Forked(tokio::process::Child),
}

impl Child {
    /// Its process id, also its process group's.
    pub(crate) fn id(&self) -> u32 {
        self.pid
    }

    /// Which way it was made.
    #[cfg(test)]
    pub(crate) fn made(&self) -> Made {
        match &self.process {
            #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
            Process::Cloned(cloned) => cloned.made,
            Process::Forked(_) => Made::Forked,
        }
    }

    /// Waits for it to end (at once when it has).
    pub(crate) async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        match &mut self.process {
            #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
            Process::Cloned(cloned) => cloned.wait().await,
            Process::Forked(child) => child.wait().await,
        }
    }
}

/// Whether children are made by `clone3` here: x86-64 Linux, and the kernel has not refused it.
#[cfg(test)]
pub(crate) fn clones() -> bool {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    return !cloned::refused();
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
    return false;
}

/// The executable `program` names for a child in `directory` with `environment`: as it is
/// when it holds a `/` (a relative one is then found from `directory`, where the child runs),
/// else the first executable file of that name in the environment's `PATH` (the default
/// search path without one), as `execvp` looks.
fn resolve(
    program: &str,
    directory: &Path,
    environment: &[(OsString, OsString)],
) -> std::io::Result<PathBuf> {
    if program.contains('/') {
        return Ok(PathBuf::from(program));
    }
    let path = environment
        .iter()
        .rev()
        .find(|(name, _)| name == "PATH")
        .map_or(OsStr::new("/bin:/usr/bin"), |(_, value)| value.as_os_str());
    for folder in path.as_bytes().split(|byte| *byte == b':') {
        let folder = Path::new(OsStr::from_bytes(folder));
        let candidate = directory.join(folder).join(program);
        let executable = rustix::fs::access(&candidate, rustix::fs::Access::EXEC_OK).is_ok()
            && std::fs::metadata(&candidate).is_ok_and(|metadata| metadata.is_file());
        if executable {
            return Ok(candidate);
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::NotFound,
        format!("`{program}` is not in PATH"),
    ))
}

/// `text` as a C string, or an error naming what held a NUL byte.
fn c_string(text: &OsStr, what: &str) -> std::io::Result<CString> {
    CString::new(text.as_bytes()).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("the child's {what} holds a NUL byte"),
        )
    })
}

/// The exit status of a wait status as `waitpid` gives it.
fn exit_status(status: rustix::process::WaitStatus) -> ExitStatus {
    ExitStatus::from_raw(status.as_raw())
}

/// A pipe: the read end for clawtest (non-blocking, in tokio's reactor), the write end for
/// the child (blocking; both ends close on exec).
fn pipe() -> std::io::Result<(Receiver, OwnedFd)> {
    let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    rustix::io::ioctl_fionbio(&read, true)?;
    Ok((Receiver::from_owned_fd_unchecked(read)?, write))
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod cloned;

#[cfg(test)]
mod tests;
