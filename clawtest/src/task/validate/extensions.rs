//! clawtest's own task fields: `limits`, `error_injection` and the closed-loop `feedback`.

use std::time::Duration;

use serde_json::Value;
use serde_saphyr::Spanned;

use super::evaluation::{Context, validate_evaluation};
use super::{Findings, at, percentage, suggestion};
use crate::task::check;
use crate::task::error::Problem;
use crate::task::raw::{Node, RawTask};
use crate::task::{
    Barrier, ErrorInjection, Feedback, InjectionMode, SimulatorKind, SupervisorKind, TaskLimits,
};

/// The longest time limit a task may set, in seconds (a week): a longer one is a mistake, and
/// deadlines past it would overflow the clocks they are added to.
const MAX_SECONDS: f64 = 604_800.0;

pub(super) fn validate_limits(raw: &RawTask, findings: &mut Findings) -> TaskLimits {
    let mut limits = TaskLimits::default();
    let Some(raw_limits) = &raw.limits else {
        return limits;
    };
    if let Some(timeout) = &raw_limits.value.timeout_seconds {
        if timeout.value > 0.0 && timeout.value <= MAX_SECONDS {
            limits.timeout = Duration::from_secs_f64(timeout.value);
        } else {
            findings.error(
                Problem::new(
                    "limits.timeout_seconds",
                    format!("must be a positive number of seconds, at most {MAX_SECONDS} (a week)"),
                    at(timeout),
                )
                .with_help("e.g. `timeout_seconds: 300` (the default)"),
            );
        }
    }
    if let Some(turns) = &raw_limits.value.max_turns {
        if turns.value > 0 {
            limits.max_turns = turns.value;
        } else {
            findings.error(
                Problem::new("limits.max_turns", "must be at least 1", at(turns))
                    .with_help("e.g. `max_turns: 20` (the default)"),
            );
        }
    }
    limits
}

/// `error_injection: {rate, seed, mode, reason}`: what it names overrides the suite's
/// `[faults]`. A task that opts out (`rate: 0`) without a `reason` is warned about: a task
/// that hides from faults makes the suite's robustness gate measure less, silently.
pub(super) fn validate_error_injection(
    raw: &RawTask,
    findings: &mut Findings,
) -> Option<ErrorInjection> {
    let block = raw.error_injection.as_ref()?;
    let mut injection = ErrorInjection::default();
    let entries = match &block.value {
        Node::Map(entries) => entries.as_slice(),
        Node::Scalar(Value::Null) => &[],
        other => {
            findings.error(
                Problem::new(
                    "error_injection",
                    format!(
                        "expected a map `{{rate, seed, mode}}`, found {}",
                        check::kind(&other.to_json())
                    ),
                    at(block),
                )
                .with_help("e.g. `error_injection: {rate: 0.25, seed: 7, mode: uniform}`"),
            );
            return None;
        }
    };
    let mut valid = true;
    for (key, value) in entries {
        let field = format!("error_injection.{}", key.value);
        let json = value.value.to_json();
        match key.value.as_str() {
            "rate" => match json.as_f64() {
                Some(rate) if (0.0..=1.0).contains(&rate) => injection.rate = Some(rate),
                _ => {
                    valid = false;
                    findings.error(
                        Problem::new(
                            field,
                            format!("must be a probability between 0 and 1, found {json}"),
                            at(value),
                        )
                        .with_help(
                            match json.as_f64().and_then(percentage) {
                                Some(share) => {
                                    format!("{json} looks like a percentage: write `rate: {share}`")
                                }
                                None => "e.g. `rate: 0.25`: one request in four gets a fault"
                                    .to_string(),
                            },
                        ),
                    );
                }
            },
            "seed" => match json.as_u64() {
                Some(seed) => injection.seed = Some(seed),
                None => {
                    valid = false;
                    findings.error(
                        Problem::new(field, format!("must be a whole number ≥ 0, found {json}"), at(value))
                            .with_help("any fixed number makes the faults the same in every run, e.g. `seed: 7`"),
                    );
                }
            },
            "mode" => match json.as_str() {
                Some("uniform") => injection.mode = Some(InjectionMode::Uniform),
                Some("burst") => injection.mode = Some(InjectionMode::Burst),
                _ => {
                    valid = false;
                    let text = json
                        .as_str()
                        .map_or_else(|| json.to_string(), str::to_string);
                    findings.error(
                        Problem::new(field, format!("unknown mode `{text}`"), at(value))
                            .with_help(suggestion(&text, &["uniform", "burst"], "one of")),
                    );
                }
            },
            "reason" => match json.as_str().map(str::trim) {
                Some(reason) if !reason.is_empty() => injection.reason = Some(reason.to_string()),
                _ => {
                    valid = false;
                    findings.error(
                        Problem::new(field, format!("must be a sentence, found {json}"), at(value))
                            .with_help("say why the task changes the suite's faults, e.g. `reason: \"the agent under test must not retry a payment\"`"),
                    );
                }
            },
            other => {
                valid = false;
                findings.error(
                    Problem::new(field, "unknown key", at(key)).with_help(suggestion(
                        other,
                        &["rate", "seed", "mode", "reason"],
                        "error_injection has",
                    )),
                );
            }
        }
    }
    if valid && injection.rate == Some(0.0) && injection.reason.is_none() {
        findings.warn(
            Problem::new(
                "error_injection.rate",
                "turns the suite's faults off without saying why",
                at(block),
            )
            .with_help("add `reason: \"…\"` to the block: why this task must not see 429s, 500s or slow answers (the suite's robustness gate measures one task less)"),
        );
    }
    valid.then_some(injection)
}

/// The keys of a `feedback` block.
const FEEDBACK_KEYS: [&str; 11] = [
    "max_rounds",
    "simulator",
    "barrier",
    "messages",
    "persona",
    "model",
    "round_timeout_seconds",
    "total_timeout_seconds",
    "supervisor",
    "supervisor_model",
    "evaluation",
];

/// `feedback: {max_rounds, messages, persona, simulator, barrier, model, round_timeout_seconds,
/// total_timeout_seconds, supervisor, supervisor_model, evaluation}` for the closed loop;
/// `has_checkpoints` says whether the template simulator has public checkpoint names to
/// speak from; `context` is what the model supervisor's evaluation spec is read against.
pub(super) fn validate_feedback(
    raw: &RawTask,
    has_checkpoints: bool,
    context: &Context<'_>,
    findings: &mut Findings,
) -> Option<Feedback> {
    let block = raw.feedback.as_ref()?;
    let Node::Map(entries) = &block.value else {
        findings.error(
            Problem::new(
                "feedback",
                "expected a map `{max_rounds?, simulator?, barrier?, messages?, persona?, model?, round_timeout_seconds?, total_timeout_seconds?, supervisor?, supervisor_model?, evaluation?}`",
                at(block),
            )
            .with_help("e.g. `feedback: {max_rounds: 2, messages: [\"Please also email Bob.\"]}`"),
        );
        return None;
    };
    let mut feedback = Feedback::default();
    let mut barrier = None;
    let mut evaluation_at = None;
    let before = findings.errors.len();
    for (key, value) in entries {
        let field = format!("feedback.{}", key.value);
        let json = value.value.to_json();
        match key.value.as_str() {
            "max_rounds" => match json.as_u64() {
                Some(rounds) if (1..=u64::from(crate::task::MAX_ROUNDS)).contains(&rounds) => {
                    feedback.max_rounds = rounds as u32
                }
                _ => findings.error(
                    Problem::new(
                        field,
                        format!(
                            "must be a whole number from 1 to {}, found {json}",
                            crate::task::MAX_ROUNDS
                        ),
                        at(value),
                    )
                    .with_help("e.g. `max_rounds: 2` (the default is 3: the prompt and two follow-ups)"),
                ),
            },
            "messages" => match &json {
                Value::Array(items) if items.iter().all(Value::is_string) => {
                    feedback.messages = items
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect();
                }
                _ => findings.error(
                    Problem::new(field, "expected a list of text", at(value))
                        .with_help("e.g. `messages: [\"Also CC the team lead.\"]`"),
                ),
            },
            "persona" => {
                feedback.persona = named(
                    &json,
                    (field.as_str(), value),
                    "expected non-empty text describing the simulated user",
                    findings,
                )
            }
            "simulator" => {
                if let Some(kind) = one_of(
                    &json,
                    (field.as_str(), value),
                    &[("template", SimulatorKind::Template), ("llm", SimulatorKind::Llm)],
                    "`template` builds the message from the missing checkpoints' names (deterministic); `llm` asks a model through the gateway",
                    findings,
                ) {
                    feedback.simulator = kind;
                }
            }
            "barrier" => {
                barrier = one_of(
                    &json,
                    (field.as_str(), value),
                    &[("strict", Barrier::Strict), ("guided", Barrier::Guided)],
                    "`strict` hands the simulated user the verdict, attempt state, recoverable and score only (UniClawBench's barrier); `guided` adds each missed checkpoint's public `feedback`",
                    findings,
                )
                .or(barrier)
            }
            "model" => {
                feedback.model = named(
                    &json,
                    (field.as_str(), value),
                    "expected the name of the model the llm simulator asks",
                    findings,
                )
            }
            "supervisor" => {
                if let Some(kind) = one_of(
                    &json,
                    (field.as_str(), value),
                    &[
                        ("deterministic", SupervisorKind::Deterministic),
                        ("model", SupervisorKind::Model),
                    ],
                    "`deterministic` grades the checkpoints (reproducible without a model); `model` asks a model with the hidden `evaluation` spec, through the gateway",
                    findings,
                ) {
                    feedback.supervisor = kind;
                }
            }
            "supervisor_model" => {
                feedback.supervisor_model = named(
                    &json,
                    (field.as_str(), value),
                    "expected the name of the model the model supervisor asks",
                    findings,
                )
            }
            "evaluation" => {
                evaluation_at = at(key);
                feedback.evaluation = validate_evaluation(value, context, findings);
            }
            "round_timeout_seconds" | "total_timeout_seconds" => {
                let limit = time_limit(&json, (field.as_str(), key.value.as_str(), value), findings);
                if key.value == "round_timeout_seconds" {
                    feedback.round_timeout = limit.or(feedback.round_timeout);
                } else {
                    feedback.total_timeout = limit.or(feedback.total_timeout);
                }
            }
            other => findings.error(Problem::new(field, "unknown key", at(key)).with_help(
                suggestion(other, &FEEDBACK_KEYS, "feedback has"),
            )),
        }
    }
    feedback.barrier = barrier.unwrap_or(Barrier::default_for(feedback.simulator));
    supervisor_consistent(&feedback, (block, evaluation_at), has_checkpoints, findings);
    if findings.errors.len() == before {
        something_to_say(&feedback, block, has_checkpoints, findings);
    }
    timeouts_agree(&feedback, block, findings);
    (findings.errors.len() == before).then_some(feedback)
}

/// A name (a persona, a model) in `field`: non-empty text, else `message` as the error.
fn named(
    json: &Value,
    (field, value): (&str, &Spanned<Node>),
    message: &str,
    findings: &mut Findings,
) -> Option<String> {
    match json.as_str() {
        Some(text) if !text.trim().is_empty() => Some(text.to_string()),
        _ => {
            findings.error(Problem::new(field, message, at(value)));
            None
        }
    }
}

/// One of `choices` by its name in `field`, else an error listing them with `help`.
fn one_of<T: Copy>(
    json: &Value,
    (field, value): (&str, &Spanned<Node>),
    choices: &[(&str, T)],
    help: &str,
    findings: &mut Findings,
) -> Option<T> {
    let chosen = json
        .as_str()
        .and_then(|name| choices.iter().find(|(choice, _)| *choice == name));
    if chosen.is_none() {
        let names: Vec<String> = choices
            .iter()
            .map(|(name, _)| format!("`{name}`"))
            .collect();
        findings.error(
            Problem::new(
                field,
                format!("must be {}, found {json}", names.join(" or ")),
                at(value),
            )
            .with_help(help),
        );
    }
    chosen.map(|(_, kind)| *kind)
}

/// A round's or the loop's time limit in `field` (named `key`): positive seconds, at most
/// [`MAX_SECONDS`].
fn time_limit(
    json: &Value,
    (field, key, value): (&str, &str, &Spanned<Node>),
    findings: &mut Findings,
) -> Option<Duration> {
    match json.as_f64().filter(|seconds| *seconds > 0.0) {
        Some(seconds) if seconds > MAX_SECONDS => {
            findings.error(
                Problem::new(
                    field,
                    format!("{seconds} seconds is more than a week ({MAX_SECONDS} s), the longest a time limit may be"),
                    at(value),
                )
                .with_help(format!("e.g. `{key}: 300`")),
            );
            None
        }
        Some(seconds) => Some(Duration::from_secs_f64(seconds)),
        None => {
            findings.error(
                Problem::new(field, "must be a positive number of seconds", at(value))
                    .with_help(format!("e.g. `{key}: 300`")),
            );
            None
        }
    }
}

/// The simulated user has something to say in every round: the template simulator its
/// messages, the checkpoints' names or the model supervisor's attempt state; the llm simulator
/// a persona to play.
fn something_to_say(
    feedback: &Feedback,
    block: &Spanned<Node>,
    has_checkpoints: bool,
    findings: &mut Findings,
) {
    let silent = match feedback.simulator {
        SimulatorKind::Template => {
            feedback.messages.is_empty()
                && !has_checkpoints
                && feedback.supervisor == SupervisorKind::Deterministic
        }
        SimulatorKind::Llm => feedback.persona.is_none(),
    };
    if silent {
        let (message, help) = match feedback.simulator {
            SimulatorKind::Template => (
                "needs `messages` or `checkpoints`: otherwise the template simulator has nothing to say",
                "add `messages: [...]`, or checkpoints whose names it can say",
            ),
            SimulatorKind::Llm => (
                "`simulator: llm` needs a `persona`: the simulated user the model plays",
                "add `persona: <who the user is and how they talk>`",
            ),
        };
        findings.error(Problem::new("feedback", message, at(block)).with_help(help));
    }
}

/// A warning when the loop's time limit is shorter than one round's.
fn timeouts_agree(feedback: &Feedback, block: &Spanned<Node>, findings: &mut Findings) {
    if let (Some(round), Some(total)) = (feedback.round_timeout, feedback.total_timeout)
        && total < round
    {
        findings.warn(Problem::new(
            "feedback.total_timeout_seconds",
            "is shorter than one round's limit: the first round already ends at it",
            at(block),
        ));
    }
}

/// The supervisor and what it reads agree: `supervisor: model` with an `evaluation` (written
/// at `evaluation_at`) and no `checkpoints` (the deterministic supervisor's goals), and an
/// `evaluation` only for it.
fn supervisor_consistent(
    feedback: &Feedback,
    (block, evaluation_at): (&Spanned<Node>, Option<crate::task::Position>),
    has_checkpoints: bool,
    findings: &mut Findings,
) {
    match feedback.supervisor {
        SupervisorKind::Model if evaluation_at.is_none() => findings.error(
            Problem::new(
                "feedback.supervisor",
                "`supervisor: model` needs `evaluation`: the hidden spec the model judges by",
                at(block),
            )
            .with_help("add `evaluation: eval_rule.yml` (a file beside the task) or an `evaluation:` map"),
        ),
        SupervisorKind::Model if has_checkpoints => findings.error(
            Problem::new(
                "checkpoints",
                "are the deterministic supervisor's goals; with `supervisor: model` the evaluation spec's `checkpoints` are the rubric",
                at(block),
            )
            .with_help("move them into the evaluation spec (a `score_caps` or `continue_vs_fail.unrecoverable` entry keeps a check that must bind)"),
        ),
        SupervisorKind::Deterministic if evaluation_at.is_some() => findings.error(
            Problem::new(
                "feedback.evaluation",
                "is read by the model supervisor only",
                evaluation_at,
            )
            .with_help("add `supervisor: model`, or remove `evaluation`"),
        ),
        _ => {}
    }
}
