//! Scoring components, checkpoints and safety checks: check types and parameters located
//! per value, weights and the judge cap, safety structure and safety/scoring contradictions
//! (checks 2–5, 8 for scoring actions, and 11).

use super::*;
use crate::spec::check::pattern_regex;

/// Parses one check map (scoring component or checkpoint), reporting located problems, and
/// checks what every check needs: a gradable type, a known service and action, a valid regex.
pub(super) fn parse_located_check(
    field: &str,
    node: &Spanned<Node>,
    catalogue: &Catalogue,
    findings: &mut Findings,
) -> Option<Check> {
    let json = node.value.to_json();
    let Some(map) = json.as_object() else {
        findings.error(
            Problem::new(
                field,
                format!(
                    "expected a map `{{type, ...}}`, found {}",
                    check::kind(&json)
                ),
                at(node),
            )
            .with_help("e.g. `check: {type: keywords_present, keywords: [done]}`"),
        );
        return None;
    };
    let type_name = map.get("type").and_then(Value::as_str).unwrap_or_default();
    if let Node::Map(entries) = &node.value {
        let known = check::known_parameters(type_name);
        if !known.is_empty() {
            for (key, _) in entries {
                if key.value == "type" || known.contains(&key.value.as_str()) {
                    continue;
                }
                findings.warn(
                    Problem::new(
                        format!("{field}.{}", key.value),
                        format!(
                            "`{type_name}` checks do not read `{}`; it is ignored",
                            key.value
                        ),
                        at(key),
                    )
                    .with_help(suggestion(
                        &key.value,
                        known,
                        "its parameters are",
                    )),
                );
            }
        }
    }
    let check = match check::parse_check(map) {
        Ok(check) => check,
        Err(parameter_problems) => {
            report_parameter_problems(field, node, type_name, parameter_problems, findings);
            return None;
        }
    };
    if let Some(service) = check_service(&check) {
        match catalogue.get(service) {
            None => findings.error(unknown_service(
                format!("{field}.service"),
                service,
                catalogue,
                parameter_at(node, "service"),
            )),
            Some(description) => {
                let actions: Vec<&str> = description
                    .routes()
                    .iter()
                    .map(|route| route.action.as_str())
                    .collect();
                for (action, parameter) in check_actions(&check) {
                    if !actions.contains(&action) {
                        findings.error(
                            Problem::new(
                                format!("{field}.{parameter}"),
                                format!("`{action}` is not an action of service `{service}`"),
                                parameter_at(node, &parameter),
                            )
                            .with_help(suggestion(
                                action,
                                &actions,
                                &format!("the actions of `{service}` are"),
                            )),
                        );
                    }
                }
            }
        }
    }
    match &check {
        Check::PatternMatch { pattern } => {
            if let Some(problem) = pattern_problem(pattern) {
                findings.error(
                    Problem::new(
                        format!("{field}.pattern"),
                        problem.message,
                        parameter_at(node, "pattern"),
                    )
                    .with_help(problem.help),
                );
            }
        }
        Check::FileHashEquals { hash, .. }
            if hash.len() != 64 || !hash.chars().all(|c| c.is_ascii_hexdigit()) =>
        {
            findings.error(
                Problem::new(
                    format!("{field}.hash"),
                    "expected a SHA-256 digest: 64 hexadecimal digits",
                    parameter_at(node, "hash"),
                )
                .with_help("compute it with `sha256sum FILE`"),
            );
        }
        Check::KeywordsPresent { source, .. } | Check::KeywordsAbsent { source, .. }
            if *source != check::OutputSource::AgentOutput =>
        {
            findings.warn(
                Problem::new(
                    format!("{field}.in"),
                    "only `agent_output` can be read; any other source reads as empty text",
                    parameter_at(node, "in"),
                )
                .with_help("write `in: agent_output` or leave `in` out"),
            );
        }
        _ => {}
    }
    Some(check)
}

/// What is wrong with a `pattern_match` pattern, in words, with what to do instead.
struct PatternProblem {
    message: String,
    help: &'static str,
}

/// Whether `pattern` would fail to compile when grading. Parsing is what usually fails for a
/// pattern a person writes, and costs a fraction of compiling; compiling (what grading does)
/// only adds regex's size limit, so only patterns whose estimated size comes near it are
/// compiled here (`\w{1000}` and `(\w{15}){15}` are over it; `\d{4}-\d{2}` is far below).
fn pattern_problem(pattern: &str) -> Option<PatternProblem> {
    let hir = match pattern_parser().parse(pattern) {
        Ok(hir) => hir,
        Err(error) => {
            let first = error.to_string();
            let last = first.lines().last().unwrap_or("invalid").trim().to_string();
            let help = if last.contains("not supported") {
                // Python's `re` has these; Rust's `regex` (linear time) does not.
                "look-around and backreferences are not available: match the surrounding text itself, or use a keywords check"
            } else {
                ESCAPE_HELP
            };
            return Some(PatternProblem {
                message: format!("not a valid regular expression: {last}"),
                help,
            });
        }
    };
    if size_units(&hir) <= COMPILE_ABOVE_UNITS {
        return None;
    }
    match pattern_regex(pattern) {
        Ok(_) => None,
        Err(regex::Error::CompiledTooBig(limit)) => Some(PatternProblem {
            message: format!(
                "the regular expression is too large to compile: over regex's limit of {} MiB",
                limit / (1024 * 1024)
            ),
            help: "use an open repetition (`\\w+`, `.{20,}`) instead of a large count, or match a shorter piece of the output",
        }),
        Err(error) => Some(PatternProblem {
            message: format!("not a valid regular expression: {error}"),
            help: ESCAPE_HELP,
        }),
    }
}

const ESCAPE_HELP: &str = "escape special characters such as ( [ { with a backslash";

/// The parser configured as grading compiles patterns (case-insensitive, [`pattern_regex`]).
fn pattern_parser() -> regex_syntax::Parser {
    regex_syntax::ParserBuilder::new()
        .case_insensitive(true)
        .build()
}

/// Patterns of more size units than this are compiled at validation. Measured on regex 1.12:
/// a unit compiles to at most ~150 bytes of NFA (`.{1,5000}`; most patterns 15–30), and regex
/// refuses a pattern from ~4 MiB of forward NFA (`(\w{15}){15}`, 203,776 units), so a pattern
/// of at most 4,096 units (≤ 600 KiB) is far inside the limit and need not be compiled.
const COMPILE_ABOVE_UNITS: u64 = 4096;

/// An estimate of a pattern's compiled size: a unit for each literal byte and class range,
/// multiplied by repetition counts. Depth is bounded by the parser's nesting limit.
fn size_units(hir: &regex_syntax::hir::Hir) -> u64 {
    use regex_syntax::hir::{Class, HirKind};
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => 1,
        HirKind::Literal(literal) => literal.0.len() as u64,
        HirKind::Class(Class::Unicode(class)) => class.ranges().len() as u64,
        HirKind::Class(Class::Bytes(class)) => class.ranges().len() as u64,
        // `{n,m}` compiles m copies of its body, `{n,}` n copies and a loop.
        HirKind::Repetition(repetition) => {
            let copies = u64::from(repetition.max.unwrap_or(repetition.min).max(1)) + 1;
            size_units(&repetition.sub).saturating_mul(copies)
        }
        HirKind::Capture(capture) => size_units(&capture.sub),
        HirKind::Concat(items) | HirKind::Alternation(items) => {
            items.iter().map(size_units).fold(0, u64::saturating_add)
        }
    }
}

/// Locates a check's parameter problems. A required parameter that is missing while the check
/// has a key its type does not read is most often that parameter under another name (`tool:`
/// for `action:`, `contain:` for `contains:`, an alias of another check type): the help says
/// which key to rename.
fn report_parameter_problems(
    field: &str,
    node: &Spanned<Node>,
    type_name: &str,
    problems: Vec<check::ParameterProblem>,
    findings: &mut Findings,
) {
    let known = check::known_parameters(type_name);
    let unread: Vec<(&str, Value)> = match &node.value {
        Node::Map(entries) if !known.is_empty() => entries
            .iter()
            .filter(|(key, _)| key.value != "type" && !known.contains(&key.value.as_str()))
            .map(|(key, value)| (key.value.as_str(), value.value.to_json()))
            .collect(),
        _ => Vec::new(),
    };
    let missing = problems.iter().filter(|problem| problem.missing).count();
    for problem in problems {
        let renamed = if problem.missing && problem.parameter != "type" {
            let parameter = problem.parameter.as_str();
            unread
                .iter()
                .find(|(key, _)| looks_renamed(key, parameter))
                .or(match (unread.as_slice(), missing) {
                    ([only], 1) => Some(only),
                    _ => None,
                })
                .map(|(key, value)| {
                    format!(
                        "`{type_name}` reads `{parameter}`, not `{key}`: write `{parameter}: {}`",
                        inline(value)
                    )
                })
        } else {
            None
        };
        let mut located = Problem::new(
            format!("{field}.{}", problem.parameter),
            problem.message,
            parameter_at(node, &problem.parameter),
        );
        located.help = renamed.or(problem.help);
        findings.error(located);
    }
}

/// Whether `key` reads as `parameter` written another way: a typo (`contain`), a shortening
/// (`tool` for `tool_name`) or a spelling out (`command` for `cmd`).
fn looks_renamed(key: &str, parameter: &str) -> bool {
    let spelled_out = || {
        let mut rest = key.chars();
        key.chars().next() == parameter.chars().next()
            && parameter
                .chars()
                .all(|wanted| rest.any(|found| found == wanted))
    };
    check::nearest(key, &[parameter]).is_some()
        || (key.len() >= 3 && parameter.starts_with(key))
        || spelled_out()
}

/// A value as it could be written after `key: ` in a flow map.
fn inline(value: &Value) -> String {
    match value {
        Value::String(text)
            if !text.is_empty()
                && text
                    .chars()
                    .all(|c| c.is_alphanumeric() || " _-./".contains(c))
                && !text.starts_with([' ', '-'])
                && !text.ends_with(' ')
                // Text that YAML would read as a number, boolean or null keeps its quotes.
                && text.parse::<f64>().is_err()
                && !["true", "false", "null", "yes", "no", "on", "off"]
                    .contains(&text.to_ascii_lowercase().as_str()) =>
        {
            text.clone()
        }
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(inline).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(entries) => format!(
            "{{{}}}",
            entries
                .iter()
                .map(|(key, value)| format!("{key}: {}", inline(value)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

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
        let name = match &component.name {
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
        };
        let weight = match &component.weight {
            Some(weight) => match weight.value.to_json() {
                Value::Number(number)
                    if number
                        .as_f64()
                        .is_some_and(|value| value >= 0.0 && value.is_finite()) =>
                {
                    let value = number.as_f64().unwrap_or_default();
                    weights.push((index, value, at(weight)));
                    Some(value)
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
        };
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
    components
}

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

pub(super) fn validate_safety(
    raw: &RawTask,
    tools: &[Tool],
    checks: &[LocatedCheck<'_>],
    catalogue: &Catalogue,
    findings: &mut Findings,
) -> Vec<Safety> {
    let Some(list) = &raw.safety_checks else {
        findings.error(
            Problem::new(
                "safety_checks",
                "missing: every task needs at least one safety check",
                Some(Position::START),
            )
            .with_help("e.g. `safety_checks: [{type: tool_not_called, tool_name: delete_task}]`"),
        );
        return Vec::new();
    };
    if list.value.is_empty() {
        findings.error(
            Problem::new("safety_checks", "needs at least one safety check", at(list))
                .with_help("e.g. `- {type: keywords_not_in_output, keywords: [password]}`"),
        );
    }
    // Names a `tool_not_called` may forbid: the offered tools and every action of the task's
    // services (forbidding an offered tool is allowed: the "dangerous button" pattern).
    let mut known: BTreeSet<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
    let mut services: BTreeSet<&str> = tools.iter().map(|tool| tool.service.as_str()).collect();
    services.extend(
        checks
            .iter()
            .filter_map(|located| check_service(&located.check)),
    );
    for service in services {
        if let Some(description) = catalogue.get(service) {
            known.extend(
                description
                    .routes()
                    .iter()
                    .map(|route| route.action.as_str()),
            );
        }
    }
    let known: Vec<&str> = known.into_iter().collect();
    let mut safety = Vec::new();
    for (index, entry) in list.value.iter().enumerate() {
        let position = at(entry);
        let json = entry.value.to_json();
        let Some(map) = json.as_object() else {
            findings.error(
                Problem::new(
                    format!("safety_checks[{index}]"),
                    format!(
                        "expected a map `{{type, ...}}`, found {}",
                        check::kind(&json)
                    ),
                    position,
                )
                .with_help("e.g. `- {type: tool_not_called, tool_name: delete_task}` or `- {type: keywords_not_in_output, keywords: [password]}`"),
            );
            continue;
        };
        let type_name = map.get("type").and_then(Value::as_str).unwrap_or_default();
        if let Node::Map(entries) = &entry.value {
            let parameters = check::known_parameters(type_name);
            if !parameters.is_empty() {
                for (key, _) in entries {
                    if key.value != "type" && !parameters.contains(&key.value.as_str()) {
                        findings.warn(
                            Problem::new(
                                format!("safety_checks[{index}].{}", key.value),
                                format!(
                                    "`{type_name}` does not read `{}`; it is ignored",
                                    key.value
                                ),
                                at(key),
                            )
                            .with_help(suggestion(
                                &key.value,
                                parameters,
                                "its parameters are",
                            )),
                        );
                    }
                }
            }
        }
        match check::parse_safety(map) {
            Ok(check) => {
                if let SafetyCheck::ToolNotCalled { tool_name, .. } = &check {
                    let place = parameter_at(entry, "tool_name");
                    if tool_name.is_empty() {
                        findings.error(Problem::new(
                            format!("safety_checks[{index}].tool_name"),
                            "must not be empty",
                            place,
                        ));
                    } else if !known.is_empty() && !known.contains(&tool_name.as_str()) {
                        findings.error(
                            Problem::new(
                                format!("safety_checks[{index}].tool_name"),
                                format!("`{tool_name}` is not a tool of this task nor an action of its services, so it could never be called"),
                                place,
                            )
                            .with_help(suggestion(tool_name, &known, "the known names are")),
                        );
                    }
                    // Check 11: forbidding what a scoring check requires can never pass.
                    for located in checks {
                        if !located.field.starts_with("scoring_components") {
                            continue;
                        }
                        // A count of 0 asks that the action never happens: that agrees with
                        // forbidding it (`audit_count_equals: {action: delete_task, count: 0}`).
                        if let Check::AuditCountEquals { count, .. }
                        | Check::AuditCountGte { count, .. } = &located.check
                            && *count <= 0
                        {
                            continue;
                        }
                        for (action, parameter) in check_actions(&located.check) {
                            if action == tool_name {
                                findings.error(
                                    Problem::new(
                                        format!("{}.{parameter}", located.field),
                                        format!("contradiction: this check requires `{action}`, which safety_checks[{index}] forbids"),
                                        parameter_at(located.node, &parameter),
                                    )
                                    .with_help("remove the component or the safety check: no trial could pass both"),
                                );
                            }
                        }
                    }
                }
                safety.push(Safety {
                    check,
                    line: position.map(|position| position.line),
                });
            }
            Err(parameter_problems) => report_parameter_problems(
                &format!("safety_checks[{index}]"),
                entry,
                type_name,
                parameter_problems,
                findings,
            ),
        }
    }
    safety
}

#[cfg(test)]
mod tests {
    use super::*;

    fn units(pattern: &str) -> u64 {
        size_units(&pattern_parser().parse(pattern).unwrap())
    }

    #[test]
    fn the_size_estimate_multiplies_repetitions_and_adds_sequences() {
        assert_eq!(units("(?-i)abc"), 3);
        assert_eq!(units("(?-i)a{5}"), 6);
        assert_eq!(units("(?-i)(ab){2,}|c"), 7);
        assert_eq!(units(r"\w{1000}"), units(r"\w") * 1001);
        assert!(units(r"\d{4}-\d{2}") <= COMPILE_ABOVE_UNITS);
    }

    #[test]
    fn patterns_over_the_size_limit_are_problems_however_they_get_there() {
        for pattern in [
            r"\w{1000}".to_string(),
            r"(\w{15}){15}".into(),
            r"\w".repeat(3000),
        ] {
            let problem = pattern_problem(&pattern).expect("too large");
            assert!(problem.message.contains("too large"), "{}", problem.message);
        }
        for pattern in [
            r"\w{50}",
            r"(pending|done)+",
            r"[a-z]{1000}",
            r"\d{4}-\d{2}",
        ] {
            assert!(pattern_problem(pattern).is_none(), "{pattern}");
        }
        let unbalanced = pattern_problem("(pending").expect("unclosed group");
        assert!(
            unbalanced
                .message
                .starts_with("not a valid regular expression")
        );
    }
}
