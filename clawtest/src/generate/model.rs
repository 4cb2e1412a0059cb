//! Generation's model calls, through the gateway like any harness's: each stage of a run (the
//! parser and the missing services are stage 0, task *n* is stage *n*) is one trial of the
//! cassette `cassettes/generate-<name>.yaml`, answered from it in `replay`, forwarded in
//! `live`, forwarded and recorded in `record`, priced and charged to the cost limit in every
//! mode. The gateway is asked in-process (its handler, without a socket): the same replay,
//! forwarding, recording, pricing and budget code a trial's harness reaches over HTTP.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use http_body_util::BodyExt;
use serde_json::{Value, json};

use crate::config::{JudgeProvider, Mode};
use crate::gateway::cassette::TrialRecording;
use crate::gateway::upstream::Provider;
use crate::gateway::{Cassette, CassetteError, Gateway};
use crate::http::{Handler, HttpRequest};
use crate::run::Models;
use crate::trajectory::ModelCall;

/// How long an answer may be: a whole task.yaml.
const MAX_TOKENS: u32 = 4096;

/// Who said a message of a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The prompt, or the problems fed back.
    User,
    /// An earlier answer.
    Assistant,
}

/// One message of a conversation with the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Who said it.
    pub role: Role,
    /// What was said.
    pub text: String,
}

impl Message {
    /// A message of the user's.
    pub fn user(text: impl Into<String>) -> Message {
        Message {
            role: Role::User,
            text: text.into(),
        }
    }

    /// An answer of the model's.
    pub fn assistant(text: impl Into<String>) -> Message {
        Message {
            role: Role::Assistant,
            text: text.into(),
        }
    }
}

/// A model call that could not be answered: the run stops there (a replay miss is never a
/// silent live call).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ModelError(pub String);

/// The model of one generation run, behind the gateway.
pub struct Model {
    models: Models,
    cassette_id: String,
    cassettes: PathBuf,
    /// The recorded cassette, or why there is none (replay only).
    cassette: Result<Cassette, String>,
    model: String,
    provider: Provider,
    gateways: BTreeMap<u32, Gateway>,
}

impl Model {
    /// The model `model` (speaking `provider`'s format) behind gateways built from `models`,
    /// whose cassette is `<cassettes>/<cassette_id>.yaml`.
    pub(crate) fn new(
        models: Models,
        cassettes: &Path,
        cassette_id: &str,
        model: &str,
        provider: JudgeProvider,
    ) -> Model {
        let cassette = match models.mode {
            Mode::Replay => Cassette::load(cassettes, cassette_id).map_err(|error| {
                format!("{error} (record it with --mode record and a provider in [llm])")
            }),
            Mode::Live | Mode::Record => Err(String::new()),
        };
        Model {
            models,
            cassette_id: cassette_id.into(),
            cassettes: cassettes.to_path_buf(),
            cassette,
            model: model.into(),
            provider: match provider {
                JudgeProvider::Openai => Provider::OpenAi,
                JudgeProvider::Anthropic => Provider::Anthropic,
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
        let models = &self.models;
        let cassette = &self.cassette;
        let id = &self.cassette_id;
        self.gateways.entry(stage).or_insert_with(|| {
            match (&models.upstream, cassette) {
                (Some(upstream), _) => {
                    Gateway::upstream(id, stage, Arc::clone(upstream), models.mode == Mode::Record)
                }
                (None, Ok(cassette)) => Gateway::replay(cassette, stage),
                (None, Err(message)) => Gateway::replay_without_cassette(id, stage, message),
            }
            .with_costs(Arc::clone(&models.prices), Arc::clone(&models.budget))
            .with_rules(Arc::clone(&models.rules))
        })
    }

    /// The model's answer to `conversation`, asked in `stage`.
    pub async fn ask(
        &mut self,
        stage: u32,
        conversation: &[Message],
    ) -> Result<String, ModelError> {
        let (path, body) = self.body(conversation);
        let provider = self.provider;
        let gateway = self.gateway(stage).clone();
        let headers = vec![("content-type".to_string(), "application/json".to_string())];
        let request = HttpRequest {
            method: "POST".into(),
            path: path.into(),
            headers,
            body: body.to_string().into_bytes(),
        };
        let response = gateway.handle(request).await;
        let status = response.status;
        let bytes = response
            .body
            .collect()
            .await
            .map(|collected| collected.to_bytes())
            .unwrap_or_default();
        if let Some(failure) = gateway.failure() {
            return Err(ModelError(failure.to_string()));
        }
        if !(200..300).contains(&status) {
            return Err(ModelError(format!(
                "the model answered HTTP {status}: {}",
                String::from_utf8_lossy(&bytes)
                    .chars()
                    .take(300)
                    .collect::<String>()
            )));
        }
        let answer: Value = serde_json::from_slice(&bytes)
            .map_err(|error| ModelError(format!("the model's answer is not JSON: {error}")))?;
        crate::judge::http::reply_text(provider, &answer)
            .ok_or_else(|| ModelError("the model's answer has no text".into()))
    }

    fn body(&self, conversation: &[Message]) -> (&'static str, Value) {
        let messages: Vec<Value> = conversation
            .iter()
            .map(|message| {
                let role = match message.role {
                    Role::User => "user",
                    Role::Assistant => "assistant",
                };
                json!({"role": role, "content": message.text})
            })
            .collect();
        let body = json!({"model": self.model, "temperature": 0, "max_tokens": MAX_TOKENS, "messages": messages});
        match self.provider {
            Provider::OpenAi => ("/v1/chat/completions", body),
            Provider::Anthropic => ("/v1/messages", body),
        }
    }

    /// Every call made so far, stage by stage.
    pub fn calls(&self) -> Vec<ModelCall> {
        self.gateways.values().flat_map(Gateway::calls).collect()
    }

    /// In record mode, writes the cassette (every stage up to the last one asked, in order)
    /// and gives its path; in the other modes, nothing.
    pub fn finish(&self) -> Result<Option<PathBuf>, CassetteError> {
        if self.models.mode != Mode::Record {
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
            version: crate::gateway::cassette::VERSION,
            task_id: self.cassette_id.clone(),
            trials,
        };
        cassette.save(&self.cassettes).map(Some)
    }
}
