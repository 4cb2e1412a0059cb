//! Ctrl-C (and SIGTERM, SIGHUP) during a run, escalating: the first signal asks the run to
//! stop (no further trial starts, running harnesses are stopped, partial results are still
//! written); the second aborts whatever the sandbox still runs, and the process leaves at once.
//!
//! This module owns the escalation and [`Signals`], the operating system's three stop signals
//! as one source, remembering which came first ([`received`], for the exit code: 130, 143,
//! 129). The abort is the caller's (the binary passes the sandbox's abort), and so is telling
//! the user and ending the process: the caller hears of each step as a [`Notice`]. Tests drive
//! it with a fake signal source.

use std::future::Future;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use rustix::process::Signal;
use tokio::signal::unix::{SignalKind, signal};

pub use tokio_util::sync::CancellationToken;

/// How long the abort at the second signal may take before the process leaves anyway.
const ABORT_GRACE: Duration = Duration::from_secs(10);

/// The first stop signal received (0: none yet).
static FIRST: AtomicI32 = AtomicI32::new(0);

/// A signal that stops a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Received {
    /// SIGINT (Ctrl-C): exit code 130.
    Interrupt,
    /// SIGTERM (how CI cancels a job): exit code 143.
    Terminate,
    /// SIGHUP (the terminal or the session went away): exit code 129.
    HangUp,
}

impl Received {
    /// The signal's number.
    pub fn number(self) -> i32 {
        match self {
            Received::Interrupt => Signal::INT.as_raw(),
            Received::Terminate => Signal::TERM.as_raw(),
            Received::HangUp => Signal::HUP.as_raw(),
        }
    }

    /// The shell's exit code for a process ended by this signal: 128 + its number.
    pub fn exit_code(self) -> u8 {
        128 + self.number() as u8
    }
}

/// The first stop signal this process received, if any.
pub fn received() -> Option<Received> {
    let first = FIRST.load(Ordering::SeqCst);
    [Received::Interrupt, Received::Terminate, Received::HangUp]
        .into_iter()
        .find(|signal| signal.number() == first)
}

/// SIGINT, SIGTERM and SIGHUP as one source of stop signals (call inside a tokio runtime).
pub struct Signals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
    hang_up: tokio::signal::unix::Signal,
}

impl Signals {
    /// Installs the three handlers: from now on these signals no longer end the process.
    pub fn install() -> std::io::Result<Signals> {
        Ok(Signals {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
            hang_up: signal(SignalKind::hangup())?,
        })
    }

    /// Waits for the next of the three; the first one ever is kept for [`received`].
    pub async fn next(&mut self) -> Received {
        let received = tokio::select! {
            _ = self.interrupt.recv() => Received::Interrupt,
            _ = self.terminate.recv() => Received::Terminate,
            _ = self.hang_up.recv() => Received::HangUp,
        };
        let _ = FIRST.compare_exchange(0, received.number(), Ordering::SeqCst, Ordering::SeqCst);
        received
    }

    /// This source as [`escalate`] takes it.
    pub fn into_source(
        self,
    ) -> impl FnMut() -> std::pin::Pin<Box<dyn Future<Output = std::io::Result<()>> + Send>>
    + Send
    + 'static {
        let shared = std::sync::Arc::new(tokio::sync::Mutex::new(self));
        move || {
            let shared = std::sync::Arc::clone(&shared);
            Box::pin(async move {
                shared.lock().await.next().await;
                Ok(())
            })
        }
    }
}

/// A step of the escalation, for the caller to act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notice {
    /// The first signal: the run is stopping and will write partial results. Sent before the
    /// run is told to stop, so that what the caller prints comes first.
    Stopping,
    /// The second signal: the abort has finished (or 10 s passed without it finishing). The
    /// caller ends the process now.
    Aborted,
}

/// Listens for `signal` on a task of its own (call it inside a tokio runtime) and returns the
/// token a run stops on: it is cancelled at the first signal. At the second, `abort` runs (for at
/// most 10 s). `notify` hears each step as it happens. A signal source that fails
/// (no handler could be installed) ends the listening: the run then simply cannot be
/// interrupted.
pub fn escalate<Signal, Signalled, Abort, Aborting, Notify>(
    mut signal: Signal,
    abort: Abort,
    mut notify: Notify,
) -> CancellationToken
where
    Signal: FnMut() -> Signalled + Send + 'static,
    Signalled: Future<Output = std::io::Result<()>> + Send,
    Abort: FnOnce() -> Aborting + Send + 'static,
    Aborting: Future<Output = ()> + Send,
    Notify: FnMut(Notice) + Send + 'static,
{
    let stopping = CancellationToken::new();
    let stop = stopping.clone();
    tokio::spawn(async move {
        if signal().await.is_err() {
            return;
        }
        notify(Notice::Stopping);
        stop.cancel();
        if signal().await.is_err() {
            return;
        }
        let _ = tokio::time::timeout(ABORT_GRACE, abort()).await;
        notify(Notice::Aborted);
    });
    stopping
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tokio::sync::mpsc;

    use super::*;

    /// What the fake signal source returns for each signal.
    type Signalled = std::pin::Pin<Box<dyn Future<Output = std::io::Result<()>> + Send>>;

    /// A signal source fed by the test: each `()` sent is one Ctrl-C.
    fn fake_signal() -> (
        mpsc::UnboundedSender<()>,
        impl FnMut() -> Signalled + Send + 'static,
    ) {
        let (sender, receiver) = mpsc::unbounded_channel();
        let receiver = Arc::new(tokio::sync::Mutex::new(receiver));
        let signal = move || {
            let receiver = Arc::clone(&receiver);
            Box::pin(async move {
                receiver
                    .lock()
                    .await
                    .recv()
                    .await
                    .ok_or_else(|| std::io::Error::other("no more signals"))
            }) as Signalled
        };
        (sender, signal)
    }

    #[tokio::test]
    async fn the_first_signal_stops_the_run_and_the_second_aborts_then_says_so() {
        let (ctrl_c, signal) = fake_signal();
        let (heard, mut notices) = mpsc::unbounded_channel();
        let aborted = Arc::new(Mutex::new(false));
        let seen_abort = Arc::clone(&aborted);
        let stopping = escalate(
            signal,
            move || async move { *seen_abort.lock().unwrap() = true },
            move |notice| heard.send(notice).unwrap(),
        );
        assert!(!stopping.is_cancelled());

        ctrl_c.send(()).unwrap();
        stopping.cancelled().await;
        assert_eq!(notices.recv().await, Some(Notice::Stopping));
        assert!(!*aborted.lock().unwrap(), "one Ctrl-C only stops");

        ctrl_c.send(()).unwrap();
        assert_eq!(notices.recv().await, Some(Notice::Aborted));
        assert!(*aborted.lock().unwrap());
        // The listener ends once it has aborted: the notices' sender goes with it.
        assert_eq!(notices.recv().await, None);
    }

    #[tokio::test]
    async fn sigterm_and_sighup_are_stop_signals_and_the_first_is_remembered() {
        let mut signals = Signals::install().unwrap();
        // Signals to this process, whose handler is installed.
        let own = rustix::process::getpid();
        rustix::process::kill_process(own, rustix::process::Signal::TERM).unwrap();
        assert_eq!(signals.next().await, Received::Terminate);
        rustix::process::kill_process(own, rustix::process::Signal::HUP).unwrap();
        assert_eq!(signals.next().await, Received::HangUp);
        assert_eq!(received(), Some(Received::Terminate));
        assert_eq!(Received::Terminate.exit_code(), 143);
        assert_eq!(Received::HangUp.exit_code(), 129);
        assert_eq!(Received::Interrupt.exit_code(), 130);
    }

    #[tokio::test]
    async fn without_a_signal_handler_the_run_is_never_stopped() {
        let (ctrl_c, signal) = fake_signal();
        drop(ctrl_c);
        let (heard, mut notices) = mpsc::unbounded_channel();
        let stopping = escalate(
            signal,
            || async {},
            move |notice: Notice| heard.send(notice).unwrap(),
        );
        // The listener ended without a notice, and without stopping the run.
        assert_eq!(notices.recv().await, None);
        assert!(!stopping.is_cancelled());
    }
}
