//! [`AnswerSource`]: where the model answers of a task's trials (or of a generation's stages)
//! come from, decided once: replayed from a cassette, missing (with why), or forwarded to the
//! provider and perhaps recorded. Each trial or stage then gets its gateway from it.

use std::path::Path;
use std::sync::Arc;

use super::access::ModelAccess;
use super::gateway::{Cassette, Gateway, Upstream};
use crate::config::Mode;

/// Where a task's model answers come from, decided once per task.
pub(crate) enum AnswerSource {
    /// Replayed from the task's cassette (an empty one when the harness calls no model).
    Replay(Arc<Cassette>),
    /// Replay, without a cassette: the trial fails at its first model call, with the reason
    /// (a harness that never calls the model needs none).
    NoCassette { reason: String },
    /// Replayed from the task's cassette (`None`: it has none, or one that cannot be read) as
    /// far as it answers; from the first call it cannot answer, forwarded to the provider,
    /// and the trial's calls recorded (`record-missing`).
    ReplayOrRecord {
        cassette: Option<Arc<Cassette>>,
        upstream: Arc<Upstream>,
    },
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
            AnswerSource::ReplayOrRecord { cassette, .. } => formatter
                .debug_struct("ReplayOrRecord")
                .field(
                    "trials",
                    &cassette.as_ref().map(|cassette| cassette.trials.len()),
                )
                .finish_non_exhaustive(),
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
                None => AnswerSource::Replay(Arc::new(Cassette {
                    version: super::gateway::cassette::VERSION,
                    task_id: task_id.to_string(),
                    faults: None,
                    trials: Vec::new(),
                })),
                Some(folder) => match Cassette::load(folder, task_id) {
                    Ok(cassette) => AnswerSource::Replay(Arc::new(cassette)),
                    Err(error) => AnswerSource::NoCassette {
                        reason: error.to_string(),
                    },
                },
            },
            (Mode::RecordMissing, Some(upstream)) => match cassettes {
                None => AnswerSource::Provider {
                    upstream: Arc::clone(upstream),
                    record: false,
                },
                // An unreadable cassette is recorded again: recording is how it is fixed.
                Some(folder) => AnswerSource::ReplayOrRecord {
                    cassette: Cassette::load(folder, task_id).ok().map(Arc::new),
                    upstream: Arc::clone(upstream),
                },
            },
            (Mode::Live | Mode::Record, Some(upstream)) => AnswerSource::Provider {
                upstream: Arc::clone(upstream),
                record: models.mode == Mode::Record && cassettes.is_some(),
            },
            // The settings give live and record mode a provider; without one, the first
            // model call fails.
            (Mode::Live | Mode::Record | Mode::RecordMissing, None) => AnswerSource::NoCassette {
                reason: "cassettes are read in replay mode only".into(),
            },
        }
    }

    /// The gateway of trial `trial` of task `task_id` (or a generation's stage), answering
    /// from this source, priced and charged to the budget and matching by the rules of
    /// `models`.
    pub(crate) fn gateway(&self, task_id: &str, trial: u32, models: &ModelAccess) -> Gateway {
        let gateway = match self {
            AnswerSource::Replay(cassette) => Gateway::replay(cassette, trial),
            AnswerSource::NoCassette { reason } => {
                Gateway::replay_without_cassette(task_id, trial, reason)
            }
            AnswerSource::ReplayOrRecord { cassette, upstream } => match cassette {
                Some(cassette) => Gateway::replay(cassette, trial),
                None => {
                    Gateway::replay_without_cassette(task_id, trial, "no cassette for the task")
                }
            }
            .with_fallback(Arc::clone(upstream)),
            AnswerSource::Provider { upstream, record } => {
                Gateway::upstream(task_id, trial, Arc::clone(upstream), *record)
            }
        };
        gateway
            .with_costs(Arc::clone(&models.prices), Arc::clone(&models.budget))
            .with_rules(Arc::clone(&models.rules))
            .with_stale(Arc::clone(&models.stale))
    }
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
            stale: Arc::default(),
        }
    }

    fn recorded(folder: &Path, task_id: &str) {
        let cassette = Cassette {
            version: super::super::gateway::cassette::VERSION,
            task_id: task_id.into(),
            faults: None,
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
