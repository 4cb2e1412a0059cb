//! `feedback.evaluation` written back: the model supervisor's evaluation spec as its
//! sections, or the name of the file it was read from.

use serde_json::{Map, Value};

use super::{check, sort, sorted};
use crate::task::Evaluation;

/// `evaluation:`: the name of its file when it was read from one (the file is the author's
/// and stays as it is), else the spec's sections.
pub(super) fn entry(evaluation: &Evaluation) -> Value {
    if let Some(file) = &evaluation.file {
        return Value::from(file.to_string_lossy().as_ref());
    }
    let mut entry = Map::new();
    let mut text = |key: &str, value: &Option<String>| {
        if let Some(value) = value {
            entry.insert(key.into(), Value::from(value.as_str()));
        }
    };
    text("philosophy", &evaluation.philosophy);
    text("sources", &evaluation.sources);
    text("references", &evaluation.references);
    text("dynamic_content", &evaluation.dynamic_content);
    text("instructions", &evaluation.instructions);
    entry.insert("contract".into(), Value::from(evaluation.contract.as_str()));
    entry.insert(
        "ground_truth".into(),
        Value::from(evaluation.ground_truth.as_str()),
    );
    let rubric = evaluation.checkpoints.iter().map(|line| {
        Value::Object(sorted([
            ("name", Value::from(line.name.as_str())),
            ("weight", Value::from(line.weight)),
            ("criterion", Value::from(line.criterion.as_str())),
        ]))
    });
    entry.insert("checkpoints".into(), rubric.collect());
    if !evaluation.score_caps.is_empty() {
        let caps = evaluation.score_caps.iter().map(|cap| {
            Value::Object(sorted([
                ("name", Value::from(cap.name.as_str())),
                ("cap", Value::from(cap.cap)),
                ("when", Value::from(cap.when.as_str())),
                ("check", check(&cap.check)),
            ]))
        });
        entry.insert("score_caps".into(), caps.collect());
    }
    if let Some(pass_at) = evaluation.pass_at {
        entry.insert("pass_at".into(), Value::from(pass_at));
    }
    let guidance = &evaluation.guidance;
    let mut block = Map::new();
    if !guidance.continue_when.is_empty() {
        block.insert(
            "continue".into(),
            Value::from(guidance.continue_when.clone()),
        );
    }
    if !guidance.fail_when.is_empty() {
        block.insert("fail".into(), Value::from(guidance.fail_when.clone()));
    }
    if let Some(fail_below) = guidance.fail_below {
        block.insert("fail_below".into(), Value::from(fail_below));
    }
    if !guidance.unrecoverable.is_empty() {
        let outcomes = guidance.unrecoverable.iter().map(|outcome| {
            Value::Object(sorted([
                ("name", Value::from(outcome.name.as_str())),
                ("when", Value::from(outcome.when.as_str())),
                ("check", check(&outcome.check)),
            ]))
        });
        block.insert("unrecoverable".into(), outcomes.collect());
    }
    if !block.is_empty() {
        entry.insert("continue_vs_fail".into(), Value::Object(sort(block)));
    }
    Value::Object(sort(entry))
}
