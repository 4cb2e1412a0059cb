//! The audit log's entries: one per request a trial's services answered, with the fault the
//! injector put on it, if any. The world writes them; the grader and the reports read them.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::fault::FaultKind;

/// One recorded request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// Monotonic from 1 within the world (restarted when the world is reset).
    pub seq: u64,
    /// The service whose route was called.
    pub service: String,
    /// The task's tool name bound to this endpoint, else the canonical action.
    pub action: String,
    /// The request's path (empty in an audit imported from ClawEnvKit, which has none).
    pub endpoint: String,
    /// The validated parameters (pydantic `model_dump()`: declared fields, defaults
    /// applied); for a rejected request, the body object as received ({} if none).
    pub params: Value,
    /// The HTTP status answered (an injected fault's 429 or 500 included).
    pub status: u16,
    /// The answer's body; reads as a [`Value`].
    pub response: RecordedBody,
    /// The fault injected on this call, if any.
    pub fault: Option<FaultKind>,
    /// A slow fault's delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// `clock + seq seconds`, RFC 3339 UTC.
    pub at: String,
}

impl AuditEntry {
    /// Whether the call reached the service: no fault, or a slow one (served normally, its
    /// answer held back). An injected 429 or 500 never reached it.
    pub fn reached_service(&self) -> bool {
        !self.fault.is_some_and(FaultKind::is_error)
    }
}

/// An answer body as the audit keeps it: the JSON text the caller was sent, parsed into a
/// [`Value`] the first time it is read. It reads (`Deref`), compares, prints and
/// serializes as that value.
///
/// Why text: recording a call used to deep-copy the answer's value, and a list answer's
/// value is ten or so maps of strings — the copy, and the fresh memory it kept (about five
/// times the text's size), were most of the cost of a list request. The text is written
/// for the HTTP answer anyway, and graders read few of the answers a trial records. It is
/// shared (`Arc`), so the HTTP layer sends the same bytes without a copy and cloning an
/// entry does not copy its answer.
#[derive(Clone)]
pub struct RecordedBody {
    text: Arc<[u8]>,
    value: std::sync::OnceLock<Value>,
}

impl RecordedBody {
    /// A body from the JSON text of a value, as `serde_json` writes it (text that does not
    /// parse reads as null).
    pub(crate) fn from_text(text: Arc<[u8]>) -> Self {
        RecordedBody {
            text,
            value: std::sync::OnceLock::new(),
        }
    }

    /// The JSON text, compact, as sent.
    pub fn text(&self) -> &[u8] {
        &self.text
    }

    /// The body as JSON, parsed from the text the first time it is asked for (the services'
    /// hot path keeps only the text; the grader and the reports read values).
    pub(crate) fn value(&self) -> &Value {
        // The text was written from a value by serde_json, so it parses back to it.
        self.value
            .get_or_init(|| serde_json::from_slice(&self.text).unwrap_or(Value::Null))
    }
}

/// The compact JSON text of a value.
pub(crate) fn json_text(value: &Value) -> Arc<[u8]> {
    Arc::from(serde_json::to_vec(value).unwrap_or_else(|_| b"null".to_vec()))
}

impl From<Value> for RecordedBody {
    fn from(value: Value) -> Self {
        RecordedBody {
            text: json_text(&value),
            value: std::sync::OnceLock::from(value),
        }
    }
}

impl std::ops::Deref for RecordedBody {
    type Target = Value;
    fn deref(&self) -> &Value {
        self.value()
    }
}

impl PartialEq for RecordedBody {
    /// Equal values have equal text: serde_json writes a value one way (maps in order).
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl std::fmt::Debug for RecordedBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.value().fmt(f)
    }
}

impl Serialize for RecordedBody {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for RecordedBody {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(RecordedBody::from)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_recorded_body_reads_compares_and_serializes_as_its_value() {
        let value = json!({"tasks": [{"task_id": "t1", "n": 1.5}], "total": 1});
        let recorded = RecordedBody::from_text(json_text(&value));
        assert_eq!(*recorded, value);
        assert_eq!(recorded["tasks"][0]["n"], 1.5);
        assert_eq!(recorded, RecordedBody::from(value.clone()));
        assert_ne!(recorded, RecordedBody::from(json!({"total": 1})));
        assert_eq!(
            serde_json::to_string_pretty(&recorded).unwrap(),
            serde_json::to_string_pretty(&value).unwrap()
        );
        assert_eq!(format!("{recorded:?}"), format!("{value:?}"));
        let back: RecordedBody = serde_json::from_str(&value.to_string()).unwrap();
        assert_eq!(back, recorded);
    }
}
