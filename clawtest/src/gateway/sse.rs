//! Server-sent events: a streamed answer cut into its events, whatever the network's
//! chunking, so the log and the cassette keep them one by one.

/// Cuts a byte stream into server-sent events (each ending with its blank line), whatever the
/// network's chunking.
#[derive(Default)]
pub(super) struct EventSplitter {
    pending: Vec<u8>,
    events: Vec<String>,
}

impl EventSplitter {
    pub(super) fn push(&mut self, data: &[u8]) {
        self.pending.extend_from_slice(data);
        while let Some(end) = event_end(&self.pending) {
            let event: Vec<u8> = self.pending.drain(..end).collect();
            self.events
                .push(String::from_utf8_lossy(&event).into_owned());
        }
    }

    pub(super) fn finish(mut self) -> Vec<String> {
        if !self.pending.is_empty() {
            self.events
                .push(String::from_utf8_lossy(&self.pending).into_owned());
        }
        self.events
    }
}

/// The end (exclusive) of the first complete event: after `\n\n` or `\r\n\r\n`.
fn event_end(bytes: &[u8]) -> Option<usize> {
    let lf = bytes
        .windows(2)
        .position(|window| window == b"\n\n")
        .map(|at| at + 2);
    let crlf = bytes
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .map(|at| at + 4);
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::EventSplitter;

    #[test]
    fn events_are_cut_at_blank_lines_whatever_the_chunking() {
        let mut splitter = EventSplitter::default();
        splitter.push(b"data: 1\n");
        splitter.push(b"\ndata: 2\r\n\r\nda");
        splitter.push(b"ta: 3\n\n");
        assert_eq!(
            splitter.finish(),
            vec!["data: 1\n\n", "data: 2\r\n\r\n", "data: 3\n\n"]
        );
    }
}
