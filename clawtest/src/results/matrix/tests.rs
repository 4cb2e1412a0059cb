//! The comparison of cells on constructed verdicts whose answer is known.

use std::path::PathBuf;

use super::*;
use crate::results::{TrialSummary, aggregate::pass_at_k};

/// A verdict of `task` in `harness/model`, its `k` trials all at `completion` and
/// `robustness` (a fault injected in each), scored as ClawEnvKit does.
fn verdict(
    task: &str,
    category: &str,
    harness: &str,
    model: &str,
    completion: f64,
    robustness: f64,
) -> Verdict {
    let score = 0.8 * completion + 0.2 * robustness;
    let passed = score >= 0.75;
    let trials: Vec<TrialSummary> = (0..3)
        .map(|trial| TrialSummary {
            trial,
            status: TrialStatus::Graded {
                passed,
                final_score: score,
                completion,
                robustness,
                safety: 1.0,
                violations: Vec::new(),
                deductions: Vec::new(),
                components: Vec::new(),
                model_calls: 2,
                input_tokens: 10,
                output_tokens: 5,
                cost_usd: Some(0.001),
                audit_entries: 2,
                harness_exit: crate::trajectory::HarnessExit {
                    code: Some(0),
                    timed_out: false,
                    signal: None,
                },
                faults_injected: 1,
                unrecovered_faults: Vec::new(),
                recovery: Default::default(),
            },
            limits_reached: Vec::new(),
            rounds: None,
        })
        .collect();
    let passes = if passed { 3 } else { 0 };
    Verdict {
        task_id: task.into(),
        task_name: task.into(),
        path: PathBuf::from(format!("tasks/{task}.yaml")),
        line: 1,
        status: if passed {
            VerdictStatus::Passed
        } else {
            VerdictStatus::Failed
        },
        k: 3,
        passes,
        pass_hat_k: passed,
        pass_at_k: pass_at_k(3, u64::from(passes), 3),
        mean_score: score,
        min_score: score,
        mean_robustness: Some(robustness),
        recovery: Default::default(),
        safety_violations: 0,
        threshold: 0.75,
        pass_hat_k_estimate: if passed { 1.0 } else { 0.0 },
        category: Some(category.into()),
        capability: None,
        cell: Some(Cell {
            harness: harness.into(),
            model: model.into(),
            harness_digest: format!("{harness}-digest"),
        }),
        trials,
    }
}

/// The known answer: a harness that retries recovers from every fault and one that does not
/// recovers from none, whatever the model; a model that calls the right tool completes the
/// task and one that does not completes a third of it, whatever the harness.
fn constructed() -> Vec<Verdict> {
    let mut verdicts = Vec::new();
    for task in ["email-a", "email-b"] {
        for (harness, robustness) in [("retrying", 1.0), ("bare", 0.0)] {
            for (model, completion) in [("right-tool", 1.0), ("wrong-tool", 1.0 / 3.0)] {
                verdicts.push(verdict(
                    task, "email", harness, model, completion, robustness,
                ));
            }
        }
    }
    verdicts
}

fn find<'a>(matrix: &'a Matrix, group: &str, measure: Measure) -> &'a Attribution {
    matrix
        .attribution
        .iter()
        .find(|attribution| attribution.group == group && attribution.measure == measure)
        .unwrap()
}

#[test]
fn the_robustness_gap_is_the_harnesses_and_the_completion_gap_the_models() {
    let matrix = Matrix::of(&constructed()).unwrap();
    for group in ["all", "category:email"] {
        let robustness = find(&matrix, group, Measure::Robustness);
        assert_eq!(
            (robustness.harness, robustness.model, robustness.interaction),
            (1.0, 0.0, 0.0),
            "{group}"
        );
        assert_eq!(robustness.harness_effects["retrying"], 0.5);
        assert_eq!(robustness.spread, 1.0);
        let completion = find(&matrix, group, Measure::Completion);
        assert_eq!(
            (completion.harness, completion.model, completion.interaction),
            (0.0, 1.0, 0.0),
            "{group}"
        );
        assert!(completion.model_effects["right-tool"] > 0.0);
        // The score mixes both: 0.8 of the completion gap is the model's, 0.2 of the
        // robustness gap the harness's, squared.
        let score = find(&matrix, group, Measure::Score);
        let (model_gap, harness_gap): (f64, f64) = (0.8 * (2.0 / 3.0), 0.2);
        let expected = model_gap.powi(2) / (model_gap.powi(2) + harness_gap.powi(2));
        assert!((score.model - expected).abs() < 1e-5, "{score:?}");
        assert!((score.harness + score.model - 1.0).abs() < 1e-5);
    }
}

#[test]
fn cells_disagree_on_one_axis_at_a_time() {
    let matrix = Matrix::of(&constructed()).unwrap();
    // Only retrying/right-tool passes (score 1); bare/right-tool scores 0.8 and passes too;
    // the wrong tool fails with either harness.
    let about_a: Vec<&Disagreement> = matrix
        .disagreements
        .iter()
        .filter(|disagreement| disagreement.task_id == "email-a")
        .collect();
    assert_eq!(about_a.len(), 2, "{about_a:#?}");
    assert!(
        about_a
            .iter()
            .all(|disagreement| disagreement.varies == Axis::Model)
    );
    assert_eq!(about_a[0].shared, "bare");
    assert_eq!(about_a[0].passed, ["bare/right-tool"]);
    assert_eq!(about_a[0].failed, ["bare/wrong-tool"]);
}

#[test]
fn the_table_has_a_row_per_cell_with_its_cost() {
    let matrix = Matrix::of(&constructed()).unwrap();
    let names: Vec<String> = matrix.cells.iter().map(|row| row.cell.name()).collect();
    assert_eq!(
        names,
        [
            "bare/right-tool",
            "bare/wrong-tool",
            "retrying/right-tool",
            "retrying/wrong-tool"
        ]
    );
    let row = &matrix.cells[2];
    assert_eq!((row.overall.tasks, row.overall.passed), (2, 2));
    assert_eq!(row.overall.cost_usd, 0.006);
    assert_eq!(row.by_category["email"].mean_robustness, Some(1.0));
}

#[test]
fn a_harness_that_excludes_a_model_is_left_out_of_the_attribution_and_named() {
    let mut verdicts = constructed();
    verdicts.extend([verdict(
        "email-a",
        "email",
        "partial",
        "right-tool",
        1.0,
        1.0,
    )]);
    let matrix = Matrix::of(&verdicts).unwrap();
    let robustness = find(&matrix, "all", Measure::Robustness);
    assert_eq!(robustness.left_out, ["partial"]);
    assert_eq!(robustness.harnesses, ["bare", "retrying"]);
    assert_eq!(matrix.cells.len(), 5, "still in the table");
}

#[test]
fn the_order_verdicts_come_in_changes_nothing() {
    let mut verdicts = constructed();
    let forward = serde_json::to_string(&Matrix::of(&verdicts)).unwrap();
    verdicts.reverse();
    assert_eq!(
        serde_json::to_string(&Matrix::of(&verdicts)).unwrap(),
        forward
    );
}

#[test]
fn verdicts_without_a_cell_make_no_matrix() {
    let mut verdicts = constructed();
    for verdict in &mut verdicts {
        verdict.cell = None;
    }
    assert_eq!(Matrix::of(&verdicts), None);
}

/// The constructed grid summarized under `gates` (written as `[gates]` is).
fn gated(verdicts: Vec<Verdict>, gates: &str) -> crate::results::RunSummary {
    let gates: crate::config::Gates = toml::from_str(gates).unwrap();
    crate::results::RunSummary::new(crate::results::SummaryInputs {
        verdicts,
        invalid: Vec::new(),
        k: 3,
        backend: "process",
        interrupted: false,
        cost_usd: 0.0,
        spent_usd: 0.0,
        gates: &gates,
        baseline: None,
        snapshots: Default::default(),
    })
}

fn outcome(summary: &crate::results::RunSummary, name: &str) -> (Option<f64>, bool) {
    let gate = summary
        .gates
        .iter()
        .find(|gate| gate.name == name)
        .unwrap_or_else(|| panic!("no gate {name} in {:#?}", summary.gates));
    (gate.actual, gate.passed)
}

#[test]
fn a_cell_gate_holds_each_cell_its_glob_matches_measured_as_the_run_is() {
    // Every task passes with the right tool (so the run's pass^k is 1/2), and the retrying
    // harness recovers from every fault, the bare one from none.
    let summary = gated(
        constructed(),
        "[cells.\"retrying/*\"]\nmin_robustness = 0.9\n[cells.\"*/right-tool\"]\nmin_pass_hat_k = 1.0\n[cells.\"bare/*\"]\nmin_robustness = 0.5\n",
    );
    let names: Vec<&str> = summary
        .gates
        .iter()
        .map(|gate| gate.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "bare/right-tool: min_pass_hat_k",
            "retrying/right-tool: min_pass_hat_k",
            "bare/right-tool: min_robustness",
            "bare/wrong-tool: min_robustness",
            "retrying/right-tool: min_robustness",
            "retrying/wrong-tool: min_robustness",
        ]
    );
    assert_eq!(
        outcome(&summary, "retrying/wrong-tool: min_robustness"),
        (Some(1.0), true)
    );
    assert_eq!(
        outcome(&summary, "bare/wrong-tool: min_robustness"),
        (Some(0.0), false)
    );
    assert_eq!(
        outcome(&summary, "bare/right-tool: min_pass_hat_k"),
        (Some(1.0), true)
    );
    assert_eq!(summary.status, crate::results::RunStatus::Failed);
    let cause = summary.failure_cause().unwrap();
    assert!(
        cause.contains("gate bare/wrong-tool: min_robustness not met (0.000 < 0.5)"),
        "{cause}"
    );
    let gate = &summary.gates[2];
    assert_eq!(
        gate.scope,
        Some(crate::results::gates::GateScope::Cell {
            cell: Some("bare/right-tool".into()),
            pattern: "bare/*".into()
        })
    );
}

#[test]
fn a_change_gate_bounds_the_move_from_one_cell_to_another() {
    let gates = "[[change]]\nfrom = \"bare/right-tool\"\nto = \"retrying/right-tool\"\nmeasure = \"mean_robustness\"\nmin = 0.5\nmax = 0.5\n[[change]]\nfrom = \"retrying/right-tool\"\nto = \"retrying/wrong-tool\"\nmeasure = \"pass_hat_k\"\ncategory = \"email\"\nmin = -0.05\n";
    let summary = gated(constructed(), gates);
    // The harness's retries raise robustness from 0 to 1: above the most allowed.
    let robustness = "bare/right-tool → retrying/right-tool: mean_robustness change";
    assert_eq!(
        outcome(&summary, &format!("{robustness}.min")),
        (Some(1.0), true)
    );
    assert_eq!(
        outcome(&summary, &format!("{robustness}.max")),
        (Some(1.0), false)
    );
    // The weaker model loses every email task.
    let model =
        "retrying/right-tool → retrying/wrong-tool: pass_hat_k change in category:email.min";
    assert_eq!(outcome(&summary, model), (Some(-1.0), false));
    let cause = summary.failure_cause().unwrap();
    assert!(
        cause.contains(&format!("gate {robustness}.max not met (1.000 > 0.5)")),
        "{cause}"
    );
    let text = serde_json::to_value(&summary.gates[1]).unwrap();
    assert_eq!(text["bound"], "at_most");
    assert_eq!(text["scope"]["kind"], "change");
    assert_eq!(text["scope"]["group"], "all");
}

#[test]
fn a_gate_on_a_cell_the_results_lack_fails_with_nothing_to_measure() {
    // The shards of one cell were lost: the merged results hold only the retrying harness.
    let verdicts: Vec<Verdict> = constructed()
        .into_iter()
        .filter(|verdict| verdict.cell.as_ref().unwrap().harness == "retrying")
        .collect();
    let summary = gated(
        verdicts,
        "[cells.\"bare/*\"]\nmin_score = 0.1\n[[change]]\nfrom = \"bare/right-tool\"\nto = \"retrying/right-tool\"\nmeasure = \"mean_score\"\nmin = 0.0\n[[change]]\nfrom = \"retrying/wrong-tool\"\nto = \"retrying/right-tool\"\nmeasure = \"mean_score\"\ncapability = \"multi_step\"\nmin = 0.0\n",
    );
    assert_eq!(outcome(&summary, "bare/*: min_score"), (None, false));
    assert_eq!(
        outcome(
            &summary,
            "bare/right-tool → retrying/right-tool: mean_score change.min"
        ),
        (None, false)
    );
    // No task has that capability in either cell.
    assert_eq!(
        outcome(
            &summary,
            "retrying/wrong-tool → retrying/right-tool: mean_score change in capability:multi_step.min"
        ),
        (None, false)
    );
    assert!(
        summary
            .failure_cause()
            .unwrap()
            .contains("gate bare/*: min_score not met (nothing to measure)")
    );
    // A run of some cells (`--cell`) is gated on those only.
    let gates: crate::config::Gates = toml::from_str("[cells.\"bare/*\"]\nmin_score = 0.1\n[[change]]\nfrom = \"bare/right-tool\"\nto = \"retrying/right-tool\"\nmeasure = \"mean_score\"\nmin = 0.0\n").unwrap();
    let narrowed = gates.for_cells(&["retrying/right-tool".into()]);
    assert!(narrowed.cells.is_empty() && narrowed.change.is_empty());
}
