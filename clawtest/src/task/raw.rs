//! The task.yaml file as written: serde types that accept everything ClawEnvKit writes and
//! keep the source location of every value a later error may need to point at.
//!
//! Nothing here is checked beyond YAML syntax and basic shapes; [`super::validate`] turns a
//! [`RawTask`] into a [`super::Task`] and reports every problem at once.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_saphyr::Spanned;

/// One task.yaml, as parsed. Unknown top-level keys are accepted here (ClawEnvKit files
/// carry extra bookkeeping fields) and reported as warnings by validation.
#[derive(Debug, Deserialize)]
pub(crate) struct RawTask {
    pub(crate) task_id: Option<Spanned<String>>,
    pub(crate) task_name: Option<Spanned<String>>,
    pub(crate) prompt: Option<Spanned<String>>,
    pub(crate) scoring_components: Option<Spanned<Vec<RawComponent>>>,
    pub(crate) safety_checks: Option<Spanned<Vec<Spanned<Node>>>>,
    #[serde(default)]
    pub(crate) fixtures: Option<Value>,
    #[serde(default)]
    pub(crate) tools: Option<Vec<Spanned<RawTool>>>,
    #[serde(default)]
    pub(crate) files: Option<Vec<Spanned<RawFile>>>,
    /// Text, or (as Auto-ClawEval writes it) a list of `{step, action}` maps.
    #[allow(
        dead_code,
        reason = "ClawEnvKit's field, read with the rest (its `Debug` is what the fuzz target compares) but kept by no Task"
    )]
    pub(crate) reference_solution: Option<Value>,
    pub(crate) category: Option<String>,
    pub(crate) difficulty: Option<Spanned<String>>,
    #[allow(
        dead_code,
        reason = "ClawEnvKit's field, read with the rest (its `Debug` is what the fuzz target compares) but kept by no Task"
    )]
    pub(crate) claw_eval_id: Option<String>,
    // clawtest extensions.
    pub(crate) capability: Option<Spanned<String>>,
    pub(crate) limits: Option<Spanned<RawLimits>>,
    pub(crate) pass_threshold: Option<Spanned<f64>>,
    /// `{rate, seed, mode}`; checked by hand so that every mistake in it is reported.
    pub(crate) error_injection: Option<Spanned<Node>>,
    /// Task-local service definitions (the services description format), or names of
    /// catalogue services the task declares it uses.
    pub(crate) services: Option<Spanned<Vec<Spanned<Node>>>>,
    /// Closed-loop: intermediate goals checked while the agent works.
    pub(crate) checkpoints: Option<Spanned<Vec<Spanned<Node>>>>,
    /// Closed-loop: how the simulated user answers between rounds.
    pub(crate) feedback: Option<Spanned<Node>>,
    /// A correct solution: `{calls, answer, files}`.
    pub(crate) oracle: Option<Spanned<Node>>,
}

/// The top-level keys a task file may have; any other is reported as a warning.
pub(crate) const KNOWN_KEYS: [&str; 20] = [
    "task_id",
    "task_name",
    "prompt",
    "scoring_components",
    "safety_checks",
    "fixtures",
    "tools",
    "files",
    "reference_solution",
    "category",
    "difficulty",
    "claw_eval_id",
    "capability",
    "limits",
    "pass_threshold",
    "error_injection",
    "services",
    "checkpoints",
    "feedback",
    "oracle",
];

/// One `scoring_components` entry. The check stays an untyped map here because its required
/// parameters depend on its `type` and ClawEnvKit accepts several aliases.
#[derive(Debug, Deserialize)]
pub(crate) struct RawComponent {
    pub(crate) name: Option<Spanned<String>>,
    /// Any value, so that a weight written as text is reported with the rest, not alone.
    pub(crate) weight: Option<Spanned<Node>>,
    pub(crate) check: Option<Spanned<Node>>,
}

/// One `tools` entry: how the agent reaches a service route.
#[derive(Debug, Deserialize)]
pub(crate) struct RawTool {
    pub(crate) name: Option<Spanned<String>>,
    pub(crate) service: Option<Spanned<String>>,
    pub(crate) endpoint: Option<Spanned<String>>,
    pub(crate) method: Option<Spanned<String>>,
    pub(crate) description: Option<String>,
}

/// One `files` entry: a file copied from the task's folder into the workspace.
#[derive(Debug, Deserialize)]
pub(crate) struct RawFile {
    pub(crate) source: Option<Spanned<String>>,
    pub(crate) target: Option<Spanned<String>>,
}

/// `limits`: how long and how many turns a trial may take.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLimits {
    pub(crate) timeout_seconds: Option<Spanned<f64>>,
    pub(crate) max_turns: Option<Spanned<u32>>,
}

/// Any YAML value with the location of every node and every map key, for the parts of a task
/// whose shape depends on other values (checks, safety checks) and for finding unknown keys.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    /// A scalar or null, as JSON.
    Scalar(Value),
    List(Vec<Spanned<Node>>),
    /// Entries in document order; a key is text (YAML keys that are numbers or booleans
    /// are written as text).
    Map(Vec<(Spanned<String>, Spanned<Node>)>),
}

impl Node {
    /// The value as JSON, without locations.
    pub(crate) fn to_json(&self) -> Value {
        match self {
            Node::Scalar(value) => value.clone(),
            Node::List(items) => {
                Value::Array(items.iter().map(|item| item.value.to_json()).collect())
            }
            Node::Map(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(key, value)| (key.value.clone(), value.value.to_json()))
                    .collect(),
            ),
        }
    }

    /// The entry named `key` of a map: (key, value).
    pub(crate) fn entry(&self, key: &str) -> Option<(&Spanned<String>, &Spanned<Node>)> {
        match self {
            Node::Map(entries) => entries
                .iter()
                .find(|(name, _)| name.value == key)
                .map(|(name, value)| (name, value)),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Node, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any YAML value")
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Node, E> {
        Ok(Node::Scalar(Value::Bool(value)))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Node, E> {
        Ok(Node::Scalar(Value::from(value)))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Node, E> {
        Ok(Node::Scalar(Value::from(value)))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Node, E> {
        // NaN and infinities have no JSON form; they are kept as their YAML text.
        Ok(Node::Scalar(
            serde_json::Number::from_f64(value)
                .map_or_else(|| Value::String(value.to_string()), Value::Number),
        ))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Node, E> {
        Ok(Node::Scalar(Value::String(value.to_string())))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<Node, E> {
        Ok(Node::Scalar(Value::String(value)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Scalar(Value::Null))
    }

    fn visit_none<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Scalar(Value::Null))
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Node, D::Error> {
        Node::deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut sequence: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = sequence.next_element::<Spanned<Node>>()? {
            items.push(item);
        }
        Ok(Node::List(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Spanned<KeyText>>()? {
            let value = map.next_value::<Spanned<Node>>()?;
            let key = Spanned::new(key.value.0, key.referenced, key.defined);
            entries.push((key, value));
        }
        Ok(Node::Map(entries))
    }
}

/// A map key as text, as it is written: `0x1F:` is "0x1F" and `1.0:` is "1.0", as a direct
/// parse into a JSON map reads them; a null key (`~:`, or nothing before the colon) is "null",
/// as PyYAML and then JSON make it in ClawEnvKit.
struct KeyText(String);

impl<'de> Deserialize<'de> for KeyText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<KeyText, D::Error> {
        deserializer.deserialize_option(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = KeyText;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a map key that is text, a number or a boolean")
    }

    fn visit_none<E: de::Error>(self) -> Result<KeyText, E> {
        Ok(KeyText("null".to_string()))
    }

    fn visit_unit<E: de::Error>(self) -> Result<KeyText, E> {
        self.visit_none()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<KeyText, D::Error> {
        // Asked for as text, a plain scalar comes as written (a number keeps its spelling).
        deserializer.deserialize_str(self)
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<KeyText, E> {
        Ok(KeyText(value.to_string()))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<KeyText, E> {
        Ok(KeyText(value))
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<KeyText, E> {
        Ok(KeyText(value.to_string()))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<KeyText, E> {
        Ok(KeyText(value.to_string()))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<KeyText, E> {
        Ok(KeyText(value.to_string()))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<KeyText, E> {
        Ok(KeyText(value.to_string()))
    }

    fn visit_map<A: MapAccess<'de>>(self, _map: A) -> Result<KeyText, A::Error> {
        Err(de::Error::custom("a map key must be text"))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _sequence: A) -> Result<KeyText, A::Error> {
        Err(de::Error::custom("a map key must be text"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_keep_the_location_of_keys_and_values() {
        let node: Spanned<Node> =
            serde_saphyr::from_str("a: 1\nb:\n  - x\n  - {c: true}\n").expect("valid YAML");
        let (key, value) = node.value.entry("b").expect("b is there");
        assert_eq!((key.referenced.line(), key.referenced.column()), (2, 1));
        let Node::List(items) = &value.value else {
            panic!("b is a list")
        };
        let (c_key, c_value) = items[1].value.entry("c").expect("c is there");
        assert_eq!((c_key.referenced.line(), c_key.referenced.column()), (4, 6));
        assert_eq!(c_value.value, Node::Scalar(Value::Bool(true)));
        assert_eq!(
            node.value.to_json(),
            serde_json::json!({"a": 1, "b": ["x", {"c": true}]})
        );
    }
}
