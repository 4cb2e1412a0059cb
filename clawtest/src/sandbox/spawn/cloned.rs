//! A child made by `clone3(CLONE_VM | CLONE_VFORK | CLONE_PIDFD [| CLONE_INTO_CGROUP])` on
//! a stack of its own, and waited for through its pidfd.
//!
//! The child shares clawtest's memory until it runs its program, and clawtest's calling
//! thread is suspended until then, as with `vfork`: so the child touches only what was
//! prepared for it (C strings, descriptors, numbers), allocates nothing, takes no lock, and
//! makes only system calls. Signals are blocked across the clone, and the child sets every
//! handled signal back to its default before it unblocks them: a handler of clawtest's
//! (tokio's SIGCHLD) must never run in the child on shared memory.

use std::ffi::{CString, c_char, c_int};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::ExitStatus;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use rustix::process::{Pid, WaitOptions, waitpid};
use tokio::io::unix::AsyncFd;

use super::{Child, GroupFds, Made, Process, Spawn, c_string, exit_status, pipe, resolve};

const CLONE_VM: u64 = 0x100;
const CLONE_PIDFD: u64 = 0x1000;
const CLONE_VFORK: u64 = 0x4000;
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// The child's own stack: it runs a few system calls, then its program replaces it.
const STACK_BYTES: usize = 64 << 10;

/// Set once the kernel refused `clone3` (ENOSYS or EPERM: a seccomp filter): every later
/// child is forked.
static REFUSED: AtomicBool = AtomicBool::new(false);

/// Whether the kernel refused `clone3`.
#[cfg(test)]
pub(super) fn refused() -> bool {
    REFUSED.load(Ordering::Relaxed)
}

/// Children dropped while still running: killed, and reaped at the next start.
static ORPHANS: Mutex<Vec<Pid>> = Mutex::new(Vec::new());

/// `struct clone_args` of Linux 5.7 (`CLONE_ARGS_SIZE_VER2`).
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

/// What the child does, all of it made before the clone.
struct Plan {
    path: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    directory: *const c_char,
    stdin: c_int,
    stdout: c_int,
    stderr: c_int,
    /// `RLIMIT_FSIZE`, when asked.
    file_size: Option<u64>,
    /// clawtest's pid: the child gives up when its parent is not that any more.
    parent: libc::pid_t,
    /// The errno of the step that failed, written by the child before it exits.
    error: AtomicI32,
}

/// A running (or ended, not yet waited for) cloned child.
#[derive(Debug)]
pub(super) struct Cloned {
    pid: Pid,
    pidfd: AsyncFd<OwnedFd>,
    status: Option<ExitStatus>,
    #[cfg_attr(
        not(test),
        allow(dead_code, reason = "tests ask which way a child was made")
    )]
    pub(super) made: Made,
}

/// Starts `spawn`'s child by `clone3`; `None` when the kernel refused it (the caller forks).
pub(super) fn start(spawn: &Spawn, group: Option<GroupFds<'_>>) -> Option<std::io::Result<Child>> {
    if REFUSED.load(Ordering::Relaxed) {
        return None;
    }
    reap_orphans();
    match prepare(spawn) {
        Ok(prepared) => prepared.launch(spawn, group),
        Err(error) => Some(Err(error)),
    }
}

/// The C strings and descriptors of a child, made in clawtest's memory before the clone.
struct Prepared {
    path: CString,
    _argv: Vec<CString>,
    argv: Vec<*const c_char>,
    _envp: Vec<CString>,
    envp: Vec<*const c_char>,
    directory: CString,
}

fn prepare(spawn: &Spawn) -> std::io::Result<Prepared> {
    let path = resolve(&spawn.program, &spawn.directory, &spawn.environment)?;
    let path = c_string(path.as_os_str(), "program")?;
    let mut arguments = vec![c_string(spawn.program.as_ref(), "program")?];
    for argument in &spawn.arguments {
        arguments.push(c_string(argument, "argument")?);
    }
    let mut variables = Vec::with_capacity(spawn.environment.len());
    for (name, value) in &spawn.environment {
        let mut variable = name.clone();
        variable.push("=");
        variable.push(value);
        variables.push(c_string(&variable, "environment")?);
    }
    let pointers = |strings: &[CString]| {
        let mut pointers: Vec<*const c_char> = strings.iter().map(|text| text.as_ptr()).collect();
        pointers.push(std::ptr::null());
        pointers
    };
    Ok(Prepared {
        path,
        argv: pointers(&arguments),
        _argv: arguments,
        envp: pointers(&variables),
        _envp: variables,
        directory: c_string(spawn.directory.as_os_str(), "folder")?,
    })
}

impl Prepared {
    /// Clones the child and hands back its [`Child`]; `None` when the kernel refused.
    fn launch(self, spawn: &Spawn, group: Option<GroupFds<'_>>) -> Option<std::io::Result<Child>> {
        let made = if group.is_some() {
            Made::ClonedIntoGroup
        } else {
            Made::Cloned
        };
        let opened = (|| {
            let stdin = rustix::fs::open(
                "/dev/null",
                rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            )?;
            Ok::<_, std::io::Error>((stdin, pipe()?, pipe()?))
        })();
        let (stdin, (stdout, stdout_end), (stderr, stderr_end)) = match opened {
            Ok(opened) => opened,
            Err(error) => return Some(Err(error)),
        };
        let plan = Plan {
            path: self.path.as_ptr(),
            argv: self.argv.as_ptr(),
            envp: self.envp.as_ptr(),
            directory: self.directory.as_ptr(),
            stdin: stdin.as_raw_fd(),
            stdout: stdout_end.as_raw_fd(),
            stderr: stderr_end.as_raw_fd(),
            file_size: spawn.file_size,
            parent: std::process::id().cast_signed(),
            error: AtomicI32::new(0),
        };
        let mut pidfd: c_int = -1;
        let mut stack: Vec<u128> = Vec::with_capacity(STACK_BYTES / size_of::<u128>());
        let mut arguments = CloneArgs {
            flags: CLONE_VM | CLONE_VFORK | CLONE_PIDFD,
            pidfd: (&raw mut pidfd) as u64,
            exit_signal: libc::SIGCHLD as u64,
            stack: stack.as_mut_ptr() as u64,
            stack_size: STACK_BYTES as u64,
            ..CloneArgs::default()
        };
        if let Some(group) = group {
            arguments.flags |= CLONE_INTO_CGROUP;
            arguments.cgroup = group.directory.as_raw_fd() as u64;
        }
        let returned = clone_blocking_signals(&mut arguments, &plan);
        drop((stdin, stdout_end, stderr_end));
        if returned < 0 {
            let errno = i32::try_from(-returned).unwrap_or(libc::EINVAL);
            if errno == libc::ENOSYS || errno == libc::EPERM {
                REFUSED.store(true, Ordering::Relaxed);
            }
            // Refused, or a cgroup the kernel will not clone into (older than 5.7): the fork
            // joins it by a write, or says why not.
            return None;
        }
        // SAFETY: the kernel made this descriptor for the new child (CLONE_PIDFD), and
        // nothing else owns it.
        let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd) };
        // A positive pid: the call succeeded.
        let pid = Pid::from_raw(i32::try_from(returned).unwrap_or(i32::MAX))?;
        let error = plan.error.load(Ordering::Acquire);
        if error != 0 {
            // It exited before its program ran: reap it, and say why.
            let _ = waitpid(Some(pid), WaitOptions::empty());
            return Some(Err(std::io::Error::from_raw_os_error(error)));
        }
        // SAFETY: the pidfd is owned by the `AsyncFd` from here on, never replaced or closed
        // while registered.
        let registered =
            unsafe { AsyncFd::register_with_interest(pidfd, tokio::io::Interest::READABLE) };
        let started = registered.map_err(std::io::Error::from).map(|pidfd| Child {
            pid: pid.as_raw_nonzero().get().cast_unsigned(),
            stdout: Some(stdout),
            stderr: Some(stderr),
            process: Process::Cloned(Cloned {
                pid,
                pidfd,
                status: None,
                made,
            }),
        });
        if started.is_err() {
            kill_and_reap(pid);
        }
        Some(started)
    }
}

/// `clone3` with every signal blocked in the calling thread (restored after): the child
/// unblocks them once no handler of clawtest's can run in it. Returns the child's pid, or
/// minus the errno.
fn clone_blocking_signals(arguments: &mut CloneArgs, plan: &Plan) -> i64 {
    // SAFETY: a sigset_t is plain data, filled in by sigfillset before it is read.
    let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut before: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: both sets live across the calls; pthread_sigmask changes this thread's mask.
    unsafe {
        libc::sigfillset(&raw mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &raw const all, &raw mut before);
    }
    // SAFETY: `arguments` describes a stack of STACK_BYTES that outlives the child's use of it
    // (the caller holds it; CLONE_VFORK suspends this thread until the child has run its
    // program or exited), `plan` and every pointer in it stay valid for as long, and the child
    // runs only `child_main`, which never returns.
    let returned = unsafe { clone3(arguments, child_main, plan) };
    // SAFETY: restores the mask saved above.
    unsafe {
        libc::pthread_sigmask(libc::SIG_SETMASK, &raw const before, std::ptr::null_mut());
    }
    returned
}

/// The `clone3` system call; in the child, `start(plan)` on the new stack (it never returns).
///
/// # Safety
/// `arguments.stack` must be a writable stack of `arguments.stack_size` bytes, 16-aligned at
/// its top, that nothing else uses while the child runs; with `CLONE_VM` the child shares
/// this memory, so `plan` must stay valid until the child has run its program or exited
/// (`CLONE_VFORK`).
unsafe fn clone3(
    arguments: &mut CloneArgs,
    start: extern "C" fn(*const Plan) -> !,
    plan: *const Plan,
) -> i64 {
    let returned: i64;
    // SAFETY: the caller's promises above. The kernel changes only rax, rcx and r11 in the
    // parent; in the child rax is 0 and rsp the new stack's top, where `start` is called with
    // `plan` and never comes back.
    unsafe {
        std::arch::asm!(
            "syscall",
            "test rax, rax",
            "jnz 2f",
            "xor ebp, ebp",
            "mov rdi, r12",
            "call r13",
            "ud2",
            "2:",
            inlateout("rax") libc::SYS_clone3 => returned,
            in("rdi") std::ptr::from_mut(arguments),
            in("rsi") size_of::<CloneArgs>(),
            in("r12") plan,
            in("r13") start,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    returned
}

/// The child, from the clone to its program: each step a system call on what [`Plan`]
/// prepared; a failed step's errno is written to the plan and the child exits with 127.
extern "C" fn child_main(plan: *const Plan) -> ! {
    // SAFETY: the parent keeps the plan alive and suspended until this child runs its program
    // or exits (CLONE_VFORK); the plan is only read, and its error written atomically.
    let plan = unsafe { &*plan };
    // SAFETY: each call is a system call wrapper on the plan's values (C strings and
    // descriptors made by the parent, kept open by it); nothing allocates or locks.
    let error = unsafe { run_program(plan) };
    plan.error.store(error, Ordering::Release);
    // SAFETY: ends this child (its own thread group) at once.
    unsafe { libc::_exit(127) }
}

/// Every step before the program, then the program: returns only on a failure, with its
/// errno.
///
/// # Safety
/// Only in the child of [`clone3`], with a plan whose pointers are valid.
unsafe fn run_program(plan: &Plan) -> c_int {
    let failed = || {
        std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EINVAL)
    };
    // SAFETY: system calls on values of the plan; see the caller.
    unsafe {
        default_signal_handlers();
        if libc::setpgid(0, 0) != 0 {
            return failed();
        }
        if libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        ) != 0
        {
            return failed();
        }
        // clawtest died before the death signal was set: it will never be sent.
        if libc::getppid() != plan.parent {
            return libc::ESRCH;
        }
        if let Some(bytes) = plan.file_size {
            let limit = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: bytes,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &raw const limit) != 0 {
                return failed();
            }
        }
        for (from, to) in [
            (plan.stdin, libc::STDIN_FILENO),
            (plan.stdout, libc::STDOUT_FILENO),
            (plan.stderr, libc::STDERR_FILENO),
        ] {
            if libc::dup2(from, to) < 0 {
                return failed();
            }
        }
        if libc::chdir(plan.directory) != 0 {
            return failed();
        }
        // SAFETY: a sigset_t is plain data, emptied before it is used.
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut none);
        libc::pthread_sigmask(libc::SIG_SETMASK, &raw const none, std::ptr::null_mut());
        libc::execve(plan.path, plan.argv, plan.envp);
        failed()
    }
}

/// Sets every signal clawtest handles back to its default, and SIGPIPE (which the Rust
/// runtime ignores) too, as the standard library does for its children. Ignored signals stay
/// ignored, as across any exec.
///
/// # Safety
/// Only in the child, whose handler table is its own (no `CLONE_SIGHAND`).
unsafe fn default_signal_handlers() {
    for signal in 1..=64 {
        if signal == libc::SIGKILL || signal == libc::SIGSTOP {
            continue;
        }
        // SAFETY: a sigaction is plain data; sigaction fills `current` or fails (a signal the
        // C library keeps for itself), and then nothing is changed.
        unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &raw mut current) != 0 {
                continue;
            }
            let handled =
                current.sa_sigaction != libc::SIG_DFL && current.sa_sigaction != libc::SIG_IGN;
            if handled || signal == libc::SIGPIPE {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(signal, &raw const default, std::ptr::null_mut());
            }
        }
    }
}

impl Cloned {
    /// Waits until its pidfd says it has ended, then reaps it.
    pub(super) async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        if let Some(status) = self.status {
            return Ok(status);
        }
        loop {
            let mut ready = self.pidfd.readable().await?;
            if let Some((_, status)) = waitpid(Some(self.pid), WaitOptions::NOHANG)? {
                let status = exit_status(status);
                self.status = Some(status);
                return Ok(status);
            }
            ready.clear_ready();
        }
    }
}

impl Drop for Cloned {
    fn drop(&mut self) {
        // Not waited for: its pid is still its own, so it may be killed by it.
        if self.status.is_none() {
            kill_and_reap(self.pid);
        }
    }
}

/// Kills a child of clawtest's not yet reaped, and reaps it: at once if it has ended, else at
/// a later start.
fn kill_and_reap(pid: Pid) {
    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    if matches!(waitpid(Some(pid), WaitOptions::NOHANG), Ok(None))
        && let Ok(mut orphans) = ORPHANS.lock()
    {
        orphans.push(pid);
    }
}

/// Reaps the killed children that have ended since.
fn reap_orphans() {
    if let Ok(mut orphans) = ORPHANS.lock() {
        orphans.retain(|pid| matches!(waitpid(Some(*pid), WaitOptions::NOHANG), Ok(None)));
    }
}
