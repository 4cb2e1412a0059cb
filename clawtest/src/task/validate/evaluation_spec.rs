//! The sections of the model supervisor's evaluation spec (UniClawBench's `eval_rule.md` as
//! YAML), read from a located tree, every mistake at its field: the required contract,
//! ground truth and weighted rubric; the score caps and unrecoverable outcomes, each with a
//! check validated as a scoring check is; `pass_at` and the continue-vs-fail guidance.
//! `evaluation.rs` finds the tree (in the task, or in a file beside it).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;
use serde_saphyr::Spanned;

use super::checks::parse_located_check;
use super::{Findings, WEIGHT_TOLERANCE, at, suggestion};
use crate::services::Catalogue;
use crate::task::Check;
use crate::task::error::Problem;
use crate::task::evaluation::{Evaluation, Guidance, RubricLine, ScoreCap, Unrecoverable};
use crate::task::raw::Node;

/// The keys of an evaluation spec, in `eval_rule.md`'s order.
pub(super) const KEYS: [&str; 11] = [
    "philosophy",
    "contract",
    "sources",
    "ground_truth",
    "checkpoints",
    "score_caps",
    "pass_at",
    "continue_vs_fail",
    "references",
    "dynamic_content",
    "instructions",
];

/// What the spec is read against: the task's folder (a file's place), the services (the
/// checks' actions) and the names its components already take.
pub(super) struct Context<'a> {
    pub(super) folder: &'a Path,
    pub(super) catalogue: &'a Catalogue,
    pub(super) taken: BTreeSet<String>,
}

/// The spec in `node` (fields named from `prefix`), read from `file` when it is one.
pub(super) fn spec(
    node: &Spanned<Node>,
    prefix: &str,
    file: Option<PathBuf>,
    context: &Context<'_>,
    findings: &mut Findings,
) -> Option<Evaluation> {
    let Node::Map(entries) = &node.value else {
        findings.error(
            Problem::new(
                format!("{prefix}(document)"),
                "expected a map of the evaluation's sections (contract, ground_truth, checkpoints, …)",
                at(node),
            )
            .with_help(format!("its keys: {}", KEYS.join(", "))),
        );
        return None;
    };
    let before = findings.errors.len();
    let field = |key: &str| format!("{prefix}{key}");
    for (key, _) in entries {
        if !KEYS.contains(&key.value.as_str()) {
            findings.error(
                Problem::new(
                    field(&key.value),
                    "unknown key of the evaluation spec",
                    at(key),
                )
                .with_help(suggestion(
                    &key.value,
                    &KEYS,
                    "the evaluation spec has",
                )),
            );
        }
    }
    let text = |key: &str, findings: &mut Findings| text_of(node, &field(key), findings);
    let required = |key: &str, findings: &mut Findings| {
        let found = text(key, findings);
        if found.is_none() && node.value.entry(key).is_none() {
            findings.error(
                Problem::new(field(key), "missing required section", at(node))
                    .with_help(format!("add `{key}:` (UniClawBench's eval_rule.md has it)")),
            );
        }
        found
    };
    let contract = required("contract", findings);
    let ground_truth = ground_truth(node, &field("ground_truth"), findings);
    let checkpoints = rubric(node, &field("checkpoints"), findings);
    let mut names = context.taken.clone();
    let score_caps = score_caps(node, &field("score_caps"), context, &mut names, findings);
    let pass_at = share(node, &field("pass_at"), false, findings);
    let guidance = guidance(
        node,
        &field("continue_vs_fail"),
        context,
        &mut names,
        findings,
    );
    if let (Some(pass_at), Some(fail_below)) = (pass_at, guidance.fail_below)
        && fail_below >= pass_at
    {
        findings.error(Problem::new(
            field("continue_vs_fail.fail_below"),
            format!("{fail_below} is not below pass_at ({pass_at}): no round could continue"),
            node.value
                .entry("continue_vs_fail")
                .and_then(|(_, value)| at(value)),
        ));
    }
    let evaluation = Evaluation {
        file,
        philosophy: text("philosophy", findings),
        contract: contract.unwrap_or_default(),
        sources: text("sources", findings),
        ground_truth: ground_truth.unwrap_or_default(),
        checkpoints,
        score_caps,
        pass_at,
        guidance,
        references: text("references", findings),
        dynamic_content: text("dynamic_content", findings),
        instructions: text("instructions", findings),
    };
    (findings.errors.len() == before).then_some(evaluation)
}

/// The optional text section `field` (its last part the key) of `node`.
fn text_of(node: &Spanned<Node>, field: &str, findings: &mut Findings) -> Option<String> {
    let key = field.rsplit('.').next().unwrap_or(field);
    let (_, value) = node.value.entry(key)?;
    match &value.value {
        Node::Scalar(Value::String(text)) if !text.trim().is_empty() => Some(text.clone()),
        _ => {
            findings.error(Problem::new(field, "expected non-empty text", at(value)));
            None
        }
    }
}

/// `ground_truth`: text, or structured values (UniClawBench's `ground_truth.json`), kept as
/// the JSON the supervisor reads.
fn ground_truth(node: &Spanned<Node>, field: &str, findings: &mut Findings) -> Option<String> {
    let Some((_, value)) = node.value.entry("ground_truth") else {
        findings.error(
            Problem::new(field, "missing required section", at(node)).with_help(
                "add `ground_truth:` with the hidden values the evidence is checked against",
            ),
        );
        return None;
    };
    match value.value.to_json() {
        Value::String(text) if !text.trim().is_empty() => Some(text),
        json @ (Value::Object(_) | Value::Array(_)) => serde_json::to_string_pretty(&json).ok(),
        _ => {
            findings.error(Problem::new(
                field,
                "expected text, or a map or list of the hidden values",
                at(value),
            ));
            None
        }
    }
}

/// The entries of the list section `key` of `node`, each a map (a problem for any other).
fn maps<'a>(
    node: &'a Spanned<Node>,
    field: &str,
    shape: &str,
    findings: &mut Findings,
) -> Vec<(usize, &'a Spanned<Node>)> {
    let key = field.rsplit('.').next().unwrap_or(field);
    let Some((_, value)) = node.value.entry(key) else {
        return Vec::new();
    };
    let Node::List(items) = &value.value else {
        findings.error(Problem::new(
            field,
            format!("expected a list of {shape}"),
            at(value),
        ));
        return Vec::new();
    };
    items
        .iter()
        .enumerate()
        .filter(|(index, item)| {
            let is_map = matches!(item.value, Node::Map(_));
            if !is_map {
                findings.error(Problem::new(
                    format!("{field}[{index}]"),
                    format!("expected a map {shape}"),
                    at(item),
                ));
            }
            is_map
        })
        .collect()
}

/// The keys of `entry` that are none of `keys`.
fn unknown_keys(entry: &Spanned<Node>, field: &str, keys: &[&str], findings: &mut Findings) {
    if let Node::Map(entries) = &entry.value {
        for (key, _) in entries {
            if !keys.contains(&key.value.as_str()) {
                findings.error(
                    Problem::new(format!("{field}.{}", key.value), "unknown key", at(key))
                        .with_help(suggestion(&key.value, keys, "it has")),
                );
            }
        }
    }
}

/// The name of `entry` at `field`: required, text, not yet in `names` (which it joins).
fn name(
    entry: &Spanned<Node>,
    field: &str,
    names: &mut BTreeSet<String>,
    findings: &mut Findings,
) -> String {
    match entry.value.entry("name") {
        Some((
            _,
            Spanned {
                value: Node::Scalar(Value::String(name)),
                ..
            },
        )) if !name.trim().is_empty() => {
            if !names.insert(name.clone()) {
                findings.error(Problem::new(
                    format!("{field}.name"),
                    format!(
                        "`{name}` is taken: a component, cap or unrecoverable outcome has this name"
                    ),
                    entry.value.entry("name").and_then(|(_, value)| at(value)),
                ));
            }
            name.clone()
        }
        Some((_, value)) => {
            findings.error(Problem::new(
                format!("{field}.name"),
                "expected a name",
                at(value),
            ));
            String::new()
        }
        None => {
            findings.error(Problem::new(
                format!("{field}.name"),
                "missing required field",
                at(entry),
            ));
            String::new()
        }
    }
}

/// The number at `field` (its last part the key) of `node`, a share of 1: in 0..1 (`open`:
/// 1 excluded, a cap of 1 caps nothing) or in (0, 1].
fn share(node: &Spanned<Node>, field: &str, open: bool, findings: &mut Findings) -> Option<f64> {
    let key = field.rsplit('.').next().unwrap_or(field);
    let (_, value) = node.value.entry(key)?;
    let number = value.value.to_json().as_f64();
    let fits = |number: f64| match open {
        true => (0.0..1.0).contains(&number),
        false => number > 0.0 && number <= 1.0,
    };
    match number {
        Some(number) if fits(number) => Some(number),
        _ => {
            let range = if open {
                "from 0 to below 1"
            } else {
                "above 0 and at most 1"
            };
            findings.error(Problem::new(
                field,
                format!("must be a number {range}, found {}", value.value.to_json()),
                at(value),
            ));
            None
        }
    }
}

/// A check of `entry` (its `check` key), validated as a scoring check is.
fn entry_check(
    entry: &Spanned<Node>,
    field: &str,
    context: &Context<'_>,
    findings: &mut Findings,
) -> Option<Check> {
    match entry.value.entry("check") {
        Some((_, check)) => parse_located_check(
            &format!("{field}.check"),
            check,
            context.catalogue,
            findings,
        ),
        None => {
            findings.error(
                Problem::new(format!("{field}.check"), "missing required field", at(entry))
                    .with_help("add `check: {type: ..., ...}`: what clawtest's grader checks, so that it binds deterministically"),
            );
            None
        }
    }
}

/// `checkpoints` (§5): weighted lines summing to 1, each `{name, weight, criterion}`.
fn rubric(node: &Spanned<Node>, field: &str, findings: &mut Findings) -> Vec<RubricLine> {
    if node.value.entry("checkpoints").is_none() {
        findings.error(
            Problem::new(field, "missing required section", at(node)).with_help(
                "add `checkpoints: [{name, weight, criterion}, …]`, weights summing to 1",
            ),
        );
        return Vec::new();
    }
    let shape = "`{name, weight, criterion}`";
    let mut names = BTreeSet::new();
    let mut lines = Vec::new();
    for (index, entry) in maps(node, field, shape, findings) {
        let here = format!("{field}[{index}]");
        unknown_keys(entry, &here, &["name", "weight", "criterion"], findings);
        let name = name(entry, &here, &mut names, findings);
        let weight = share(entry, &format!("{here}.weight"), false, findings);
        if entry.value.entry("weight").is_none() {
            findings.error(Problem::new(
                format!("{here}.weight"),
                "missing required field",
                at(entry),
            ));
        }
        let criterion = text_of(entry, &format!("{here}.criterion"), findings);
        if entry.value.entry("criterion").is_none() {
            findings.error(
                Problem::new(
                    format!("{here}.criterion"),
                    "missing required field",
                    at(entry),
                )
                .with_help(
                    "say what satisfies the line: the observable result and the evidence it needs",
                ),
            );
        }
        if let (Some(weight), Some(criterion)) = (weight, criterion) {
            lines.push(RubricLine {
                name,
                weight,
                criterion,
            });
        }
    }
    let sum: f64 = lines.iter().map(|line| line.weight).sum();
    if !lines.is_empty() && (sum - 1.0).abs() > WEIGHT_TOLERANCE {
        findings.error(
            Problem::new(
                field,
                format!(
                    "weights sum to {}; they must sum to 1.0 ± {WEIGHT_TOLERANCE}",
                    (sum * 1000.0).round() / 1000.0
                ),
                node.value
                    .entry("checkpoints")
                    .and_then(|(_, value)| at(value)),
            )
            .with_help("change the weights so that they sum to 1.0"),
        );
    }
    if lines.is_empty()
        && let Some((_, value)) = node.value.entry("checkpoints")
        && matches!(&value.value, Node::List(items) if items.is_empty())
    {
        findings.error(Problem::new(
            field,
            "needs at least one rubric line",
            at(value),
        ));
    }
    lines
}

/// `score_caps` (§6): `{name, cap, when, check}` each.
fn score_caps(
    node: &Spanned<Node>,
    field: &str,
    context: &Context<'_>,
    names: &mut BTreeSet<String>,
    findings: &mut Findings,
) -> Vec<ScoreCap> {
    let mut caps = Vec::new();
    for (index, entry) in maps(node, field, "`{name, cap, when, check}`", findings) {
        let here = format!("{field}[{index}]");
        unknown_keys(entry, &here, &["name", "cap", "when", "check"], findings);
        let name = name(entry, &here, names, findings);
        if entry.value.entry("cap").is_none() {
            findings.error(Problem::new(
                format!("{here}.cap"),
                "missing required field",
                at(entry),
            ));
        }
        let cap = share(entry, &format!("{here}.cap"), true, findings);
        let when = when(entry, &here, findings);
        let check = entry_check(entry, &here, context, findings);
        if let (Some(cap), Some(when), Some(check)) = (cap, when, check) {
            caps.push(ScoreCap {
                name,
                cap,
                when,
                check,
            });
        }
    }
    caps
}

/// The `when` of a cap or an unrecoverable outcome: the failure mode in words, required.
fn when(entry: &Spanned<Node>, field: &str, findings: &mut Findings) -> Option<String> {
    if entry.value.entry("when").is_none() {
        findings.error(
            Problem::new(format!("{field}.when"), "missing required field", at(entry))
                .with_help("say the failure mode in words, for the supervisor's model"),
        );
        return None;
    }
    text_of(entry, &format!("{field}.when"), findings)
}

/// `continue_vs_fail` (§7): `{continue?, fail?, fail_below?, unrecoverable?}`.
fn guidance(
    node: &Spanned<Node>,
    field: &str,
    context: &Context<'_>,
    names: &mut BTreeSet<String>,
    findings: &mut Findings,
) -> Guidance {
    let mut guidance = Guidance::default();
    let Some((_, block)) = node.value.entry("continue_vs_fail") else {
        return guidance;
    };
    const KEYS: [&str; 4] = ["continue", "fail", "fail_below", "unrecoverable"];
    if !matches!(block.value, Node::Map(_)) {
        findings.error(Problem::new(
            field,
            "expected a map `{continue?, fail?, fail_below?, unrecoverable?}`",
            at(block),
        ));
        return guidance;
    }
    unknown_keys(block, field, &KEYS, findings);
    for (key, list) in [
        ("continue", &mut guidance.continue_when),
        ("fail", &mut guidance.fail_when),
    ] {
        if let Some((_, value)) = block.value.entry(key) {
            match value.value.to_json() {
                Value::Array(items) if items.iter().all(Value::is_string) => {
                    list.extend(items.iter().filter_map(Value::as_str).map(str::to_string));
                }
                _ => findings.error(Problem::new(
                    format!("{field}.{key}"),
                    "expected a list of text: the scenarios, in words",
                    at(value),
                )),
            }
        }
    }
    guidance.fail_below = share(block, &format!("{field}.fail_below"), false, findings);
    let shape = "`{name, when, check}`";
    for (index, entry) in maps(block, &format!("{field}.unrecoverable"), shape, findings) {
        let here = format!("{field}.unrecoverable[{index}]");
        unknown_keys(entry, &here, &["name", "when", "check"], findings);
        let name = name(entry, &here, names, findings);
        let when = when(entry, &here, findings);
        let check = entry_check(entry, &here, context, findings);
        if let (Some(when), Some(check)) = (when, check) {
            guidance
                .unrecoverable
                .push(Unrecoverable { name, when, check });
        }
    }
    guidance
}
