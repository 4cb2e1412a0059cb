//! The ranges a results file's numbers must be in, checked when one is read back (a
//! `--baseline`, a shard to `merge`, the results `report` renders): a file a pull request
//! changed could otherwise say a task passed 5 of 3 trials, ran 0 trials, or scored 1e308,
//! and the comparison, the merge and the reports would take it as said.

use super::{RunSummary, Verdict};

/// The first number of `summary` out of its range: the field's path and what is wrong.
pub(crate) fn check(summary: &RunSummary) -> Result<(), String> {
    at_least_one("k", summary.k)?;
    for (field, value) in [
        ("pass_hat_k", Some(summary.pass_hat_k)),
        ("pass_at_k", Some(summary.pass_at_k)),
        ("mean_score", Some(summary.mean_score)),
        // `null` when no fault was injected: nothing to check.
        ("mean_robustness", summary.mean_robustness),
        ("safety_pass_rate", Some(summary.safety_pass_rate)),
    ] {
        fraction(field, value)?;
    }
    for (field, value) in [
        ("cost_usd", summary.cost_usd),
        ("spent_usd", summary.spent_usd),
    ] {
        if !(0.0..=1e12).contains(&value) {
            return Err(format!(
                "{field} is {value}: expected dollars from 0 to 1e12"
            ));
        }
    }
    for (index, verdict) in summary.verdicts.iter().enumerate() {
        check_verdict(verdict).map_err(|problem| format!("verdicts[{index}].{problem}"))?;
    }
    Ok(())
}

fn check_verdict(verdict: &Verdict) -> Result<(), String> {
    at_least_one("k", verdict.k)?;
    if verdict.passes > verdict.k {
        return Err(format!(
            "passes is {}: more than its k of {} trials",
            verdict.passes, verdict.k
        ));
    }
    for (field, value) in [
        ("pass_at_k", Some(verdict.pass_at_k)),
        ("mean_score", Some(verdict.mean_score)),
        ("min_score", Some(verdict.min_score)),
        ("mean_robustness", verdict.mean_robustness),
        ("threshold", Some(verdict.threshold)),
        ("pass_hat_k_estimate", Some(verdict.pass_hat_k_estimate)),
    ] {
        fraction(field, value)?;
    }
    Ok(())
}

fn at_least_one(field: &str, value: u32) -> Result<(), String> {
    if value == 0 {
        return Err(format!("{field} is 0: expected at least 1 trial"));
    }
    Ok(())
}

/// A fraction from 0 to 1, when there is one.
fn fraction(field: &str, value: Option<f64>) -> Result<(), String> {
    if let Some(value) = value
        && !(0.0..=1.0).contains(&value)
    {
        return Err(format!(
            "{field} is {value}: expected a fraction from 0 to 1"
        ));
    }
    Ok(())
}
