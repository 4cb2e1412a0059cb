//! Generation's model calls, through the gateway like any harness's: each stage of a run (the
//! parser and the missing services are stage 0, task *n* is stage *n*) is one trial of the
//! cassette `cassettes/generate-<name>.yaml`, answered from it in `replay`, forwarded in
//! `live`, forwarded and recorded in `record`, priced and charged to the cost limit in every
//! mode. The gateway is asked in-process (its handler, without a socket): the same replay,
//! forwarding, recording, pricing and budget code a trial's harness reaches over HTTP.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::config::{Mode, Provider};
use crate::llm::client::Chat;
pub use crate::llm::client::{Message, Role};
use crate::llm::gateway::cassette::TrialRecording;
use crate::llm::gateway::{Cassette, CassetteError, Gateway};
use crate::llm::{AnswerSource, ModelAccess};
use crate::trajectory::ModelCall;

/// How long an answer may be: a whole task.yaml.
const MAX_TOKENS: u32 = 4096;

/// A model call that could not be answered: the run stops there (a replay miss is never a
/// silent live call).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ModelError(pub String);

/// The model of one generation run, behind the gateway.
pub struct Model {
    models: ModelAccess,
    cassette_id: String,
    cassettes: PathBuf,
    /// Where the stages' answers come from.
    answers: AnswerSource,
    chat: Chat,
    gateways: BTreeMap<u32, Gateway>,
}

impl Model {
    /// The model `model` (speaking `provider`'s format) behind gateways built from `models`,
    /// whose cassette is `<cassettes>/<cassette_id>.yaml`.
    pub(crate) fn new(
        models: ModelAccess,
        cassettes: &Path,
        cassette_id: &str,
        model: &str,
        provider: Provider,
    ) -> Model {
        let answers = match AnswerSource::decide(&models, Some(cassettes), cassette_id) {
            AnswerSource::NoCassette { reason } if models.mode == Mode::Replay => {
                AnswerSource::NoCassette {
                    reason: format!(
                        "{reason} (record it with --mode record and a provider in [llm])"
                    ),
                }
            }
            answers => answers,
        };
        Model {
            models,
            cassette_id: cassette_id.into(),
            cassettes: cassettes.to_path_buf(),
            answers,
            chat: Chat {
                provider,
                model: model.into(),
                max_tokens: Some(MAX_TOKENS),
                speaker: crate::trajectory::Speaker::Harness,
            },
            gateways: BTreeMap::new(),
        }
    }

    /// The cassette's path.
    pub fn cassette_path(&self) -> PathBuf {
        Cassette::path_for(&self.cassettes, &self.cassette_id)
    }

    /// The mode the calls are answered in.
    pub fn mode(&self) -> Mode {
        self.models.mode
    }

    fn gateway(&mut self, stage: u32) -> &Gateway {
        let (models, answers, id) = (&self.models, &self.answers, &self.cassette_id);
        self.gateways
            .entry(stage)
            .or_insert_with(|| answers.gateway(id, stage, models))
    }

    /// The model's answer to `conversation`, asked in `stage`.
    pub async fn ask(
        &mut self,
        stage: u32,
        conversation: &[Message],
    ) -> Result<String, ModelError> {
        let gateway = self.gateway(stage).clone();
        self.chat
            .ask(&gateway, conversation)
            .await
            .map_err(ModelError)
    }

    /// Every call made so far, stage by stage.
    pub fn calls(&self) -> Vec<ModelCall> {
        self.gateways.values().flat_map(Gateway::calls).collect()
    }

    /// In record mode (and `record-missing`), writes the cassette (every stage up to the last
    /// one asked, in order) and gives its path; in the other modes, nothing.
    pub fn finish(&self) -> Result<Option<PathBuf>, CassetteError> {
        if !self.models.mode.records() {
            return Ok(None);
        }
        let last = self.gateways.keys().next_back().copied().unwrap_or(0);
        let trials = (0..=last)
            .map(|stage| {
                self.gateways.get(&stage).map_or_else(
                    || TrialRecording {
                        interactions: Vec::new(),
                    },
                    Gateway::recording,
                )
            })
            .collect();
        let cassette = Cassette {
            version: crate::llm::gateway::cassette::VERSION,
            task_id: self.cassette_id.clone(),
            faults: None,
            trials,
        };
        cassette.save(&self.cassettes).map(Some)
    }
}
