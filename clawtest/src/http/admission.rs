//! Which connections a listener keeps when it is flooded: a connection is *unproven* until it
//! has sent a whole request head (ending in a blank line) that holds the listener's token,
//! when it has one (a trial's URLs on loopback carry a random token). A listener keeps at most
//! [`MAX_UNPROVEN`] unproven connections: a new one evicts the oldest. A flood of connections
//! that say nothing, dribble their headers or do not know the token (another trial's agent,
//! scanning loopback ports) then churns through those few places, while a client that sends
//! its request at once with the token is proven as soon as it is read and is never evicted.
//! Without it, 256 silent connections held every place of another trial's listener for the
//! whole header timeout, again and again, and its agent failed as if it had.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::task::AbortHandle;

use super::Connection;

/// The most unproven connections a listener keeps; a new one evicts the oldest.
pub(crate) const MAX_UNPROVEN: usize = 32;

/// The most bytes read while looking for a request head: a head longer than this without
/// the token leaves the connection unproven.
const HEAD_LIMIT: usize = 16 * 1024;

/// The connections of one listener not yet proven, oldest first.
#[derive(Default)]
pub(crate) struct Admission {
    /// What a request head must hold to prove its connection (`None`: any whole head).
    token: Option<Arc<[u8]>>,
    /// Each unproven connection's flag (set once proven) and its task.
    unproven: VecDeque<(Arc<AtomicBool>, AbortHandle)>,
}

impl Admission {
    /// An admission whose connections prove themselves with `token` in their first request
    /// head, or with any whole head when there is none.
    pub(crate) fn new(token: Option<&str>) -> Admission {
        Admission {
            token: token.map(|token| Arc::from(token.as_bytes())),
            unproven: VecDeque::new(),
        }
    }

    /// `connection` wrapped to watch for its proof, and the flag it sets.
    pub(crate) fn watch(&self, connection: Box<dyn Connection>) -> (Watched, Arc<AtomicBool>) {
        let proven = Arc::new(AtomicBool::new(false));
        let watched = Watched {
            inner: connection,
            proven: Arc::clone(&proven),
            token: self.token.clone(),
            head: Some(Vec::new()),
        };
        (watched, proven)
    }

    /// Counts a new connection (its flag and task) as unproven, evicting the oldest unproven
    /// connection when there are already [`MAX_UNPROVEN`].
    pub(crate) fn admit(&mut self, proven: Arc<AtomicBool>, task: AbortHandle) {
        self.forget_settled();
        if self.unproven.len() >= MAX_UNPROVEN
            && let Some((_, oldest)) = self.unproven.pop_front()
        {
            oldest.abort();
        }
        self.unproven.push_back((proven, task));
    }

    /// Ends the oldest unproven connection to make room; false when every connection has
    /// proven itself (the listener is busy with real clients, which then wait).
    pub(crate) fn evict_oldest(&mut self) -> bool {
        self.forget_settled();
        match self.unproven.pop_front() {
            Some((_, oldest)) => {
                oldest.abort();
                true
            }
            None => false,
        }
    }

    /// Forgets the connections proven or ended since.
    fn forget_settled(&mut self) {
        self.unproven
            .retain(|(proven, task)| !proven.load(Ordering::Relaxed) && !task.is_finished());
    }
}

/// A connection that sets its flag once its first request head holds the proof.
pub(crate) struct Watched {
    inner: Box<dyn Connection>,
    proven: Arc<AtomicBool>,
    token: Option<Arc<[u8]>>,
    /// The first request head read so far; `None` once it has been judged.
    head: Option<Vec<u8>>,
}

impl Watched {
    /// Looks at `read`, the bytes just read, for the end of the first request head.
    fn look(&mut self, read: &[u8]) {
        let Some(head) = &mut self.head else {
            return;
        };
        let room = HEAD_LIMIT.saturating_sub(head.len());
        head.extend_from_slice(&read[..read.len().min(room)]);
        let Some(end) = find(head, b"\r\n\r\n") else {
            if head.len() >= HEAD_LIMIT {
                self.head = None;
            }
            return;
        };
        let proven = self
            .token
            .as_deref()
            .is_none_or(|token| find(&head[..end], token).is_some());
        if proven {
            self.proven.store(true, Ordering::Relaxed);
        }
        self.head = None;
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buffer.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(context, buffer);
        if matches!(polled, Poll::Ready(Ok(()))) && self.head.is_some() {
            let read = buffer.filled()[before..].to_vec();
            self.look(&read);
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(context, data)
    }

    fn poll_flush(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(context)
    }

    fn poll_shutdown(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(context)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffers: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(context, buffers)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
