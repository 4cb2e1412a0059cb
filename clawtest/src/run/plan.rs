//! What a task's trials run, decided once per task before any of them starts: the
//! [`TrialPlan`] (the task with its threshold, the catalogue extended with the task's own
//! services, its tools document, the commands its checks run, whether it runs as a closed
//! loop, and where its model answers come from, an [`AnswerSource`]), and the
//! [`Provisions`] every trial of the run shares.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use super::settings::HarnessLaunch;
use crate::config::Mode;
use crate::grade::commands::PlannedCommand;
use crate::llm::ModelAccess;
use crate::llm::gateway::{Cassette, Gateway, Recorder, Upstream};
use crate::sandbox::Sandbox;
use crate::services::Catalogue;
use crate::task::Task;

/// Where a task's model answers come from, decided once per task.
pub(crate) enum AnswerSource {
    /// Replayed from the task's cassette (an empty one when the harness calls no model).
    Replay(Cassette),
    /// Replay, without a cassette: the trial fails at its first model call, with the reason
    /// (a harness that never calls the model needs none).
    NoCassette { reason: String },
    /// Forwarded to the provider; with `record`, each trial's exchanges go to the cassette.
    Provider {
        upstream: Arc<Upstream>,
        record: bool,
    },
}

impl std::fmt::Debug for AnswerSource {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AnswerSource::Replay(cassette) => formatter
                .debug_tuple("Replay")
                .field(&cassette.task_id)
                .field(&cassette.trials.len())
                .finish(),
            AnswerSource::NoCassette { reason } => formatter
                .debug_struct("NoCassette")
                .field("reason", reason)
                .finish(),
            AnswerSource::Provider { record, .. } => formatter
                .debug_struct("Provider")
                .field("record", record)
                .finish_non_exhaustive(),
        }
    }
}

impl AnswerSource {
    /// The answers of `task_id`'s trials in `models.mode`: replayed from its cassette in
    /// `cassettes` (no folder: the harness calls no model), or forwarded to the provider and
    /// recorded when there is a cassette folder to record into.
    pub(crate) fn decide(
        models: &ModelAccess,
        cassettes: Option<&Path>,
        task_id: &str,
    ) -> AnswerSource {
        match (models.mode, &models.upstream) {
            (Mode::Replay, _) => match cassettes {
                None => AnswerSource::Replay(Cassette {
                    version: crate::llm::gateway::cassette::VERSION,
                    task_id: task_id.to_string(),
                    trials: Vec::new(),
                }),
                Some(folder) => match Cassette::load(folder, task_id) {
                    Ok(cassette) => AnswerSource::Replay(cassette),
                    Err(error) => AnswerSource::NoCassette {
                        reason: error.to_string(),
                    },
                },
            },
            (Mode::Live | Mode::Record, Some(upstream)) => AnswerSource::Provider {
                upstream: Arc::clone(upstream),
                record: models.mode == Mode::Record && cassettes.is_some(),
            },
            // The settings give live and record mode a provider; without one, the first
            // model call fails.
            (Mode::Live | Mode::Record, None) => AnswerSource::NoCassette {
                reason: "cassettes are read in replay mode only".into(),
            },
        }
    }

    /// The gateway of trial `trial` of task `task_id`, answering from this source.
    pub(crate) fn gateway(&self, task_id: &str, trial: u32) -> Gateway {
        match self {
            AnswerSource::Replay(cassette) => Gateway::replay(cassette, trial),
            AnswerSource::NoCassette { reason } => {
                Gateway::replay_without_cassette(task_id, trial, reason)
            }
            AnswerSource::Provider { upstream, record } => {
                Gateway::upstream(task_id, trial, Arc::clone(upstream), *record)
            }
        }
    }
}

/// The plan every trial of one task runs (a trial adds its number).
pub(crate) struct TrialPlan {
    pub(crate) task: Task,
    /// The final score a trial needs to pass (the task's, else the run's).
    pub(crate) threshold: f64,
    /// The catalogue with the task's own services (`services:` in the task), whose routes its
    /// tools may name; or why they could not be added (each trial is then an error).
    pub(crate) catalogue: Result<Arc<Catalogue>, String>,
    /// The tools.json document (with the task's own services when they could be added).
    pub(crate) tools: Value,
    /// The `exit_code` / `pytest_pass` commands, run where the harness ran once it has ended
    /// (a closed loop's checkpoints' among them).
    pub(crate) commands: Vec<PlannedCommand>,
    /// The task runs as a closed loop (it has checkpoints or feedback).
    pub(crate) closed_loop: bool,
    /// Where its trials' model answers come from.
    pub(crate) answers: AnswerSource,
}

impl TrialPlan {
    /// Plans `task`'s trials against the run's `catalogue`, with `answers` and the run's
    /// `threshold` for tasks without their own.
    pub(crate) fn new(
        task: Task,
        catalogue: &Arc<Catalogue>,
        threshold: f64,
        answers: AnswerSource,
    ) -> TrialPlan {
        let extended = match task.local_services.is_empty() {
            true => Ok(Arc::clone(catalogue)),
            false => task
                .catalogue(catalogue)
                .map(Arc::new)
                .map_err(|error| error.to_string()),
        };
        let tools = crate::surfaces::tools_json(&task, extended.as_ref().unwrap_or(catalogue));
        let closed_loop = crate::closed_loop::applies(&task);
        let commands = match closed_loop {
            true => crate::grade::commands::plan(&crate::closed_loop::supervisor::supervised_task(
                &task,
            )),
            false => crate::grade::commands::plan(&task),
        };
        TrialPlan {
            threshold: task.pass_threshold.unwrap_or(threshold),
            task,
            catalogue: extended,
            tools,
            commands,
            closed_loop,
            answers,
        }
    }
}

/// What every trial of a run is given besides its plan.
pub(crate) struct Provisions {
    /// Where the harness runs.
    pub(crate) sandbox: Arc<dyn Sandbox>,
    /// Answers the tasks' `llm_judge` components.
    pub(crate) judge: Arc<dyn crate::judge::Judge>,
    /// How to start the harness.
    pub(crate) harness: HarnessLaunch,
    /// The prices, budget and rules of every trial's gateway.
    pub(crate) models: ModelAccess,
    /// Set in record mode: where the trials' exchanges go.
    pub(crate) recorder: Option<Recorder>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::gateway::{Budget, Endpoint, Prices, RetryPolicy};

    fn models(mode: Mode, upstream: bool) -> ModelAccess {
        ModelAccess {
            mode,
            upstream: upstream.then(|| {
                Arc::new(
                    Upstream::new(
                        Some(Endpoint {
                            base_url: "http://127.0.0.1:9".into(),
                            api_key: None,
                        }),
                        None,
                        RetryPolicy {
                            retries: 0,
                            backoff: std::time::Duration::ZERO,
                        },
                    )
                    .unwrap(),
                )
            }),
            prices: Arc::new(Prices::default()),
            budget: Arc::new(Budget::new(None)),
            rules: Arc::default(),
            simulator_provider: crate::config::Provider::OpenAi,
        }
    }

    fn recorded(folder: &Path, task_id: &str) {
        let cassette = Cassette {
            version: crate::llm::gateway::cassette::VERSION,
            task_id: task_id.into(),
            trials: Vec::new(),
        };
        std::fs::write(
            Cassette::path_for(folder, task_id),
            serde_json::to_string(&cassette).unwrap(),
        )
        .unwrap();
    }

    #[test]
    fn replay_reads_the_tasks_cassette() {
        let folder = tempfile::tempdir().unwrap();
        recorded(folder.path(), "t");
        let source = AnswerSource::decide(&models(Mode::Replay, false), Some(folder.path()), "t");
        assert!(
            matches!(&source, AnswerSource::Replay(cassette) if cassette.task_id == "t"),
            "{source:?}"
        );
    }

    #[test]
    fn replay_without_the_tasks_cassette_says_why_at_the_first_call() {
        let folder = tempfile::tempdir().unwrap();
        let source = AnswerSource::decide(&models(Mode::Replay, false), Some(folder.path()), "t");
        let AnswerSource::NoCassette { reason } = &source else {
            panic!("{source:?}");
        };
        assert!(reason.contains("no cassette for task `t`"), "{reason}");
    }

    #[test]
    fn a_harness_without_models_replays_an_empty_cassette() {
        let source = AnswerSource::decide(&models(Mode::Replay, false), None, "t");
        assert!(
            matches!(&source, AnswerSource::Replay(cassette) if cassette.trials.is_empty()),
            "{source:?}"
        );
    }

    #[test]
    fn live_and_record_mode_forward_and_only_record_mode_records() {
        let folder = tempfile::tempdir().unwrap();
        for (mode, record) in [(Mode::Live, false), (Mode::Record, true)] {
            let source = AnswerSource::decide(&models(mode, true), Some(folder.path()), "t");
            assert!(
                matches!(source, AnswerSource::Provider { record: recording, .. } if recording == record),
                "{mode:?}: {source:?}"
            );
        }
    }
}
