//! Ctrl-C during a run, escalating: the first signal asks the run to stop (no further trial
//! starts, running harnesses are stopped, partial results are still written); the second aborts
//! whatever the sandbox still runs, and the process leaves at once.
//!
//! This module owns only the escalation. The signal source and the abort are the caller's (the
//! binary passes `tokio::signal::ctrl_c` and the sandbox's abort), and so is telling the user
//! and ending the process: the caller hears of each step as a [`Notice`]. Tests drive it with a
//! fake signal source.

use std::future::Future;
use std::time::Duration;

use tokio::sync::watch;

/// How long the abort at the second signal may take before the process leaves anyway.
const ABORT_GRACE: Duration = Duration::from_secs(10);

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
/// watch a run stops on: it turns true at the first signal. At the second, `abort` runs (for at
/// most 10 s). `notify` hears each step as it happens. A signal source that fails
/// (no handler could be installed) ends the listening: the run then simply cannot be
/// interrupted.
pub fn escalate<Signal, Signalled, Abort, Aborting, Notify>(
    mut signal: Signal,
    abort: Abort,
    mut notify: Notify,
) -> watch::Receiver<bool>
where
    Signal: FnMut() -> Signalled + Send + 'static,
    Signalled: Future<Output = std::io::Result<()>> + Send,
    Abort: FnOnce() -> Aborting + Send + 'static,
    Aborting: Future<Output = ()> + Send,
    Notify: FnMut(Notice) + Send + 'static,
{
    let (stop, stopping) = watch::channel(false);
    tokio::spawn(async move {
        if signal().await.is_err() {
            return;
        }
        notify(Notice::Stopping);
        let _ = stop.send(true);
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
        let notices = Arc::new(Mutex::new(Vec::new()));
        let aborted = Arc::new(Mutex::new(false));
        let (heard, seen_abort) = (Arc::clone(&notices), Arc::clone(&aborted));
        let mut stopping = escalate(
            signal,
            move || async move { *seen_abort.lock().unwrap() = true },
            move |notice| heard.lock().unwrap().push(notice),
        );
        assert!(!*stopping.borrow());

        ctrl_c.send(()).unwrap();
        stopping.wait_for(|stop| *stop).await.unwrap();
        assert_eq!(*notices.lock().unwrap(), [Notice::Stopping]);
        assert!(!*aborted.lock().unwrap(), "one Ctrl-C only stops");

        ctrl_c.send(()).unwrap();
        // The listener ends once it has aborted: the watch's sender goes with it.
        assert!(stopping.changed().await.is_err());
        assert!(*aborted.lock().unwrap());
        assert_eq!(
            *notices.lock().unwrap(),
            [Notice::Stopping, Notice::Aborted]
        );
    }

    #[tokio::test]
    async fn without_a_signal_handler_the_run_is_never_stopped() {
        let (ctrl_c, signal) = fake_signal();
        drop(ctrl_c);
        let notices = Arc::new(Mutex::new(Vec::new()));
        let heard = Arc::clone(&notices);
        let mut stopping = escalate(
            signal,
            || async {},
            move |notice| heard.lock().unwrap().push(notice),
        );
        assert!(stopping.changed().await.is_err());
        assert!(!*stopping.borrow());
        assert!(notices.lock().unwrap().is_empty());
    }
}
