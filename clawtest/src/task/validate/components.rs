//! `scoring_components` (checks 2–4): at least three, each a name, a weight and a check;
//! weights that sum to 1.0 (with help that says which weight to change), and the cap on the
//! `llm_judge` weight.

use std::collections::BTreeMap;

use serde_json::Value;
use serde_saphyr::Spanned;

use super::checks::parse_located_check;
use super::{
    Findings, JUDGE_CAP_WITH_TOOLS, JUDGE_CAP_WITHOUT_TOOLS, LocatedCheck, MIN_COMPONENTS,
    WEIGHT_TOLERANCE, at, round,
};
use crate::services::Catalogue;
use crate::task::Component;
use crate::task::check::Check;
use crate::task::error::{Position, Problem};
use crate::task::raw::{RawComponent, RawTask};

/// `scoring_components`: the task's scored checks, each also kept in `checks` for the
/// checks across fields (services, safety contradictions).
pub(super) fn validate_components<'a>(
    raw: &'a RawTask,
    catalogue: &Catalogue,
    has_tools: bool,
    findings: &mut Findings,
    checks: &mut Vec<LocatedCheck<'a>>,
) -> Vec<Component> {
    let Some(list) = &raw.scoring_components else {
        findings.error(
            Problem::new(
                "scoring_components",
                "missing required field",
                Some(Position::START),
            )
            .with_help("add at least 3 components: `{name, weight, check: {type, ...}}`"),
        );
        return Vec::new();
    };
    if list.value.len() < MIN_COMPONENTS {
        findings.error(
            Problem::new(
                "scoring_components",
                format!(
                    "needs at least {MIN_COMPONENTS} components, found {}",
                    list.value.len()
                ),
                at(list),
            )
            .with_help("score the outcome from several sides: e.g. an audit check, a keywords check and an llm_judge"),
        );
    }
    let mut components = Vec::new();
    // (index, weight, where) of every weighted component, for the weight-sum help.
    let mut weights: Vec<(usize, f64, Option<Position>)> = Vec::new();
    let mut judge_weight = 0.0;
    let mut judge_position = None;
    let mut names: BTreeMap<String, usize> = BTreeMap::new();
    for (index, component) in list.value.iter().enumerate() {
        let field = |name: &str| format!("scoring_components[{index}].{name}");
        let name = component_name(list, index, &mut names, findings);
        let weight = component_weight(component, index, findings);
        if let (Some(weight), Some(node)) = (weight, &component.weight) {
            weights.push((index, weight, at(node)));
        }
        let Some(check_node) = &component.check else {
            findings.error(
                Problem::new(
                    field("check"),
                    "missing required field",
                    component.name.as_ref().and_then(at),
                )
                .with_help("add `check: {type: ..., ...}`"),
            );
            continue;
        };
        let Some(check) = parse_located_check(&field("check"), check_node, catalogue, findings)
        else {
            continue;
        };
        if let (Check::LlmJudge { .. }, Some(weight)) = (&check, weight) {
            judge_weight += weight;
            judge_position = judge_position.or(component.weight.as_ref().and_then(at));
        }
        checks.push(LocatedCheck {
            field: field("check"),
            node: check_node,
            check: check.clone(),
        });
        if let Some(weight) = weight
            && !name.is_empty()
        {
            components.push(Component {
                name,
                weight,
                check,
                line: at(check_node).map(|position| position.line),
            });
        }
    }
    check_weight_sum(list, &weights, findings);
    check_judge_cap(list, has_tools, judge_weight, judge_position, findings);
    components
}

/// A component's `name`: required; a second component of the same name is a warning.
fn component_name(
    list: &Spanned<Vec<RawComponent>>,
    index: usize,
    names: &mut BTreeMap<String, usize>,
    findings: &mut Findings,
) -> String {
    let component = &list.value[index];
    let field = |name: &str| format!("scoring_components[{index}].{name}");
    match &component.name {
        Some(name) if !name.value.is_empty() => {
            if let Some(first) = names.insert(name.value.clone(), index) {
                findings.warn(
                    Problem::new(
                        field("name"),
                        format!(
                            "`{}` is also the name of scoring_components[{first}]",
                            name.value
                        ),
                        at(name),
                    )
                    .with_help("give each component its own name, so reports tell them apart"),
                );
            }
            name.value.clone()
        }
        _ => {
            // The component has no span of its own: point at the name if it is written
            // empty, else at the component's first located value.
            let place = component.name.as_ref().and_then(at).or_else(|| {
                [
                    component.weight.as_ref().and_then(at),
                    component.check.as_ref().and_then(at),
                ]
                .into_iter()
                .flatten()
                .min_by_key(|position| (position.line, position.column))
                .or(at(list))
            });
            findings.error(
                Problem::new(field("name"), "missing required field", place)
                    .with_help("add `name: <what this component checks>`"),
            );
            String::new()
        }
    }
}

/// A component's `weight`: a number ≥ 0 (text and percentages named as such).
fn component_weight(
    component: &RawComponent,
    index: usize,
    findings: &mut Findings,
) -> Option<f64> {
    let field = |name: &str| format!("scoring_components[{index}].{name}");
    match &component.weight {
        Some(weight) => match weight.value.to_json() {
            Value::Number(number)
                if number
                    .as_f64()
                    .is_some_and(|value| value >= 0.0 && value.is_finite()) =>
            {
                number.as_f64()
            }
            Value::String(text) if text.trim().parse::<f64>().is_ok() => {
                findings.error(
                    Problem::new(
                        field("weight"),
                        format!("expected a number, found the text \"{text}\""),
                        at(weight),
                    )
                    .with_help(format!("write `weight: {}` without quotes", text.trim())),
                );
                None
            }
            Value::String(text)
                if text
                    .trim()
                    .strip_suffix('%')
                    .is_some_and(|percent| percent.trim().parse::<f64>().is_ok()) =>
            {
                let percent = text.trim().trim_end_matches('%').trim();
                let share = percent
                    .parse::<f64>()
                    .map_or(0.0, |value| round(value / 100.0));
                findings.error(
                    Problem::new(
                        field("weight"),
                        format!("expected a number, found the percentage \"{text}\""),
                        at(weight),
                    )
                    .with_help(format!(
                        "weights are shares of 1.0: write `weight: {share}`"
                    )),
                );
                None
            }
            other => {
                findings.error(
                    Problem::new(
                        field("weight"),
                        format!("must be a number ≥ 0, found {other}"),
                        at(weight),
                    )
                    .with_help("e.g. `weight: 0.2` (the weights of all components sum to 1.0)"),
                );
                None
            }
        },
        None => {
            findings.error(
                Problem::new(
                    field("weight"),
                    "missing required field",
                    component.name.as_ref().and_then(at),
                )
                .with_help("add `weight: 0.2` (the weights of all components sum to 1.0)"),
            );
            None
        }
    }
}

/// The weights sum to 1.0: an error past the tolerance, a warning short of it, with help that
/// says which weight to change. Only when every weight is a number (else that is the error).
fn check_weight_sum(
    list: &Spanned<Vec<RawComponent>>,
    weights: &[(usize, f64, Option<Position>)],
    findings: &mut Findings,
) {
    let sum: f64 = weights.iter().map(|(_, weight, _)| weight).sum();
    // A weight that is missing or not a number is already reported; a sum without it would
    // only add a second, misleading error.
    let all_weighed = weights.len() == list.value.len();
    if all_weighed && !weights.is_empty() && (sum - 1.0).abs() > 1e-9 {
        // The weight to change: the only one above 1 if there is one (a share cannot exceed
        // the whole, so that is the mistake), else the last.
        let above_one: Vec<_> = weights
            .iter()
            .filter(|(_, weight, _)| *weight > 1.0)
            .collect();
        let (fix_index, fix_weight, fix_position) = match above_one.as_slice() {
            [only] => **only,
            _ => weights[weights.len() - 1],
        };
        let fixed = round(1.0 - (sum - fix_weight));
        let help = if fixed > 0.0 {
            format!("set scoring_components[{fix_index}].weight to {fixed} to make the sum 1.0")
        } else {
            format!("divide every weight by {} to make the sum 1.0", round(sum))
        };
        if (sum - 1.0).abs() > WEIGHT_TOLERANCE {
            findings.error(
                Problem::new(
                    "scoring_components",
                    format!(
                        "weights sum to {}; they must sum to 1.0 ± {WEIGHT_TOLERANCE}",
                        round(sum)
                    ),
                    fix_position.or(at(list)),
                )
                .with_help(help),
            );
        } else if (sum - 1.0).abs() >= 0.005 {
            findings.warn(
                Problem::new(
                    "scoring_components",
                    format!(
                        "weights sum to {}, not 1.0; scores are renormalised by the sum",
                        round(sum)
                    ),
                    fix_position.or(at(list)),
                )
                .with_help(help),
            );
        }
    }
}

/// The `llm_judge` components weigh at most their cap, lower with tools than without.
fn check_judge_cap(
    list: &Spanned<Vec<RawComponent>>,
    has_tools: bool,
    judge_weight: f64,
    judge_position: Option<Position>,
    findings: &mut Findings,
) {
    let cap = if has_tools {
        JUDGE_CAP_WITH_TOOLS
    } else {
        JUDGE_CAP_WITHOUT_TOOLS
    };
    if judge_weight > cap + 1e-9 {
        let reason = if has_tools {
            "with tools"
        } else {
            "without tools"
        };
        findings.error(
            Problem::new(
                "scoring_components",
                format!(
                    "llm_judge components weigh {} in total; at most {cap} is allowed {reason}",
                    round(judge_weight)
                ),
                judge_position.or(at(list)),
            )
            .with_help(format!(
                "move {} of the judge weight to rule-based checks (audit_*, keywords_*, pattern_match)",
                round(judge_weight - cap)
            )),
        );
    }
}
