//! Waiting for a started harness: its end, its time limit, and (in a worker) the host hanging
//! up, all watched by the shim's one thread with `poll(2)`.
//!
//! Why one thread: a worker's trial is a chain of hand-overs between processes and threads,
//! and on a machine whose idle cores take tens of microseconds to wake, each hand-over is time
//! in which neither of two parallel trials may run. A thread that waits for the harness and
//! then wakes the main thread, and a thread that reads the host's lines and passes them on,
//! would be three more hand-overs a trial, and a thread started for each.
//!
//! The harness's end is a pidfd (`pidfd_open`, Linux 5.3), readable once it has exited. Where
//! the kernel gives none (older, or a seccomp profile that refuses the call), a thread waits
//! for the harness and closes a pipe's writing end, which makes its reading end readable.

use std::ffi::{c_long, c_ulong};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

unsafe extern "C" {
    fn syscall(number: c_long, ...) -> c_long;
    fn poll(fds: *mut PollFd, count: c_ulong, timeout: i32) -> i32;
    fn waitid(kind: i32, id: u32, info: *mut u8, options: i32) -> i32;
}

/// `pidfd_open`'s number: the same on every architecture (it came after their tables were
/// unified).
const SYS_PIDFD_OPEN: c_long = 434;
const POLLIN: i16 = 0x1;
const POLLERR: i16 = 0x8;
const POLLHUP: i16 = 0x10;
const POLLRDHUP: i16 = 0x2000;
const P_PID: i32 = 1;
const WEXITED: i32 = 4;
const WNOWAIT: i32 = 0x0100_0000;
/// `siginfo_t`'s size, on every Linux architecture.
const SIGINFO_BYTES: usize = 128;

/// `struct pollfd`.
#[repr(C)]
struct PollFd {
    fd: i32,
    events: i16,
    revents: i16,
}

/// How the wait for a harness ended.
#[derive(Debug)]
pub(crate) enum Waited {
    /// The harness ended and was reaped (or could not be waited for).
    Ended(std::io::Result<ExitStatus>),
    /// The time limit passed: the harness was killed (`at_deadline`) and reaped.
    TimedOut,
    /// The watched connection was hung up on; the harness may still run.
    HungUp,
}

/// A descriptor that becomes readable once `child` has ended: its pidfd, or else the reading
/// end of a pipe whose writing end a thread closes when the child has ended (the thread
/// leaves it unreaped, for the shim to reap as with a pidfd).
fn ending(child: &Child) -> std::io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { syscall(SYS_PIDFD_OPEN, c_long::from(child.id() as i32), 0 as c_long) };
    match i32::try_from(fd) {
        // SAFETY: the kernel just gave this descriptor to the shim, which owns it alone.
        Ok(fd) if fd >= 0 => Ok(unsafe { OwnedFd::from_raw_fd(fd) }),
        _ => waiting_thread(child.id()),
    }
}

/// The pipe of [`ending`]'s fallback, and its thread.
fn waiting_thread(pid: u32) -> std::io::Result<OwnedFd> {
    let (reader, writer) = std::io::pipe()?;
    std::thread::spawn(move || {
        let mut info = [0u8; SIGINFO_BYTES];
        // SAFETY: waits without reaping (WNOWAIT); info is as large as a siginfo_t.
        while unsafe { waitid(P_PID, pid, info.as_mut_ptr(), WEXITED | WNOWAIT) } < 0
            && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
        {}
        drop(writer);
    });
    Ok(OwnedFd::from(reader))
}

/// Waits for `child` to end, for at most `limit` (then calls `at_deadline`, which must make
/// it end, and reaps it), or until `watched` is hung up on.
pub(crate) fn wait(
    child: &mut Child,
    limit: Option<Duration>,
    watched: Option<BorrowedFd<'_>>,
    at_deadline: impl FnOnce(),
) -> Waited {
    match ending(child) {
        Ok(ending) => wait_on(&ending, child, limit, watched, at_deadline),
        // Neither a pidfd nor a pipe (the shim is out of descriptors): wait for the end alone;
        // the host's own deadline still ends a harness past its limit, with its container.
        Err(_) => Waited::Ended(child.wait()),
    }
}

fn wait_on(
    ending: &OwnedFd,
    child: &mut Child,
    limit: Option<Duration>,
    watched: Option<BorrowedFd<'_>>,
    at_deadline: impl FnOnce(),
) -> Waited {
    let deadline = limit.and_then(|limit| Instant::now().checked_add(limit));
    loop {
        let timeout = match deadline {
            None => -1,
            Some(deadline) => match deadline.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => milliseconds_up(left),
                _ => {
                    at_deadline();
                    let _ = child.wait();
                    return Waited::TimedOut;
                }
            },
        };
        let mut fds = [
            PollFd {
                fd: ending.as_raw_fd(),
                events: POLLIN,
                revents: 0,
            },
            PollFd {
                // poll skips a negative descriptor.
                fd: watched.map_or(-1, |fd| fd.as_raw_fd()),
                events: POLLRDHUP,
                revents: 0,
            },
        ];
        // SAFETY: fds is an array of two pollfd structures that outlives the call.
        let ready = unsafe { poll(fds.as_mut_ptr(), 2, timeout) };
        if ready < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            // Nothing to watch with: wait for the end alone.
            return Waited::Ended(child.wait());
        }
        if fds[1].revents & (POLLRDHUP | POLLHUP | POLLERR) != 0 {
            return Waited::HungUp;
        }
        if fds[0].revents != 0 {
            return Waited::Ended(child.wait());
        }
    }
}

/// `left` in whole milliseconds, rounded up (so that the deadline has passed when poll
/// returns), at most poll's limit.
fn milliseconds_up(left: Duration) -> i32 {
    let milliseconds = left.as_nanos().div_ceil(1_000_000);
    i32::try_from(milliseconds).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;
    use std::os::unix::net::UnixStream;
    use std::process::Command;

    /// Both ways of learning the end: the pidfd, and the fallback's thread and pipe.
    fn endings(child: &Child) -> [OwnedFd; 2] {
        [ending(child).unwrap(), waiting_thread(child.id()).unwrap()]
    }

    fn no_deadline() {
        panic!("no deadline was set");
    }

    fn gone(pid: u32) -> bool {
        !std::path::Path::new(&format!("/proc/{pid}")).exists()
    }

    #[test]
    fn a_harness_that_exits_is_reaped_with_its_status() {
        for fallback in [false, true] {
            let mut child = Command::new("sh").args(["-c", "exit 3"]).spawn().unwrap();
            let ending = endings(&child)
                .into_iter()
                .nth(usize::from(fallback))
                .unwrap();
            let limit = Some(Duration::from_secs(60));
            match wait_on(&ending, &mut child, limit, None, no_deadline) {
                Waited::Ended(Ok(status)) => assert_eq!(status.code(), Some(3)),
                other => panic!("fallback {fallback}: {other:?}"),
            }
            assert!(gone(child.id()), "fallback {fallback}: reaped");
        }
    }

    #[test]
    fn a_harness_past_its_limit_is_ended_and_reaped() {
        for fallback in [false, true] {
            let mut child = Command::new("sleep").arg("60").spawn().unwrap();
            let pid = child.id();
            let ending = endings(&child)
                .into_iter()
                .nth(usize::from(fallback))
                .unwrap();
            let started = Instant::now();
            let limit = Some(Duration::from_millis(50));
            let waited = wait_on(&ending, &mut child, limit, None, || {
                // SAFETY: sends a signal to the test's own child.
                unsafe { crate::kill(pid as i32, crate::SIGKILL) };
            });
            assert!(matches!(waited, Waited::TimedOut), "{waited:?}");
            assert!(started.elapsed() >= Duration::from_millis(50));
            assert!(gone(pid), "fallback {fallback}: reaped");
        }
    }

    #[test]
    fn the_host_hanging_up_ends_the_wait_while_the_harness_runs() {
        for fallback in [false, true] {
            let (host, shim) = UnixStream::pair().unwrap();
            let mut child = Command::new("sleep").arg("60").spawn().unwrap();
            let ending = endings(&child)
                .into_iter()
                .nth(usize::from(fallback))
                .unwrap();
            let hang_up = std::thread::spawn(move || drop(host));
            let waited = wait_on(&ending, &mut child, None, Some(shim.as_fd()), no_deadline);
            hang_up.join().unwrap();
            assert!(matches!(waited, Waited::HungUp), "{waited:?}");
            assert_eq!(child.try_wait().unwrap(), None, "the harness still runs");
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }

    #[test]
    fn what_the_host_writes_while_the_harness_runs_does_not_end_the_wait() {
        let (mut host, shim) = UnixStream::pair().unwrap();
        std::io::Write::write_all(&mut host, b"reset\n").unwrap();
        let mut child = Command::new("sh")
            .args(["-c", "sleep 0.05"])
            .spawn()
            .unwrap();
        let waited = wait(&mut child, None, Some(shim.as_fd()), no_deadline);
        assert!(matches!(waited, Waited::Ended(Ok(_))), "{waited:?}");
    }

    #[test]
    fn a_deadline_is_rounded_up_to_whole_milliseconds() {
        assert_eq!(milliseconds_up(Duration::from_micros(1)), 1);
        assert_eq!(milliseconds_up(Duration::from_millis(7)), 7);
        assert_eq!(milliseconds_up(Duration::from_secs(u64::MAX)), i32::MAX);
    }
}
