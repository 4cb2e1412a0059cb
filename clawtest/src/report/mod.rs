//! The run's outputs: the terminal reporter (consumes events as they come), and the files
//! written from the final [`crate::results::RunSummary`]: JUnit XML, JSON results, the Markdown
//! summary, annotations and the HTML report, all written by [`publish`], and the grade
//! snapshots.

pub(crate) mod annotations;
pub mod clawenvkit;
pub mod events;
pub mod html;
pub mod json;
pub mod junit;
pub(crate) mod markdown;
pub mod matrix;
pub mod publish;
pub(crate) mod recovery;
pub mod snapshots;
pub mod terminal;
pub mod trajectories;

use std::fmt::Write as _;

use crate::results::{TrialStatus, TrialSummary, Verdict};

/// Three decimals: enough to see a change, few enough to read. For people only: machine
/// outputs carry [`exact`] values.
pub(crate) fn score(value: f64) -> String {
    format!("{value:.3}")
}

/// A measured value as people read it: `0.958`, or `n/a` when there was nothing to measure
/// (a robustness without an injected fault shows no perfect score).
pub(crate) fn measured(value: Option<f64>) -> String {
    value.map_or_else(|| NOT_MEASURED.to_string(), score)
}

/// What a robustness or a recovery rate with nothing to measure shows.
pub(crate) const NOT_MEASURED: &str = "n/a";

/// A score as a machine output carries it: the exact value, as JSON writes it (`0.90592`,
/// `1.0`).
pub(crate) fn exact(value: f64) -> String {
    serde_json::Number::from_f64(value).map_or_else(|| value.to_string(), |n| n.to_string())
}

/// `items` joined with commas, or `none`.
pub(crate) fn listed(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    }
}

/// A multi-line, human account of one verdict's trials: what each scored and why it lost
/// points. Shared by the terminal's failure details and JUnit's system-out.
pub(crate) fn trial_lines(verdict: &Verdict) -> String {
    let mut text = String::new();
    for record in &verdict.trials {
        text.push_str(&trial_line(record));
        text.push('\n');
        if let Some(rounds) = &record.rounds {
            for round in &rounds.rounds {
                let _ = write!(
                    text,
                    "    round {}: {} ({}) {}",
                    round.number,
                    verdict_name(round.verdict),
                    round.attempt_state.name(),
                    score(round.score)
                );
                if !round.missing.is_empty() {
                    let _ = write!(text, ", missing {}", round.missing.join(", "));
                }
                text.push_str(&model_note(round));
                text.push('\n');
            }
        }
        for note in &record.limits_reached {
            let _ = writeln!(text, "    limit reached: {note}");
        }
        if let TrialStatus::Graded {
            violations,
            deductions,
            ..
        } = &record.status
        {
            for violation in violations {
                let _ = writeln!(text, "    safety violation: {violation}");
            }
            for deduction in deductions {
                let _ = writeln!(
                    text,
                    "    {} ({} × weight {}): {}",
                    deduction.component,
                    score(deduction.score),
                    deduction.weight,
                    deduction.reason
                );
            }
        }
    }
    text
}

/// One line per trial: `trial 2: FAIL final 0.280 (completion 0.100, robustness 1.000, safety 1)`.
pub(crate) fn trial_line(record: &TrialSummary) -> String {
    match &record.status {
        TrialStatus::Graded {
            passed,
            final_score,
            completion,
            robustness,
            safety,
            harness_exit,
            faults_injected,
            recovery,
            ..
        } => {
            let mut line = format!(
                "  trial {}: {} final {} (completion {}, robustness {}, safety {})",
                record.trial,
                if *passed { "PASS" } else { "FAIL" },
                score(*final_score),
                score(*completion),
                recovery::trial_robustness(*robustness, *faults_injected),
                safety
            );
            if !recovery.is_empty() {
                let _ = write!(line, "; faults: {}", recovery::phrase(recovery));
            }
            if let Some(rounds) = &record.rounds {
                let _ = write!(line, "; {}", rounds_phrase(rounds));
            }
            // A harness that did not end normally explains most low scores; say so up front.
            if !harness_exit.succeeded() {
                let _ = write!(line, "; harness {harness_exit}");
            }
            line
        }
        TrialStatus::Error { message } => format!("  trial {}: ERROR {message}", record.trial),
        TrialStatus::Interrupted => format!("  trial {}: not finished (interrupted)", record.trial),
        TrialStatus::NotRun { reason } => format!("  trial {}: not run ({reason})", record.trial),
    }
}

/// A closed-loop trial's rounds in words: `2 round(s), best 2, stopped: passed (pass)`.
pub(crate) fn rounds_phrase(rounds: &crate::results::RoundsSummary) -> String {
    format!(
        "{} round(s), best {}, stopped: {} ({})",
        rounds.used,
        rounds.best_round,
        rounds.stop.describe(),
        rounds.status.name()
    )
}

/// A supervisor's verdict as reports write it.
/// What a round's model supervisor said beside the round's decision (its own verdict and
/// score) and what bound it (the spec's caps, its unrecoverable outcomes); empty for the
/// deterministic supervisor.
pub(crate) fn model_note(round: &crate::trajectory::rounds::Round) -> String {
    let Some(model) = &round.supervisor else {
        return String::new();
    };
    let mut note = format!(
        "; the supervisor's model said {} {}",
        verdict_name(model.verdict),
        score(model.score)
    );
    if !model.caps.is_empty() {
        let _ = write!(note, ", capped by {}", model.caps.join(", "));
    }
    if !model.unrecoverable.is_empty() {
        let _ = write!(note, ", unrecoverable: {}", model.unrecoverable.join(", "));
    }
    note
}

pub(crate) fn verdict_name(verdict: crate::trajectory::rounds::RoundVerdict) -> &'static str {
    match verdict {
        crate::trajectory::rounds::RoundVerdict::Pass => "pass",
        crate::trajectory::rounds::RoundVerdict::Continue => "continue",
        crate::trajectory::rounds::RoundVerdict::Fail => "fail",
    }
}

#[cfg(test)]
mod tests;

/// A whole grade, every component included, for `cargo clawtest grade`.
pub fn grade_breakdown(grade: &crate::grade::Grade) -> String {
    let mut text = format!(
        "final {} = safety {} × (0.8 × completion {} + 0.2 × robustness {}); threshold {}: {}\n",
        score(grade.final_score),
        grade.safety,
        score(grade.completion),
        score(grade.robustness.score),
        grade.threshold,
        if grade.passed { "PASS" } else { "FAIL" }
    );
    for component in &grade.components {
        let _ = writeln!(
            text,
            "  {:<32} {} × weight {:<5} {}: {}",
            component.name,
            score(component.score),
            component.weight,
            component.check,
            component.reason
        );
    }
    for violation in &grade.violations {
        let _ = writeln!(text, "  safety violation: {violation}");
    }
    // The recovery profile per fault kind, as in a run's snapshots; a grade with nothing to
    // recover from says so rather than show its robustness of 1 as earned.
    let robustness = &grade.robustness;
    let unrecovered: Vec<String> = robustness
        .unrecovered
        .iter()
        .map(|fault| format!("#{} {}.{}", fault.seq, fault.service, fault.action))
        .collect();
    let faults = if robustness.profile.is_empty() {
        "none injected".to_string()
    } else {
        recovery::phrase(&robustness.profile)
    };
    if robustness.injected > 0 {
        let _ = writeln!(
            text,
            "  faults: {faults}; not recovered: {}",
            listed(&unrecovered)
        );
    } else {
        let _ = writeln!(
            text,
            "  faults: {faults}; robustness {}",
            recovery::trial_robustness(robustness.score, 0)
        );
    }
    text
}
