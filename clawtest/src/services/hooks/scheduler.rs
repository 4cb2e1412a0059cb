//! scheduler's hook: a job's execution history.

use serde_json::{Value, json};

use super::{HookInput, HookResult, records};
use crate::services::python;
use crate::services::store::Collections;

/// `job_history`: the job's last `limit` (default 10) executions and their total; not
/// found for an unknown `job_id`.
pub(super) fn job_history(input: &HookInput<'_>, store: &Collections) -> HookResult {
    let id = input.param("job_id");
    let Some(job) = records(store, input.collection_name())
        .into_iter()
        .find(|j| j.get("job_id").unwrap_or(&json!("")) == &id)
    else {
        return HookResult::not_found();
    };
    let history = job
        .get("execution_history")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let total = history.len();
    let mut limited = history;
    python::truncate(&mut limited, input.param("limit").as_i64().unwrap_or(10));
    HookResult::body(json!({"job_id": id, "history": limited, "total": total}))
}
