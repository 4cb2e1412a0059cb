//! Starting units of work in their given order, at most `jobs` at a time. The order is what
//! makes a run reproducible: with one job the trials run one after another in task order, so
//! which task a cost limit stops is the same on every run. (Each unit acquiring its own permit
//! once spawned would not do: on a multi-threaded runtime spawned tasks start in any order.)

use std::future::Future;
use std::sync::Arc;

use futures_util::{Stream, StreamExt};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Starts `start(unit, permit)` for each unit in order (a stream: units may be made as they
/// are asked for), each once a permit is free; the permit is `None` when `interrupt` fired
/// first (the unit is then expected to end at once). Returns when every started unit has
/// ended. Units that have ended are let go as it goes, so a long run holds only those running.
pub(crate) async fn in_order<U, F, Fut>(
    units: impl Stream<Item = U>,
    jobs: usize,
    interrupt: CancellationToken,
    mut start: F,
) where
    F: FnMut(U, Option<OwnedSemaphorePermit>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let permits = Arc::new(Semaphore::new(jobs.max(1)));
    let mut running = JoinSet::new();
    let mut units = std::pin::pin!(units);
    while let Some(unit) = units.next().await {
        while running.try_join_next().is_some() {}
        // The semaphore is fair: permits are granted in the order they were asked for, and this
        // loop asks for them one at a time. An interruption wins over a free permit.
        let permit = tokio::select! {
            biased;
            () = interrupt.cancelled() => None,
            permit = Arc::clone(&permits).acquire_owned() => permit.ok(),
        };
        running.spawn(start(unit, permit));
    }
    while running.join_next().await.is_some() {}
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn with_one_job_the_units_run_one_after_another_in_their_order() {
        let started = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&started);
        in_order(
            futures_util::stream::iter(0..200),
            1,
            CancellationToken::new(),
            move |unit, permit| {
                let log = Arc::clone(&log);
                async move {
                    assert!(permit.is_some());
                    log.lock().unwrap().push(unit);
                    tokio::task::yield_now().await;
                    drop(permit);
                }
            },
        )
        .await;
        assert_eq!(*started.lock().unwrap(), (0..200).collect::<Vec<_>>());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn no_more_than_jobs_units_run_at_once_and_every_unit_runs() {
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let ended = Arc::new(AtomicUsize::new(0));
        let (r, m, e) = (Arc::clone(&running), Arc::clone(&most), Arc::clone(&ended));
        in_order(
            futures_util::stream::iter(0..60),
            3,
            CancellationToken::new(),
            move |_, permit| {
                let (running, most, ended) = (Arc::clone(&r), Arc::clone(&m), Arc::clone(&e));
                async move {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    tokio::task::yield_now().await;
                    running.fetch_sub(1, Ordering::SeqCst);
                    ended.fetch_add(1, Ordering::SeqCst);
                    drop(permit);
                }
            },
        )
        .await;
        assert_eq!(ended.load(Ordering::SeqCst), 60);
        assert!(most.load(Ordering::SeqCst) <= 3, "{most:?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn units_are_made_as_they_are_asked_for_and_let_go_when_they_end() {
        // Each unit counts itself alive from when it is made until it has ended.
        struct Alive(Arc<AtomicUsize>);
        impl Drop for Alive {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let alive = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let made = Arc::clone(&alive);
        let units = futures_util::stream::iter(0..10_000).map(move |_| {
            made.fetch_add(1, Ordering::SeqCst);
            Alive(Arc::clone(&made))
        });
        let (seen, top) = (Arc::clone(&alive), Arc::clone(&most));
        in_order(units, 2, CancellationToken::new(), move |unit, permit| {
            top.fetch_max(seen.load(Ordering::SeqCst), Ordering::SeqCst);
            async move {
                tokio::task::yield_now().await;
                drop(unit);
                drop(permit);
            }
        })
        .await;
        assert_eq!(alive.load(Ordering::SeqCst), 0);
        // The running two, and the one made and waiting for a permit: never the ten thousand.
        assert!(most.load(Ordering::SeqCst) <= 3, "{most:?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn after_an_interruption_the_units_left_get_no_permit() {
        let interrupt = CancellationToken::new();
        let outcomes = Arc::new(Mutex::new(Vec::new()));
        let (log, stop) = (Arc::clone(&outcomes), interrupt.clone());
        in_order(
            futures_util::stream::iter(0..10),
            1,
            interrupt,
            move |unit, permit| {
                if unit == 3 {
                    stop.cancel();
                }
                let log = Arc::clone(&log);
                async move {
                    log.lock().unwrap().push((unit, permit.is_some()));
                }
            },
        )
        .await;
        let mut outcomes = outcomes.lock().unwrap().clone();
        outcomes.sort_unstable();
        // Unit 3 had its permit before it fired the interruption; every unit after it asked
        // after the interruption.
        let expected: Vec<(i32, bool)> = (0..10).map(|unit| (unit, unit <= 3)).collect();
        assert_eq!(outcomes, expected);
    }
}
