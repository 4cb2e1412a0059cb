//! The agent's HTTP clients, configured in one place: a 4xx or 5xx is an answer to read, not an
//! error, and each phase of a call (connect, send, receive the head, receive the body) has the
//! caller's time limit.
//!
//! Per phase rather than one limit for the whole call: with a whole-call limit ureq resolves
//! each new connection's host on a thread of its own (so the resolution can time out), and that
//! thread, its stack mapped and unmapped, was about a fifth of the agent's CPU in a replayed
//! trial. The agent's addresses are loopback literals, resolved at once without a thread; a
//! stalled peer is still given up on, at most four limits later.

use std::time::Duration;

/// Bytes of a connection's output buffer: a request larger than it is sent in parts. ureq's
/// default (128 KiB) is zeroed for every connection, which showed in the agent's profile.
const OUTPUT_BUFFER_BYTES: usize = 16 << 10;

/// An HTTP client whose every phase of a call is bounded by `limit`.
pub(crate) fn client(limit: Duration) -> ureq::Agent {
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(limit))
        .timeout_send_request(Some(limit))
        .timeout_send_body(Some(limit))
        .timeout_recv_response(Some(limit))
        .timeout_recv_body(Some(limit))
        .output_buffer_size(OUTPUT_BUFFER_BYTES)
        .build();
    ureq::Agent::new_with_config(config)
}
