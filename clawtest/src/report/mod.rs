//! The run's outputs: the terminal reporter (consumes events as they come), and the files
//! written from the final [`crate::run::RunSummary`]: JUnit XML and JSON results.

pub mod json;
pub mod junit;
pub mod terminal;

use crate::run::{TrialRecord, TrialResult, Verdict};

/// Three decimals: enough to see a change, few enough to read.
pub(crate) fn score(value: f64) -> String {
    format!("{value:.3}")
}

/// A multi-line, human account of one verdict's trials: what each scored and why it lost
/// points. Shared by the terminal's failure details and JUnit's system-out.
pub fn breakdown(verdict: &Verdict) -> String {
    let mut text = String::new();
    for record in &verdict.trials {
        text.push_str(&trial_line(record));
        text.push('\n');
        if let TrialResult::Graded {
            violations,
            deductions,
            ..
        } = &record.result
        {
            for violation in violations {
                text.push_str(&format!("    safety violation: {violation}\n"));
            }
            for deduction in deductions {
                text.push_str(&format!(
                    "    {} ({} × weight {}): {}\n",
                    deduction.component,
                    score(deduction.score),
                    deduction.weight,
                    deduction.reason
                ));
            }
        }
    }
    text
}

/// One line per trial: `trial 2: FAIL final 0.280 (completion 0.100, robustness 1.000, safety 1)`.
pub fn trial_line(record: &TrialRecord) -> String {
    match &record.result {
        TrialResult::Graded {
            passed,
            final_score,
            completion,
            robustness,
            safety,
            ..
        } => format!(
            "  trial {}: {} final {} (completion {}, robustness {}, safety {})",
            record.trial,
            if *passed { "PASS" } else { "FAIL" },
            score(*final_score),
            score(*completion),
            score(*robustness),
            safety
        ),
        TrialResult::Error { message } => format!("  trial {}: ERROR {message}", record.trial),
        TrialResult::Interrupted => format!("  trial {}: not finished (interrupted)", record.trial),
        TrialResult::NotRun { reason } => format!("  trial {}: not run ({reason})", record.trial),
    }
}
