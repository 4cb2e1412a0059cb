//! Record mode's cassette writer: collects each task's trial recordings as the trials finish
//! (in any order, concurrently) and writes the task's cassette once all of its trials are in.
//! A task whose trials did not all finish (an interrupted run) keeps its old cassette.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

use super::cassette::{Cassette, CassetteError, TrialRecording, VERSION};

/// Collects recordings of one run.
#[derive(Debug)]
pub(crate) struct Recorder {
    folder: PathBuf,
    trials: u32,
    pending: Mutex<BTreeMap<String, BTreeMap<u32, TrialRecording>>>,
    /// The cassette written for each task so far.
    written: Mutex<BTreeMap<String, PathBuf>>,
}

impl Recorder {
    /// A recorder writing to `folder`, for runs of `trials` trials per task.
    pub(crate) fn new(folder: PathBuf, trials: u32) -> Recorder {
        Recorder {
            folder,
            trials,
            pending: Mutex::default(),
            written: Mutex::default(),
        }
    }

    /// The cassette written for `task_id`, once all of its trials were in.
    pub(crate) fn written(&self, task_id: &str) -> Option<PathBuf> {
        self.written
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(task_id)
            .cloned()
    }

    /// Adds one trial's recording, made under the task's `faults`; when it completes the
    /// task, writes the cassette (with those settings) and returns its path.
    pub(crate) fn add(
        &self,
        task_id: &str,
        trial: u32,
        recording: TrialRecording,
        faults: crate::fault::FaultSettings,
    ) -> Result<Option<PathBuf>, CassetteError> {
        let complete = {
            let mut pending = self
                .pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let trials = pending.entry(task_id.to_string()).or_default();
            trials.insert(trial, recording);
            if trials.len() < self.trials as usize {
                return Ok(None);
            }
            pending.remove(task_id).unwrap_or_default()
        };
        let cassette = Cassette {
            version: VERSION,
            task_id: task_id.into(),
            faults: Some(faults),
            trials: complete.into_values().collect(),
        };
        let path = cassette.save(&self.folder)?;
        self.written
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(task_id.to_string(), path.clone());
        Ok(Some(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::gateway::cassette::{Interaction, RecordedRequest, RecordedResponse};
    use serde_json::json;

    fn recording(text: &str) -> TrialRecording {
        TrialRecording {
            interactions: vec![Interaction {
                request: RecordedRequest {
                    path: "/v1/chat/completions".into(),
                    body: json!({"messages": [{"role": "user", "content": text}]}),
                    whole: false,
                },
                response: RecordedResponse {
                    status: 200,
                    body: json!({"choices": []}),
                    events: None,
                    retried: vec![],
                },
                round: None,
                simulator: false,
            }],
        }
    }

    #[test]
    fn the_cassette_is_written_in_trial_order_once_every_trial_is_in() {
        let folder = tempfile::tempdir().unwrap();
        let recorder = Recorder::new(folder.path().to_path_buf(), 2);
        assert_eq!(
            recorder
                .add("t", 1, recording("second"), Default::default())
                .unwrap(),
            None
        );
        assert!(!Cassette::path_for(folder.path(), "t").exists());
        let path = recorder
            .add("t", 0, recording("first"), Default::default())
            .unwrap()
            .unwrap();
        assert_eq!(path, Cassette::path_for(folder.path(), "t"));
        assert_eq!(recorder.written("t"), Some(path));
        let cassette = Cassette::load(folder.path(), "t").unwrap();
        assert_eq!(
            cassette.trials,
            vec![recording("first"), recording("second")]
        );
    }
}
