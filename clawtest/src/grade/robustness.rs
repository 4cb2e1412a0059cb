//! Robustness: how many injected faults the agent recovered from.
//!
//! A fault (an injected 429 or 500) counts as recovered when a later call of the same action
//! on the same service succeeds (answers below 400 without a fault) within the next
//! [`RECOVERY_WINDOW`] entries of that service (ClawEnvKit's rule, `engine.py`'s
//! `_calculate_robustness`). Unlike ClawEnvKit, an injected *delay* is not an error, so it
//! is neither counted as a fault nor as a recovery. For an audit imported from ClawEnvKit,
//! under [`RobustnessRule::ErrorStatuses`] an error is any entry answered 400 or above,
//! faulted or not, which makes this exactly engine.py's count for an imported audit.

use serde::Serialize;

use crate::trajectory::{AuditEntry, FaultKind, RobustnessRule};

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

fn is_error(entry: &AuditEntry, rule: RobustnessRule) -> bool {
    match rule {
        RobustnessRule::InjectedFaults => matches!(
            entry.fault,
            Some(FaultKind::RateLimited | FaultKind::ServerError)
        ),
        RobustnessRule::ErrorStatuses => entry.status >= 400,
    }
}

/// engine.py's `status < 400`; clawtest's own services answer 200, 404, 405, 422 or a
/// fault, so for them this is "answered 200". (An imported audit has no faults.)
fn succeeded(entry: &AuditEntry) -> bool {
    entry.fault.is_none() && entry.status < 400
}

/// Measures robustness over an audit log in sequence order.
pub(super) fn measure(audit: &[AuditEntry], rule: RobustnessRule) -> Robustness {
    let mut injected = 0;
    let mut unrecovered = Vec::new();
    for (index, fault) in audit
        .iter()
        .enumerate()
        .filter(|(_, entry)| is_error(entry, rule))
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
