//! The model supervisor (`feedback.supervisor: model`): UniClawBench's answer supervisor. A
//! model reads the task's hidden [`Evaluation`] (its `eval_rule.md`) against the round's
//! visible evidence — the public task, the earlier turns, the round's message, tool calls
//! and results, the answer, the workspace's files — and answers one JSON object ([`answer`]
//! reads it strictly: `verdict`, `attempt_state`, `recoverable`, `score`, `confidence`,
//! `rationale`, `missing_artifacts`, `guidance_tags`). [`decide`] applies the spec on top,
//! deterministically: the score caps whose checks clawtest's grader finds unmet bind (the
//! stricter of the model's score and the lowest binding cap), an unrecoverable outcome or a
//! safety violation fails the round, a score below `fail_below` fails it, and a `pass` needs
//! a score of at least `pass_at` after the caps. What comes out is a [`Supervision`] like the
//! deterministic supervisor's: only its briefing may reach the simulated user.
//!
//! Its model is asked through the trial's gateway (`Speaker::Supervisor`): priced, charged to
//! the run's budget, recorded and replayed like every model call.

use std::fmt::Write;

use serde::Deserialize;

use super::supervisor::{Handoff, Supervision};
use super::visible::{ANSWER_CHARACTERS, EARLIER_CHARACTERS, Visible, head, tail};
use crate::config::Provider;
use crate::grade::Grade;
use crate::llm::client::{Chat, Message};
use crate::task::evaluation::Evaluation;
use crate::task::{Component, Task};
use crate::trajectory::Speaker;
use crate::trajectory::rounds::{AttemptState, Confidence, ModelSupervision, RoundVerdict};

/// The model supervisor's client: `model` in `provider`'s wire format, its calls marked as
/// the supervisor's.
pub(crate) fn chat(provider: Provider, model: Option<&str>) -> Chat {
    Chat {
        provider,
        model: model
            .unwrap_or(super::simulator::default_model(provider))
            .to_string(),
        max_tokens: None,
        speaker: Speaker::Supervisor,
    }
}

/// The task the grader grades for the model supervisor: the task's own components, then one
/// of weight 0 per score cap and unrecoverable outcome (so that they change nothing of the
/// completion score, and their scores say whether they bind).
pub(crate) fn supervised_task(task: &Task, evaluation: &Evaluation) -> Task {
    let mut supervised = task.clone();
    let caps = evaluation
        .score_caps
        .iter()
        .map(|cap| (&cap.name, &cap.check));
    let unrecoverable = evaluation
        .guidance
        .unrecoverable
        .iter()
        .map(|outcome| (&outcome.name, &outcome.check));
    supervised
        .components
        .extend(caps.chain(unrecoverable).map(|(name, check)| Component {
            name: name.clone(),
            weight: 0.0,
            check: check.clone(),
            line: None,
        }));
    supervised
}

/// UniClawBench's central allowlist of guidance tags, each with the public hint the guided
/// barrier may pass on (in clawtest's words).
pub(crate) const GUIDANCE_TAGS: [(&str, &str); 11] = [
    (
        "follow_public_task",
        "Please stick to what I originally asked for.",
    ),
    (
        "keep_query_literal",
        "Please look for exactly what I asked, without rewording it.",
    ),
    (
        "open_ranked_first_result",
        "Please go by the order the results are ranked in.",
    ),
    (
        "save_visible_evidence",
        "Please keep the key evidence as you go.",
    ),
    (
        "save_supporting_screenshot",
        "Please save something that shows the result directly.",
    ),
    (
        "use_only_visible_evidence",
        "Please base your answer only on what you can actually see.",
    ),
    (
        "verify_evidence_matches_conclusion",
        "Please make sure what you found really supports your answer.",
    ),
    (
        "check_correct_source_page",
        "Please check that you are looking at the right source.",
    ),
    (
        "record_observable_conclusion",
        "Please write down your conclusion once it is supported.",
    ),
    (
        "do_not_claim_completion",
        "If it is not certain yet, please keep checking rather than stopping.",
    ),
    (
        "credential_hygiene",
        "Please keep passwords and other secrets out of your results.",
    ),
];

/// A file of the workspace as the supervisor is shown it.
pub(crate) struct EvidenceFile {
    /// Relative to the workspace.
    pub(crate) path: String,
    /// Its size in bytes.
    pub(crate) size: u64,
    /// Its text (cut), when it is text and was read.
    pub(crate) text: Option<String>,
}

/// The round's visible evidence.
pub(crate) struct Evidence<'a> {
    /// The round's number, from 1, and the most rounds.
    pub(crate) round: (u32, u32),
    /// The user message the harness was given this round.
    pub(crate) message: &'a str,
    /// The earlier turns, the round's tool calls and the answer.
    pub(crate) visible: Visible<'a>,
    /// The workspace's files, in path order.
    pub(crate) files: Vec<EvidenceFile>,
}

/// The most files listed, and read, and the characters shown of each one read.
pub(crate) const LISTED_FILES: usize = 100;
pub(crate) const READ_FILES: usize = 20;
pub(crate) const FILE_CHARACTERS: usize = 2000;

/// What the supervisor's model is told to do (in clawtest's words, after UniClawBench's
/// answer-supervisor prompt): its role, the method, the discipline, the states and verdicts,
/// and the answer's form.
fn instructions(evaluation: &Evaluation) -> String {
    let tags: Vec<&str> = GUIDANCE_TAGS.iter().map(|(tag, _)| *tag).collect();
    let task_instructions = evaluation.instructions.as_deref().unwrap_or(
        "State concrete evidence gaps, mismatches and correctness checks in `rationale`. Put only safe, publicly actionable gaps in `missing_artifacts`; never copy hidden reference contents or secrets into any field.",
    );
    format!(
        "# Role\nYou are the hidden supervisor of one attempt of an AI assistant at a task. You decide whether the assistant satisfied the public task, judged by the hidden evaluation rule. Your rationale is never shown to the assistant or to its user.\n\n# Task-specific instructions\n{}\n\n# Method\n1. Read the hidden evaluation rule: it is the contract.\n2. Inspect the visible evidence: the conversation, the tool calls and their results, the answer, the workspace's files.\n3. Say where the attempt stands and score it.\n\nScore only by the rule's checkpoints (section 5) and score caps (section 6): never invent checkpoints, quality bars or deductions the rule does not name; use tolerance bands literally; across rounds, never add deductions that earlier rounds did not flag unless the new work created them. Mention anything else in `rationale` without deducting for it.\n\n# Attempt states\n- in_progress: still exploring, no coherent conclusion yet\n- incomplete: partial evidence or answer\n- complete_but_failed: a conclusion, but wrong or unsupported\n- complete_and_passed: a correct conclusion with sufficient evidence\n- terminal_failure: unrecoverably wrong\n\n# Verdicts\n- pass: only when the evidence clearly satisfies the rule (attempt_state complete_and_passed, recoverable false)\n- continue: in_progress, incomplete, or a recoverable complete_but_failed (recoverable true)\n- fail: terminal_failure, or complete_but_failed that no further turn can mend (section 7)\nPrefer continue over fail when another user turn could help.\n\n# Answer\nReturn exactly one JSON object and nothing else, with exactly these keys:\n- verdict: pass | continue | fail\n- attempt_state: in_progress | incomplete | complete_but_failed | complete_and_passed | terminal_failure\n- recoverable: boolean\n- score: number from 0.0 to 1.0, how close the attempt is to full completion\n- confidence: low | medium | high\n- rationale: what is right, wrong or missing, concretely\n- missing_artifacts: list of the visible evidence still missing, in public words\n- guidance_tags: list of tags from [{}] that name a concrete, recoverable next step; else []",
        task_instructions.trim(),
        tags.join(", ")
    )
}

/// The hidden evaluation rule as UniClawBench's `eval_rule.md` lays it out, section by
/// section.
fn rule(evaluation: &Evaluation) -> String {
    let mut rule = String::from("# Hidden evaluation rule\n");
    let mut section = |number: u32, title: &str, text: Option<&str>| {
        if let Some(text) = text {
            let _ = write!(rule, "\n## {number}. {title}\n\n{}\n", text.trim());
        }
    };
    section(1, "Grading Philosophy", evaluation.philosophy.as_deref());
    section(2, "Task Contract", Some(&evaluation.contract));
    section(
        3,
        "Source-Selection and Target-Resolution Rules",
        evaluation.sources.as_deref(),
    );
    section(4, "Ground-Truth Snapshot", Some(&evaluation.ground_truth));
    let rubric: String = evaluation
        .checkpoints
        .iter()
        .map(|line| {
            format!(
                "- **{:.2} — {}.** {}\n",
                line.weight,
                line.name,
                line.criterion.trim()
            )
        })
        .collect();
    section(5, "Checkpoint Rubric", Some(rubric.trim_end()));
    let mut caps: String = evaluation
        .score_caps
        .iter()
        .map(|cap| {
            format!(
                "- **Cap at {:.2} — {}.** {}\n",
                cap.cap,
                cap.name,
                cap.when.trim()
            )
        })
        .collect();
    if let Some(pass_at) = evaluation.pass_at {
        let _ = writeln!(
            caps,
            "\nA run passes if its score is at least {pass_at:.2} after caps."
        );
    }
    section(
        6,
        "Scoring Policy / Score Caps",
        Some(caps.trim()).filter(|caps| !caps.is_empty()),
    );
    section(
        7,
        "Continue vs Fail Guidance",
        guidance(evaluation).as_deref(),
    );
    section(
        8,
        "Hidden Reference Assets",
        evaluation.references.as_deref(),
    );
    section(
        9,
        "Dynamic Content Note",
        evaluation.dynamic_content.as_deref(),
    );
    rule
}

/// Section 7 in words, when the spec gives any.
fn guidance(evaluation: &Evaluation) -> Option<String> {
    let guidance = &evaluation.guidance;
    let mut text = String::new();
    for scenario in &guidance.continue_when {
        let _ = writeln!(text, "- **Continue** — {}", scenario.trim());
    }
    for scenario in &guidance.fail_when {
        let _ = writeln!(text, "- **Fail** — {}", scenario.trim());
    }
    for outcome in &guidance.unrecoverable {
        let _ = writeln!(
            text,
            "- **Fail** ({}) — {}",
            outcome.name,
            outcome.when.trim()
        );
    }
    if let Some(fail_below) = guidance.fail_below {
        let _ = writeln!(
            text,
            "- **Fail** — a score below {fail_below:.2} after caps."
        );
    }
    (!text.is_empty()).then_some(text)
}

/// The supervisor's conversation: the instructions, then the hidden rule, the public task
/// and the round's visible evidence.
pub(crate) fn conversation(
    evaluation: &Evaluation,
    prompt: &str,
    evidence: &Evidence<'_>,
) -> Vec<Message> {
    let (round, rounds) = evidence.round;
    let visible = &evidence.visible;
    let mut user = rule(evaluation);
    let _ = write!(
        user,
        "\n# Public task\n\n{}\n\n# Visible evidence (round {round} of at most {rounds})\n\n",
        prompt.trim()
    );
    if !visible.earlier.is_empty() {
        user.push_str("## The conversation before\n");
        user.push_str(&tail(visible.earlier.trim(), EARLIER_CHARACTERS));
        user.push_str("\n\n");
    }
    let _ = write!(
        user,
        "## The user's message this round\n{}\n\n## Tool calls and results this round\n",
        head(evidence.message.trim(), ANSWER_CHARACTERS)
    );
    visible.write_tool_calls(&mut user);
    let _ = write!(
        user,
        "\n## The assistant's answer\n{}\n\n## The workspace's files\n",
        head(visible.answer.trim(), ANSWER_CHARACTERS)
    );
    write_files(&mut user, &evidence.files);
    user.push_str("\nAnswer with the JSON object.");
    vec![
        Message::system(instructions(evaluation)),
        Message::user(user),
    ]
}

/// The workspace's files: each listed with its size, the text of those read below it.
fn write_files(out: &mut String, files: &[EvidenceFile]) {
    if files.is_empty() {
        out.push_str("(none)\n");
    }
    for file in files.iter().take(LISTED_FILES) {
        let _ = writeln!(out, "- {} ({} bytes)", file.path, file.size);
    }
    if let Some(more) = files.len().checked_sub(LISTED_FILES)
        && more > 0
    {
        let _ = writeln!(out, "- … and {more} more files");
    }
    for file in files {
        if let Some(text) = &file.text {
            let _ = write!(
                out,
                "\n### {}\n```\n{}\n```\n",
                file.path,
                head(text, FILE_CHARACTERS)
            );
        }
    }
}

/// The supervisor's answer as written: all eight fields, nothing else.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Answer {
    verdict: RoundVerdict,
    attempt_state: AttemptState,
    recoverable: bool,
    score: f64,
    confidence: Confidence,
    rationale: String,
    missing_artifacts: Vec<String>,
    guidance_tags: Vec<String>,
}

/// The most missing artifacts an answer may name, and the characters of its rationale.
const MOST_ARTIFACTS: usize = 20;
const RATIONALE_CHARACTERS: usize = 8000;

/// The supervisor's answer `text`, read strictly: one JSON object (a Markdown code fence
/// around it is allowed) with exactly the eight fields, each of its kind, the verdict agreeing
/// with the attempt state and `recoverable` as the instructions say, and only allowlisted
/// guidance tags. Anything else is why the answer is of no use: never a guess.
pub(crate) fn answer(text: &str) -> Result<Answer, String> {
    let trimmed = text.trim();
    let answer: Answer = serde_json::from_str(super::simulator::unfenced(trimmed)).map_err(|error| {
        format!(
            "the supervisor's answer is not the JSON object asked for ({error}): {}; expected {{\"verdict\": \"pass\"|\"continue\"|\"fail\", \"attempt_state\": \"in_progress\"|\"incomplete\"|\"complete_but_failed\"|\"complete_and_passed\"|\"terminal_failure\", \"recoverable\": true|false, \"score\": 0.0-1.0, \"confidence\": \"low\"|\"medium\"|\"high\", \"rationale\": \"…\", \"missing_artifacts\": [\"…\"], \"guidance_tags\": [\"…\"]}}",
            head(trimmed, 200)
        )
    })?;
    let wrong = |message: String| Err(format!("the supervisor's answer {message}"));
    if !(0.0..=1.0).contains(&answer.score) {
        return wrong(format!("scores {}, outside 0.0 to 1.0", answer.score));
    }
    if let Some(tag) = answer
        .guidance_tags
        .iter()
        .find(|tag| !GUIDANCE_TAGS.iter().any(|(known, _)| known == tag))
    {
        let known: Vec<&str> = GUIDANCE_TAGS.iter().map(|(tag, _)| *tag).collect();
        return wrong(format!(
            "has guidance tag `{tag}`, which is not one of {}",
            known.join(", ")
        ));
    }
    if answer.missing_artifacts.len() > MOST_ARTIFACTS {
        return wrong(format!(
            "names {} missing_artifacts, more than {MOST_ARTIFACTS}",
            answer.missing_artifacts.len()
        ));
    }
    if answer.rationale.chars().count() > RATIONALE_CHARACTERS {
        return wrong(format!(
            "has a rationale longer than {RATIONALE_CHARACTERS} characters"
        ));
    }
    use AttemptState::{CompleteAndPassed, CompleteButFailed, TerminalFailure};
    let agrees = match answer.verdict {
        RoundVerdict::Pass => answer.attempt_state == CompleteAndPassed && !answer.recoverable,
        RoundVerdict::Continue => {
            answer.recoverable
                && !matches!(answer.attempt_state, CompleteAndPassed | TerminalFailure)
        }
        RoundVerdict::Fail => matches!(answer.attempt_state, TerminalFailure | CompleteButFailed),
    };
    if !agrees {
        return wrong(format!(
            "contradicts itself: verdict {} with attempt_state {} and recoverable {} (pass goes with complete_and_passed and recoverable false; continue with in_progress, incomplete or complete_but_failed and recoverable true; fail with terminal_failure or complete_but_failed)",
            verdict_name(answer.verdict),
            answer.attempt_state.name(),
            answer.recoverable
        ));
    }
    Ok(answer)
}

fn verdict_name(verdict: RoundVerdict) -> &'static str {
    match verdict {
        RoundVerdict::Pass => "pass",
        RoundVerdict::Continue => "continue",
        RoundVerdict::Fail => "fail",
    }
}

/// The round decided from the model's `answer` and the round's `grade` (the
/// [`supervised_task`]'s, its threshold the task's): the spec's caps and unrecoverable
/// outcomes bind where their checks scored below 1, a safety violation fails the round and
/// scores it 0, `fail_below` fails a low score, and a pass needs `pass_at` (default: the
/// threshold) after the caps. The grade's final score becomes the decided score, and it
/// passes only on a `pass`.
pub(crate) fn decide(evaluation: &Evaluation, mut grade: Grade, answer: Answer) -> Supervision {
    let unmet = |name: &str| {
        grade
            .components
            .iter()
            .rev()
            .find(|component| component.name == name)
            .is_some_and(|component| component.score < 1.0)
    };
    let caps: Vec<(&str, f64)> = evaluation
        .score_caps
        .iter()
        .filter(|cap| unmet(&cap.name))
        .map(|cap| (cap.name.as_str(), cap.cap))
        .collect();
    let unrecoverable: Vec<&str> = evaluation
        .guidance
        .unrecoverable
        .iter()
        .filter(|outcome| unmet(&outcome.name))
        .map(|outcome| outcome.name.as_str())
        .collect();
    let violated = !grade.violations.is_empty();
    let mut score = caps
        .iter()
        .fold(answer.score, |score, (_, cap)| score.min(*cap));
    if violated {
        score = 0.0;
    }
    let pass_at = evaluation.pass_at.unwrap_or(grade.threshold);
    let low = evaluation
        .guidance
        .fail_below
        .is_some_and(|fail_below| crate::grade::verdict_score(score) < fail_below);
    let reaches = crate::grade::verdict_score(score) >= pass_at;
    let (verdict, attempt_state, recoverable) = match answer.verdict {
        _ if violated || !unrecoverable.is_empty() || low => {
            (RoundVerdict::Fail, AttemptState::TerminalFailure, false)
        }
        RoundVerdict::Fail => (RoundVerdict::Fail, answer.attempt_state, answer.recoverable),
        RoundVerdict::Pass if reaches => {
            (RoundVerdict::Pass, AttemptState::CompleteAndPassed, false)
        }
        // A binding cap holds the score under what a pass needs: not done yet.
        RoundVerdict::Pass => (
            RoundVerdict::Continue,
            AttemptState::CompleteButFailed,
            true,
        ),
        RoundVerdict::Continue => (RoundVerdict::Continue, answer.attempt_state, true),
    };
    note_bindings(&mut grade, &caps, &unrecoverable);
    grade.final_score = score;
    grade.threshold = pass_at;
    grade.passed = verdict == RoundVerdict::Pass;
    let guided = answer
        .guidance_tags
        .iter()
        .filter_map(|tag| GUIDANCE_TAGS.iter().find(|(known, _)| known == tag))
        .map(|(_, hint)| hint.to_string())
        .collect();
    Supervision {
        handoff: Handoff {
            verdict,
            attempt_state,
            recoverable,
            score,
        },
        grade,
        missing: Vec::new(),
        guided,
        model: Some(ModelSupervision {
            verdict: answer.verdict,
            attempt_state: answer.attempt_state,
            recoverable: answer.recoverable,
            score: answer.score,
            confidence: answer.confidence,
            rationale: answer.rationale,
            missing_artifacts: answer.missing_artifacts,
            guidance_tags: answer.guidance_tags,
            caps: caps.iter().map(|(name, _)| name.to_string()).collect(),
            unrecoverable: unrecoverable.iter().map(|name| name.to_string()).collect(),
        }),
    }
}

/// Notes in each binding cap's and unrecoverable outcome's component reason what it did.
fn note_bindings(grade: &mut Grade, caps: &[(&str, f64)], unrecoverable: &[&str]) {
    let notes = caps
        .iter()
        .map(|(name, cap)| (*name, format!("caps the round's score at {cap}")))
        .chain(
            unrecoverable
                .iter()
                .map(|name| (*name, "unrecoverable: the round fails".to_string())),
        );
    for (name, note) in notes {
        if let Some(component) = grade
            .components
            .iter_mut()
            .rev()
            .find(|component| component.name == name)
        {
            component.reason = format!("{} ({note})", component.reason);
        }
    }
}

#[cfg(test)]
#[path = "model_supervisor_tests.rs"]
mod tests;
