//! The ClawEnvKit audit import: a trajectory from the files ClawEnvKit's grader reads, so its
//! users can grade their results with clawtest (`cargo clawtest grade TASK --audit FILE`).

use super::{AuditEntry, RobustnessRule, Trajectory, WorkspaceFile};
use crate::task::Task;

/// A trajectory from ClawEnvKit's grading inputs, so its users can re-grade their results:
/// the audit as its grader consumes it (`{service: [{action, params, status}]}`, grading.json's
/// `audit_data`; a `_injected_errors` list, if present, is read like a service's), the agent's
/// output, and the workspace files. ClawEnvKit keeps no order across services, so entries are
/// numbered service by service in file order; every check reads one service at a time, so no
/// score depends on it.
///
/// Every entry is read as engine.py reads it: the checks count it whatever its status, and
/// robustness follows [`RobustnessRule::ErrorStatuses`] (every entry answered 400 or above
/// is an error, recovered when the same action answers below 400 within that service's next
/// 4 entries; an injected delay is merged by ClawEnvKit with status 200, a plain call).
pub(crate) fn from_clawenvkit(
    task: &Task,
    audit: &serde_json::Value,
    output: String,
    workspace: std::collections::BTreeMap<String, WorkspaceFile>,
) -> Result<Trajectory, String> {
    let services = audit
        .as_object()
        .ok_or("the audit must be a JSON map of service name → list of calls")?;
    let mut entries = Vec::new();
    for (service, calls) in services {
        // ClawEnvKit's raw injected-error log names no service per entry list; its entries
        // may carry a `service` field.
        let service = match service.as_str() {
            "_injected_errors" => None,
            name => Some(name),
        };
        let calls = calls
            .as_array()
            .ok_or_else(|| format!("audit[{service:?}] must be a list of calls"))?;
        for (index, call) in calls.iter().enumerate() {
            let field = |name: &str| call.get(name).cloned().unwrap_or(serde_json::Value::Null);
            let action = field("action")
                .as_str()
                .map(str::to_string)
                .ok_or_else(|| format!("audit[{service:?}][{index}] has no `action`"))?;
            let status = match field("status") {
                serde_json::Value::Null => 200,
                value => value
                    .as_u64()
                    .and_then(|status| u16::try_from(status).ok())
                    .ok_or_else(|| {
                        format!(
                            "audit[{service:?}][{index}].status must be an HTTP status, not {value}"
                        )
                    })?,
            };
            let service_name = match service {
                Some(name) => name.to_string(),
                None => field("service").as_str().unwrap_or_default().to_string(),
            };

            entries.push((
                field("timestamp").as_str().unwrap_or_default().to_string(),
                AuditEntry {
                    seq: 0,
                    service: service_name,
                    endpoint: String::new(),
                    action,
                    params: match field("params") {
                        serde_json::Value::Null => serde_json::json!({}),
                        params => params,
                    },
                    status,
                    response: field("response").into(),
                    fault: None,
                    delay_ms: None,
                    at: String::new(),
                },
            ));
        }
    }
    // ClawEnvKit merges its injected errors into the audit by time; do the same when the calls
    // carry timestamps (ISO 8601 text sorts by time), keeping file order otherwise.
    entries.sort_by(|left, right| left.0.cmp(&right.0));
    let mut entries: Vec<AuditEntry> = entries
        .into_iter()
        .map(|(at, entry)| AuditEntry { at, ..entry })
        .collect();
    for (index, entry) in entries.iter_mut().enumerate() {
        entry.seq = index as u64 + 1;
    }
    Ok(Trajectory::without_harness(
        &task.id,
        entries,
        output,
        workspace,
        RobustnessRule::ErrorStatuses,
    ))
}
