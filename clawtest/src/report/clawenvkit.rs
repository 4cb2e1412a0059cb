//! A run's results in ClawEnvKit's own layout, so that its numbers sit beside the paper's
//! tables and its scripts read them: `<harness>/<model>/<task_id>/grading.json` (the shape its
//! Docker entrypoints write: `completion`, `robustness`, `safety`, `final_score`,
//! `components[{name, passed, score, weight}]`, `safety_violations`, `agent`, `model`, with
//! `task_id`, `category` and `num_tool_calls`) and `reward.txt` (`"%.4f\n"` of the final
//! score), and per cell the `summary.json` its `evaluate.py` writes per model (`mean_*`,
//! `safety_violation_rate`, `mean_tool_calls`). ClawEnvKit grades one run of a task; a
//! verdict's k trials are written as their means (a component passed when it passed in
//! every graded trial), each trial's scores beside them in `trials`. A task no trial of which
//! was graded (an error, an interrupted run) has no grading to write and is listed in
//! `ungraded`. Every file is written with `persist::write`: never through a link.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::config::{UNNAMED_HARNESS, UNNAMED_MODEL};
use crate::persist::{self, Durability};
use crate::results::{RunSummary, TrialStatus, Verdict};

/// One task's `grading.json`.
#[derive(Debug, Serialize)]
struct Grading {
    task_id: String,
    category: Option<String>,
    completion: f64,
    robustness: f64,
    safety: f64,
    final_score: f64,
    components: Vec<Component>,
    safety_violations: Vec<String>,
    num_tool_calls: f64,
    agent: String,
    model: String,
    /// Not ClawEnvKit's: each graded trial's scores (ClawEnvKit runs a task once).
    trials: Vec<TrialScores>,
}

/// A component's line in `grading.json`.
#[derive(Debug, Serialize)]
struct Component {
    name: String,
    passed: bool,
    score: f64,
    weight: f64,
}

/// One graded trial's scores.
#[derive(Debug, Serialize)]
struct TrialScores {
    trial: u32,
    completion: f64,
    robustness: f64,
    safety: f64,
    final_score: f64,
}

/// One cell's `summary.json`, as `evaluate.py` writes one per model.
#[derive(Debug, Serialize)]
struct CellSummary {
    agent: String,
    model: String,
    num_tasks: usize,
    mean_completion: f64,
    mean_robustness: f64,
    mean_safety: f64,
    mean_final_score: f64,
    safety_violation_rate: f64,
    mean_tool_calls: f64,
    /// Not ClawEnvKit's: the tasks with no graded trial, left out of the means.
    ungraded: Vec<String>,
}

/// What was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// Every file, in the order written.
    pub files: Vec<PathBuf>,
    /// The tasks (`harness/model/task_id`) without a graded trial, so without a grading.
    pub ungraded: Vec<String>,
}

/// Writes `summary` under `folder` in ClawEnvKit's layout.
pub fn write(summary: &RunSummary, folder: &Path) -> std::io::Result<Written> {
    let mut by_cell: BTreeMap<(String, String), Vec<&Verdict>> = BTreeMap::new();
    for verdict in &summary.verdicts {
        let (harness, model) = match &verdict.cell {
            Some(cell) => (cell.harness.clone(), cell.model.clone()),
            None => (UNNAMED_HARNESS.to_string(), UNNAMED_MODEL.to_string()),
        };
        by_cell.entry((harness, model)).or_default().push(verdict);
    }
    let mut written = Written {
        files: Vec::new(),
        ungraded: Vec::new(),
    };
    for ((harness, model), verdicts) in by_cell {
        // The results file is read back from disk: its names are checked to be one folder
        // each, as they were when the run wrote them.
        let cell_folder = folder
            .join(folder_name(&harness)?)
            .join(folder_name(&model)?);
        let mut gradings = Vec::new();
        let mut ungraded = Vec::new();
        for verdict in verdicts {
            match grading(verdict, &harness, &model) {
                Some(grading) => gradings.push(grading),
                None => ungraded.push(verdict.task_id.clone()),
            }
        }
        for grading in &gradings {
            let task_folder = cell_folder.join(folder_name(&grading.task_id)?);
            let path = task_folder.join("grading.json");
            persist::write(&path, &json(grading), Durability::Report)?;
            written.files.push(path);
            let reward = task_folder.join("reward.txt");
            persist::write(
                &reward,
                format!("{:.4}\n", grading.final_score).as_bytes(),
                Durability::Report,
            )?;
            written.files.push(reward);
        }
        let path = cell_folder.join("summary.json");
        persist::write(
            &path,
            &json(&cell_summary(&harness, &model, &gradings, &ungraded)),
            Durability::Report,
        )?;
        written.files.push(path);
        written.ungraded.extend(
            ungraded
                .into_iter()
                .map(|task| format!("{harness}/{model}/{task}")),
        );
    }
    Ok(written)
}

fn json(value: &impl Serialize) -> Vec<u8> {
    let mut text = serde_json::to_vec_pretty(value).unwrap_or_default();
    text.push(b'\n');
    text
}

/// `name` when it can be one folder (no separator, no `..`, nothing hidden): a harness,
/// model or task id read from a results file.
fn folder_name(name: &str) -> std::io::Result<&str> {
    let plain = !name.is_empty() && !name.starts_with('.') && !name.contains(['/', '\\', '\0']);
    if plain {
        Ok(name)
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "`{}` (a harness, model or task id of the results) cannot name a folder",
                name.escape_debug()
            ),
        ))
    }
}

/// The mean of `values`, 0 for none.
fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, count) = values.fold((0.0, 0usize), |(sum, count), value| {
        (sum + value, count + 1)
    });
    if count == 0 { 0.0 } else { sum / count as f64 }
}

/// A verdict's grading: its graded trials' means; `None` when none was graded.
fn grading(verdict: &Verdict, harness: &str, model: &str) -> Option<Grading> {
    struct Graded<'a> {
        scores: TrialScores,
        components: &'a [crate::results::ComponentSummary],
        violations: &'a [String],
        tool_calls: usize,
    }
    let graded: Vec<Graded<'_>> = verdict
        .trials
        .iter()
        .filter_map(|record| match &record.status {
            TrialStatus::Graded {
                final_score,
                completion,
                robustness,
                safety,
                violations,
                components,
                audit_entries,
                ..
            } => Some(Graded {
                scores: TrialScores {
                    trial: record.trial,
                    completion: *completion,
                    robustness: *robustness,
                    safety: *safety,
                    final_score: *final_score,
                },
                components,
                violations,
                tool_calls: *audit_entries,
            }),
            _ => None,
        })
        .collect();
    if graded.is_empty() {
        return None;
    }
    // Components by name, in the task's order (the first graded trial's).
    let components = graded[0]
        .components
        .iter()
        .map(|first| {
            let scores: Vec<f64> = graded
                .iter()
                .filter_map(|trial| {
                    trial
                        .components
                        .iter()
                        .find(|component| component.component == first.component)
                        .map(|component| component.score)
                })
                .collect();
            Component {
                name: first.component.clone(),
                passed: scores.len() == graded.len() && scores.iter().all(|score| *score >= 1.0),
                score: mean(scores.iter().copied()),
                weight: first.weight,
            }
        })
        .collect();
    let mut violations: Vec<String> = Vec::new();
    for trial in &graded {
        for violation in trial.violations {
            if !violations.contains(violation) {
                violations.push(violation.clone());
            }
        }
    }
    let scores =
        |pick: fn(&TrialScores) -> f64| mean(graded.iter().map(|trial| pick(&trial.scores)));
    Some(Grading {
        task_id: verdict.task_id.clone(),
        category: verdict.category.clone(),
        completion: scores(|trial| trial.completion),
        robustness: scores(|trial| trial.robustness),
        safety: scores(|trial| trial.safety),
        final_score: scores(|trial| trial.final_score),
        components,
        safety_violations: violations,
        num_tool_calls: mean(graded.iter().map(|trial| trial.tool_calls as f64)),
        agent: harness.to_owned(),
        model: model.to_owned(),
        trials: graded.into_iter().map(|trial| trial.scores).collect(),
    })
}

fn cell_summary(
    harness: &str,
    model: &str,
    gradings: &[Grading],
    ungraded: &[String],
) -> CellSummary {
    let over = |pick: fn(&Grading) -> f64| mean(gradings.iter().map(pick));
    CellSummary {
        agent: harness.to_owned(),
        model: model.to_owned(),
        num_tasks: gradings.len(),
        mean_completion: over(|grading| grading.completion),
        mean_robustness: over(|grading| grading.robustness),
        mean_safety: over(|grading| grading.safety),
        mean_final_score: over(|grading| grading.final_score),
        safety_violation_rate: over(|grading| {
            if grading.safety_violations.is_empty() {
                0.0
            } else {
                1.0
            }
        }),
        mean_tool_calls: over(|grading| grading.num_tool_calls),
        ungraded: ungraded.to_vec(),
    }
}
