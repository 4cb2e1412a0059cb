//! Record mode's cassette writer: collects each task's trial recordings as the trials finish
//! (in any order, concurrently) and writes the task's cassette once all of its trials are in.
//! A task whose trials did not all finish (an interrupted run) keeps its old cassette, and so
//! does one none of whose trials changed (`record-missing`: every trial replayed whole).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

use super::cassette::{Cassette, CassetteError, TrialRecording, VERSION};

/// One task's trials recorded so far, by number: each recording, and whether it changed.
type Trials = BTreeMap<u32, (TrialRecording, bool)>;

/// Collects recordings of one run.
#[derive(Debug)]
pub(crate) struct Recorder {
    folder: PathBuf,
    trials: u32,
    /// Each task's trials so far: the recording, and whether the trial changed (was not
    /// answered whole by the old cassette).
    pending: Mutex<BTreeMap<String, Trials>>,
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

    /// Adds one trial's recording, made under the task's `faults`, `changed` unless the old
    /// cassette answered it whole; when it completes the task and one of its trials changed,
    /// writes the cassette (with those settings) and returns its path.
    pub(crate) fn add(
        &self,
        task_id: &str,
        trial: u32,
        recording: TrialRecording,
        faults: crate::fault::FaultSettings,
        changed: bool,
    ) -> Result<Option<PathBuf>, CassetteError> {
        let complete = {
            let mut pending = self
                .pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let trials = pending.entry(task_id.to_string()).or_default();
            trials.insert(trial, (recording, changed));
            if trials.len() < self.trials as usize {
                return Ok(None);
            }
            pending.remove(task_id).unwrap_or_default()
        };
        if !complete.values().any(|(_, changed)| *changed) {
            return Ok(None);
        }
        let cassette = Cassette {
            version: VERSION,
            task_id: task_id.into(),
            faults: Some(faults),
            trials: complete
                .into_values()
                .map(|(recording, _)| recording)
                .collect(),
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
                speaker: crate::trajectory::Speaker::Harness,
            }],
        }
    }

    #[test]
    fn the_cassette_is_written_in_trial_order_once_every_trial_is_in() {
        let folder = tempfile::tempdir().unwrap();
        let recorder = Recorder::new(folder.path().to_path_buf(), 2);
        assert_eq!(
            recorder
                .add("t", 1, recording("second"), Default::default(), true)
                .unwrap(),
            None
        );
        assert!(!Cassette::path_for(folder.path(), "t").exists());
        let path = recorder
            .add("t", 0, recording("first"), Default::default(), false)
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

    #[test]
    fn a_task_none_of_whose_trials_changed_keeps_its_cassette() {
        let folder = tempfile::tempdir().unwrap();
        let recorder = Recorder::new(folder.path().to_path_buf(), 2);
        for trial in [0, 1] {
            let written = recorder
                .add("t", trial, recording("same"), Default::default(), false)
                .unwrap();
            assert_eq!(written, None);
        }
        assert!(!Cassette::path_for(folder.path(), "t").exists());
        assert_eq!(recorder.written("t"), None);
    }
}
