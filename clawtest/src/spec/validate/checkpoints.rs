//! `checkpoints`: named checks for the closed loop, each with an optional turn and feedback,
//! validated like scoring checks.

use std::collections::BTreeSet;

use serde_json::Value;
use serde_saphyr::Spanned;

use super::checks::parse_located_check;
use super::{Findings, LocatedCheck, at, suggestion};
use crate::services::Catalogue;
use crate::spec::Checkpoint;
use crate::spec::error::Problem;
use crate::spec::raw::{Node, RawTask};

/// `checkpoints`: named checks for the closed loop, validated like scoring checks.
pub(super) fn validate_checkpoints<'a>(
    raw: &'a RawTask,
    catalogue: &Catalogue,
    findings: &mut Findings,
    checks: &mut Vec<LocatedCheck<'a>>,
) -> Vec<Checkpoint> {
    let mut checkpoints = Vec::new();
    let Some(list) = &raw.checkpoints else {
        return checkpoints;
    };
    let mut names = BTreeSet::new();
    for (index, entry) in list.value.iter().enumerate() {
        let field = |name: &str| format!("checkpoints[{index}].{name}");
        let position = at(entry);
        if !matches!(entry.value, Node::Map(_)) {
            findings.error(Problem::new(
                format!("checkpoints[{index}]"),
                "expected a map `{name, check, after_turn?, feedback?}`",
                position,
            ));
            continue;
        }
        for (key, _) in match &entry.value {
            Node::Map(entries) => entries.as_slice(),
            _ => &[],
        } {
            const KEYS: [&str; 4] = ["name", "check", "after_turn", "feedback"];
            if !KEYS.contains(&key.value.as_str()) {
                findings.error(
                    Problem::new(field(&key.value), "unknown checkpoint key", at(key))
                        .with_help(suggestion(&key.value, &KEYS, "a checkpoint has")),
                );
            }
        }
        let name = match entry.value.entry("name") {
            Some((
                _,
                name_node @ Spanned {
                    value: Node::Scalar(Value::String(name)),
                    ..
                },
            )) if !name.is_empty() => {
                if !names.insert(name.clone()) {
                    findings.error(
                        Problem::new(
                            field("name"),
                            format!("checkpoint `{name}` is defined twice"),
                            at(name_node),
                        )
                        .with_help("give each checkpoint its own name, so reports tell them apart"),
                    );
                }
                name.clone()
            }
            _ => {
                findings.error(
                    Problem::new(field("name"), "missing required field", position)
                        .with_help("add `name: <what this checkpoint checks>`"),
                );
                String::new()
            }
        };
        let after_turn = match entry.value.entry("after_turn") {
            None
            | Some((
                _,
                Spanned {
                    value: Node::Scalar(Value::Null),
                    ..
                },
            )) => None,
            Some((_, value)) => match value.value.to_json().as_u64() {
                Some(turn) if turn >= 1 && turn <= u64::from(u32::MAX) => Some(turn as u32),
                _ => {
                    findings.error(
                        Problem::new(
                            field("after_turn"),
                            "must be a whole number of turns, at least 1",
                            at(value),
                        )
                        .with_help("e.g. `after_turn: 2`; leave it out to check after every turn"),
                    );
                    None
                }
            },
        };
        let feedback = match entry.value.entry("feedback") {
            None => None,
            Some((
                _,
                Spanned {
                    value: Node::Scalar(Value::String(text)),
                    ..
                },
            )) => Some(text.clone()),
            Some((_, value)) => {
                findings.error(Problem::new(
                    field("feedback"),
                    "expected text: what the user says when the checkpoint is not met",
                    at(value),
                ));
                None
            }
        };
        let Some((_, check_node)) = entry.value.entry("check") else {
            findings.error(
                Problem::new(field("check"), "missing required field", position)
                    .with_help("add `check: {type: ..., ...}`"),
            );
            continue;
        };
        if let Some(check) = parse_located_check(&field("check"), check_node, catalogue, findings) {
            checks.push(LocatedCheck {
                field: field("check"),
                node: check_node,
                check: check.clone(),
            });
            checkpoints.push(Checkpoint {
                name,
                check,
                after_turn,
                feedback,
                line: position.map(|p| p.line),
            });
        }
    }
    checkpoints
}
