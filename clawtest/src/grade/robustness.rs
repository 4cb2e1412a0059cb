//! Robustness: how many injected faults the agent recovered from.
//!
//! A fault (an injected 429 or 500) counts as recovered when a later call of the same action
//! on the same service succeeds within the next [`RECOVERY_WINDOW`] entries of that service
//! (ClawEnvKit's rule). Unlike ClawEnvKit, an injected *delay* is not an error, so it is neither
//! counted as a fault nor as a recovery.

use serde::Serialize;

use crate::trajectory::{AuditEntry, FaultKind};

/// How many later entries of the same service may hold the successful retry.
const RECOVERY_WINDOW: usize = 4;

/// Faults and recoveries of one trial.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Robustness {
    /// How many injected errors (429 or 500) the audit holds; injected delays do not count.
    pub injected: usize,
    /// How many of them were followed, within the service's next 4 calls, by a successful
    /// call of the same action.
    pub recovered: usize,
    /// recovered / injected, 1 when nothing was injected.
    pub score: f64,
    /// The faults that were not recovered.
    pub unrecovered: Vec<UnrecoveredFault>,
}

/// An injected fault the agent never recovered from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnrecoveredFault {
    /// Its audit sequence number.
    pub seq: u64,
    /// The service the faulted call went to.
    pub service: String,
    /// The faulted call's action (the tool name, else the canonical action).
    pub action: String,
}

fn is_error_fault(entry: &AuditEntry) -> bool {
    matches!(
        entry.fault,
        Some(FaultKind::RateLimited | FaultKind::ServerError)
    )
}

fn succeeded(entry: &AuditEntry) -> bool {
    entry.fault.is_none() && (200..300).contains(&entry.status)
}

/// Measures robustness over an audit log in sequence order.
pub(super) fn measure(audit: &[AuditEntry]) -> Robustness {
    let mut injected = 0;
    let mut unrecovered = Vec::new();
    for (index, fault) in audit
        .iter()
        .enumerate()
        .filter(|(_, entry)| is_error_fault(entry))
    {
        injected += 1;
        let recovered = audit[index + 1..]
            .iter()
            .filter(|later| later.service == fault.service)
            .take(RECOVERY_WINDOW)
            .any(|later| later.action == fault.action && succeeded(later));
        if !recovered {
            unrecovered.push(UnrecoveredFault {
                seq: fault.seq,
                service: fault.service.clone(),
                action: fault.action.clone(),
            });
        }
    }
    let recovered = injected - unrecovered.len();
    let score = if injected == 0 {
        1.0
    } else {
        recovered as f64 / injected as f64
    };
    Robustness {
        injected,
        recovered,
        score,
        unrecovered,
    }
}
