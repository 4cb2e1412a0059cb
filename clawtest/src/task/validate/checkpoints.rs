//! `checkpoints`: the hidden supervisor's goals for the closed loop, each a name, a weight,
//! a check (any scoring type or an `llm_judge` rubric), an optional hidden reference, an
//! optional first round and public feedback, a hidden score cap and a hidden `unrecoverable`
//! flag, validated like scoring components.

use std::collections::BTreeSet;

use serde_json::Value;
use serde_saphyr::Spanned;

use super::checks::parse_located_check;
use super::{Findings, LocatedCheck, at, suggestion};
use crate::services::Catalogue;
use crate::task::Checkpoint;
use crate::task::error::{Position, Problem};
use crate::task::raw::{Node, RawTask};

/// `checkpoints`: named checks for the closed loop, validated like scoring checks.
pub(super) fn validate_checkpoints<'a>(
    raw: &'a RawTask,
    components: &[crate::task::Component],
    catalogue: &Catalogue,
    findings: &mut Findings,
    checks: &mut Vec<LocatedCheck<'a>>,
) -> Vec<Checkpoint> {
    let mut checkpoints = Vec::new();
    let Some(list) = &raw.checkpoints else {
        return checkpoints;
    };
    let mut names = BTreeSet::new();
    // (index, weight, position) of every checkpoint that states a weight.
    let mut weights = Vec::new();
    for (index, entry) in list.value.iter().enumerate() {
        let field = |name: &str| format!("checkpoints[{index}].{name}");
        let position = at(entry);
        if !matches!(entry.value, Node::Map(_)) {
            findings.error(Problem::new(
                format!("checkpoints[{index}]"),
                "expected a map `{name, check, weight?, reference?, after_turn?, feedback?, cap?, unrecoverable?}`",
                position,
            ));
            continue;
        }
        unknown_keys(entry, index, findings);
        let name = checkpoint_name(entry, index, components, &mut names, findings);
        let after_turn = after_turn(entry, index, findings);
        let cap = cap(entry, index, findings);
        let unrecoverable = unrecoverable(entry, index, findings);
        let feedback = text_field(
            entry,
            &field("feedback"),
            "expected text: what the user says when the checkpoint is not met",
            findings,
        );
        let reference = text_field(
            entry,
            &field("reference"),
            "expected text: the hidden reference answer the supervisor's judge compares with",
            findings,
        );
        let weight = checkpoint_weight(entry, index, findings).map(|(weight, position)| {
            weights.push((index, weight, position));
            weight
        });
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
                weight: weight.unwrap_or_default(),
                check,
                reference,
                after_turn,
                feedback,
                cap,
                unrecoverable,
                line: position.map(|p| p.line),
            });
        }
    }
    check_weights(list, &weights, findings, &mut checkpoints);
    checkpoints
}

/// A checkpoint's keys that are none of the eight it may have.
fn unknown_keys(entry: &Spanned<Node>, index: usize, findings: &mut Findings) {
    const KEYS: [&str; 8] = [
        "name",
        "check",
        "weight",
        "reference",
        "after_turn",
        "feedback",
        "cap",
        "unrecoverable",
    ];
    let Node::Map(entries) = &entry.value else {
        return;
    };
    for (key, _) in entries {
        if !KEYS.contains(&key.value.as_str()) {
            findings.error(
                Problem::new(
                    format!("checkpoints[{index}].{}", key.value),
                    "unknown checkpoint key",
                    at(key),
                )
                .with_help(suggestion(&key.value, &KEYS, "a checkpoint has")),
            );
        }
    }
}

/// The checkpoint's `name`: required, its own among the checkpoints and the components.
fn checkpoint_name(
    entry: &Spanned<Node>,
    index: usize,
    components: &[crate::task::Component],
    names: &mut BTreeSet<String>,
    findings: &mut Findings,
) -> String {
    let field = format!("checkpoints[{index}].name");
    match entry.value.entry("name") {
        Some((
            _,
            name_node @ Spanned {
                value: Node::Scalar(Value::String(name)),
                ..
            },
        )) if !name.is_empty() => {
            if components.iter().any(|component| &component.name == name) {
                findings.error(
                    Problem::new(
                        field,
                        format!("`{name}` is also the name of a scoring component"),
                        at(name_node),
                    )
                    .with_help("a round's grade lists both: give the checkpoint its own name"),
                );
            } else if !names.insert(name.clone()) {
                findings.error(
                    Problem::new(
                        field,
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
                Problem::new(field, "missing required field", at(entry))
                    .with_help("add `name: <what this checkpoint checks>`"),
            );
            String::new()
        }
    }
}

/// `after_turn`: a whole number of turns, at least 1, or nothing.
fn after_turn(entry: &Spanned<Node>, index: usize, findings: &mut Findings) -> Option<u32> {
    match entry.value.entry("after_turn") {
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
                        format!("checkpoints[{index}].after_turn"),
                        "must be a whole number of turns, at least 1",
                        at(value),
                    )
                    .with_help("e.g. `after_turn: 2`; leave it out to check after every turn"),
                );
                None
            }
        },
    }
}

/// `cap`: the most a round that misses the checkpoint may score, from 0 to below 1; or nothing.
fn cap(entry: &Spanned<Node>, index: usize, findings: &mut Findings) -> Option<f64> {
    let (_, value) = entry.value.entry("cap")?;
    match value.value.to_json().as_f64() {
        Some(cap) if cap.is_finite() && (0.0..1.0).contains(&cap) => Some(cap),
        _ => {
            findings.error(
                Problem::new(
                    format!("checkpoints[{index}].cap"),
                    "must be a number from 0 to below 1: the most a round that misses it scores",
                    at(value),
                )
                .with_help("e.g. `cap: 0.4`; leave it out for no cap"),
            );
            None
        }
    }
}

/// `unrecoverable`: `true` or `false` (the default).
fn unrecoverable(entry: &Spanned<Node>, index: usize, findings: &mut Findings) -> bool {
    match entry.value.entry("unrecoverable") {
        None => false,
        Some((
            _,
            Spanned {
                value: Node::Scalar(Value::Bool(flag)),
                ..
            },
        )) => *flag,
        Some((_, value)) => {
            findings.error(
                Problem::new(
                    format!("checkpoints[{index}].unrecoverable"),
                    "must be true or false",
                    at(value),
                )
                .with_help("`unrecoverable: true` fails the round that misses it: no later round can mend it"),
            );
            false
        }
    }
}

/// `weight`: above 0 and at most 1, with its position; or nothing.
fn checkpoint_weight(
    entry: &Spanned<Node>,
    index: usize,
    findings: &mut Findings,
) -> Option<(f64, Option<Position>)> {
    let (_, value) = entry.value.entry("weight")?;
    match value.value.to_json().as_f64() {
        Some(weight) if weight.is_finite() && weight > 0.0 && weight <= 1.0 => {
            Some((weight, at(value)))
        }
        _ => {
            findings.error(
                Problem::new(
                    format!("checkpoints[{index}].weight"),
                    "must be a number above 0 and at most 1",
                    at(value),
                )
                .with_help("e.g. `weight: 0.5`; leave every weight out to share 1 equally"),
            );
            None
        }
    }
}

/// Either every checkpoint has a weight and they sum to 1 (as components' do), or none has
/// one and they share 1 equally.
fn check_weights(
    list: &Spanned<Vec<Spanned<Node>>>,
    weights: &[(usize, f64, Option<Position>)],
    findings: &mut Findings,
    checkpoints: &mut [Checkpoint],
) {
    if weights.is_empty() {
        let share = 1.0 / checkpoints.len().max(1) as f64;
        for checkpoint in checkpoints.iter_mut() {
            checkpoint.weight = share;
        }
        return;
    }
    if weights.len() != list.value.len() {
        let missing = (0..list.value.len())
            .find(|index| !weights.iter().any(|(weighed, _, _)| weighed == index))
            .unwrap_or_default();
        findings.error(
            Problem::new(
                format!("checkpoints[{missing}].weight"),
                "some checkpoints have a weight and this one has none",
                list.value.get(missing).and_then(at),
            )
            .with_help("give every checkpoint a weight (summing to 1), or none to share 1 equally"),
        );
        return;
    }
    let sum: f64 = weights.iter().map(|(_, weight, _)| weight).sum();
    if (sum - 1.0).abs() > super::WEIGHT_TOLERANCE {
        findings.error(
            Problem::new(
                "checkpoints",
                format!(
                    "weights sum to {}; they must sum to 1.0 ± {}",
                    (sum * 1000.0).round() / 1000.0,
                    super::WEIGHT_TOLERANCE
                ),
                weights
                    .last()
                    .and_then(|(_, _, position)| *position)
                    .or(at(list)),
            )
            .with_help("change the weights so that they sum to 1.0"),
        );
    }
}

/// An optional text field of a checkpoint: absent, text, or an error saying what it holds.
fn text_field(
    entry: &Spanned<Node>,
    field: &str,
    expected: &str,
    findings: &mut Findings,
) -> Option<String> {
    let key = field.rsplit('.').next().unwrap_or(field);
    match entry.value.entry(key) {
        None => None,
        Some((
            _,
            Spanned {
                value: Node::Scalar(Value::String(text)),
                ..
            },
        )) if !text.trim().is_empty() => Some(text.clone()),
        Some((_, value)) => {
            findings.error(Problem::new(field, expected, at(value)));
            None
        }
    }
}
