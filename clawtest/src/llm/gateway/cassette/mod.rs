//! Cassettes: the recorded model calls of one task, one list per trial, replayed in order
//! (call i of trial t answers with interaction i of trial t).
//!
//! A cassette is a readable YAML file in the suite (`cassettes/<task_id>.yaml`):
//!
//! ```yaml
//! version: 1
//! task_id: todo-001
//! trials:
//!   - interactions:
//!       - request:
//!           path: /v1/chat/completions
//!           body: {model: gpt-4o-mini, messages: [{role: user, content: "Review all tasks"}]}
//!         response:
//!           status: 200
//!           body: {choices: [{index: 0, finish_reason: stop, message: {role: assistant, content: "Done."}}]}
//! ```
//!
//! The recorded `request.body` is matched against the request the harness sent by the rules
//! of `matching.rs` (docs/cassettes.md): the trial's own values are placeholders
//! (`{{services_url}}`, `{{trial_folder}}`, see `placeholders.rs`), volatile text is
//! normalised, a map matches on the keys the cassette names, a list on its trailing items.
//!
//! Each interaction names its `speaker:` (absent: the harness; else `simulated_user`,
//! `supervisor` or `judge`, clawtest's own model calls): the i-th call of a speaker answers
//! with the i-th interaction of that speaker, so the judge's calls never take the harness's
//! answers. A closed-loop task's interactions also carry their `round:` (absent means round
//! 1): call i of a speaker in round r of trial t answers with that speaker's i-th interaction
//! of round r in `trials[t]`, so that a round that calls the model once more or once less
//! than recorded fails there, and never takes the next round's answers.
//!
//! A streamed answer (server-sent events) is recorded as `response.events`, one entry per
//! event as the provider sent it, and replayed event by event; `response.retried` lists the
//! statuses of upstream attempts that were retried before the recorded answer. Both are
//! optional, so version-1 files written before streaming existed still read. Headers are never
//! recorded: API keys and volatile headers stay out of the repository.
//!
//! Version 2 is compact: a request whose body is the previous
//! call's of the trial with items appended to its lists (the conversation grown by the answer
//! and the tool results) is written as that difference (`continues: true`: its lists are
//! appended to the previous request's, its other keys replace the previous's, the keys it
//! leaves out are the previous's), and a trial identical to an earlier one is written as
//! `same_as: N`. Version 3 (what this build writes) is version 2 with speakers named
//! (`speaker:`; versions 1 and 2 marked the simulated user's calls `simulator: true`, and
//! still do when read). The file is read into whole requests and trials ([`Cassette`]);
//! versions 1 and 2 still read.
//!
//! A large binary part of a call (an image shown to the model, as base64) is kept once by its
//! SHA-256 in `blobs/` beside the cassettes, `{{blob:<sha256>.png}}` in the YAML
//! (`blobs.rs`): written by [`Cassette::save`], put back by [`Cassette::load`].

mod blobs;
mod compact;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::trajectory::Speaker;

/// The cassette file format version this build writes (it reads this one and versions 1
/// and 2).
pub const VERSION: u32 = 3;

/// The versions this build reads: 1 (every request and trial whole), 2 (compact) and 3
/// (compact, every call's speaker named).
const READ_VERSIONS: [u32; 3] = [1, 2, 3];

/// All recorded calls of one task, every request and trial whole (as read, or to be written).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cassette {
    /// The file format version ([`VERSION`]).
    pub version: u32,
    /// The `task_id` of the task whose calls these are.
    pub task_id: String,
    /// The faults the task's services injected while it was recorded (written by the
    /// recorder; absent in a hand-written cassette). The same settings inject the same faults
    /// again, so the agent meets what it met when recorded; under others, a replay that
    /// diverges says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faults: Option<crate::fault::FaultSettings>,
    /// One recording per trial, in trial order.
    pub trials: Vec<TrialRecording>,
}

/// The calls of one trial, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrialRecording {
    /// The trial's model calls, in the order they were made.
    pub interactions: Vec<Interaction>,
}

/// One model call: what was asked and what was answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Interaction {
    /// What the harness sent.
    pub request: RecordedRequest,
    /// What the provider answered.
    pub response: RecordedResponse,
    /// A closed-loop trial's round the call belongs to (from 1; absent: round 1, or a task
    /// without rounds). A round replays only its own interactions, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<u32>,
    /// Who made the call (absent: the harness): a call is replayed only by its own speaker's,
    /// in that speaker's order (versions 1 and 2 wrote `simulator: true` for the simulated
    /// user).
    #[serde(default, skip_serializing_if = "Speaker::is_harness")]
    pub speaker: Speaker,
}

/// The request of an interaction, as the replay matches it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedRequest {
    /// The endpoint called (default `/v1/chat/completions`).
    #[serde(default = "default_path")]
    pub path: String,
    /// The JSON body; a replayed request must match it by the rules of the module's doc.
    #[serde(default)]
    pub body: Value,
    /// Written by clawtest's recorder: the body is the whole request, so each list must have
    /// as many items as recorded (a hand-written request, without it, may give only the
    /// newest items of a list).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub whole: bool,
}

/// The answer of an interaction, replayed as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedResponse {
    /// The HTTP status (default 200).
    #[serde(default = "default_status")]
    pub status: u16,
    /// The JSON answer (`null` for a streamed one).
    #[serde(default)]
    pub body: Value,
    /// A streamed answer: the server-sent events, each with its trailing blank line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<String>>,
    /// Statuses of upstream attempts retried before this answer (429, 5xx).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retried: Vec<u16>,
}

fn default_path() -> String {
    "/v1/chat/completions".into()
}

fn default_status() -> u16 {
    200
}

/// A cassette that cannot be used.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum CassetteError {
    /// The task has no cassette file.
    #[error("no cassette for task `{task_id}`: expected {} (replay mode answers model calls only from cassettes)", path.display())]
    Missing {
        /// The task's `task_id`.
        task_id: String,
        /// Where its cassette was looked for.
        path: PathBuf,
    },
    /// The cassette file exists but cannot be read.
    #[error("cannot read cassette {}: {message}", path.display())]
    Unreadable {
        /// The cassette file.
        path: PathBuf,
        /// Why it cannot be read.
        message: String,
    },
    /// A recorded cassette could not be saved.
    #[error("cannot write cassette {}: {message}", path.display())]
    Unwritable {
        /// The cassette file.
        path: PathBuf,
        /// Why it could not be written.
        message: String,
    },
    /// The file is not a cassette this build reads (YAML, shape or version).
    #[error("cassette {}{}: {message}", path.display(), line.map(|line| format!(":{line}")).unwrap_or_default())]
    Invalid {
        /// The cassette file.
        path: PathBuf,
        /// The line of the problem, when the parser gives one.
        line: Option<u64>,
        /// What is wrong.
        message: String,
    },
}

impl Cassette {
    /// The cassette file of a task inside `folder`.
    pub fn path_for(folder: &Path, task_id: &str) -> PathBuf {
        folder.join(format!("{task_id}.yaml"))
    }

    /// Loads the cassette of `task_id` from `folder`.
    pub fn load(folder: &Path, task_id: &str) -> Result<Cassette, CassetteError> {
        let path = Cassette::path_for(folder, task_id);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(CassetteError::Missing {
                    task_id: task_id.into(),
                    path,
                });
            }
            Err(error) => {
                return Err(CassetteError::Unreadable {
                    path,
                    message: error.to_string(),
                });
            }
        };
        let mut cassette = Cassette::parse(&text, &path)?;
        for interaction in cassette
            .trials
            .iter_mut()
            .flat_map(|trial| trial.interactions.iter_mut())
        {
            for value in [
                &mut interaction.request.body,
                &mut interaction.response.body,
            ] {
                blobs::restore(value, folder).map_err(|message| CassetteError::Invalid {
                    path: path.clone(),
                    line: None,
                    message,
                })?;
            }
        }
        if cassette.task_id != task_id {
            return Err(CassetteError::Invalid {
                path,
                line: None,
                message: format!("records task `{}`, not `{task_id}`", cassette.task_id),
            });
        }
        Ok(cassette)
    }
}

impl Cassette {
    /// A cassette file's text (version 1, 2 or 3) read into whole requests and trials; `path`
    /// names the file in errors. The task id is not checked here ([`Cassette::load`] does).
    pub fn parse(text: &str, path: &Path) -> Result<Cassette, CassetteError> {
        let file: compact::CassetteFile =
            serde_saphyr::from_str(text).map_err(|error| CassetteError::Invalid {
                path: path.to_path_buf(),
                line: error.location().map(|location| location.line()),
                message: error
                    .to_string()
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .to_string(),
            })?;
        if !READ_VERSIONS.contains(&file.version) {
            return Err(CassetteError::Invalid {
                path: path.to_path_buf(),
                line: None,
                message: format!(
                    "version {} is not supported (this build reads versions 1 to 3)",
                    file.version
                ),
            });
        }
        file.expand().map_err(|message| CassetteError::Invalid {
            path: path.to_path_buf(),
            line: None,
            message,
        })
    }

    /// The cassette as the YAML this build writes (version 3, compact).
    pub fn to_text(&self) -> Result<String, String> {
        serde_saphyr::to_string(&compact::CassetteFile::compact(self))
            .map_err(|error| error.to_string())
    }

    /// Writes the cassette to `folder` (created if needed) as YAML; returns the file written.
    pub fn save(&self, folder: &Path) -> Result<PathBuf, CassetteError> {
        let path = Cassette::path_for(folder, &self.task_id);
        let unwritable = |message: String| CassetteError::Unwritable {
            path: path.clone(),
            message,
        };
        // Large binary parts go to `blobs/`, once each, before the YAML that names them.
        let mut stowed = self.clone();
        let mut found = std::collections::BTreeMap::new();
        for interaction in stowed
            .trials
            .iter_mut()
            .flat_map(|trial| trial.interactions.iter_mut())
        {
            blobs::stow(&mut interaction.request.body, &mut found);
            blobs::stow(&mut interaction.response.body, &mut found);
        }
        blobs::write(folder, &found).map_err(|error| unwritable(error.to_string()))?;
        let text = stowed.to_text().map_err(unwritable)?;
        // A recording is the user's: synced, and never written through a link the suite holds
        // (the folder, created if needed, included).
        crate::persist::write(
            &path,
            text.as_bytes(),
            crate::persist::Durability::Recording,
        )
        .map_err(|error| unwritable(error.to_string()))?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_saved_cassette_loads_back_equal() {
        let folder = tempfile::tempdir().unwrap();
        let cassette = Cassette {
            version: VERSION,
            task_id: "t1".into(),
            faults: Some(crate::fault::FaultSettings::default()),
            trials: vec![TrialRecording {
                interactions: vec![Interaction {
                    request: RecordedRequest {
                        path: "/v1/messages".into(),
                        body: json!({"model": "m", "stream": true, "max_tokens": 5, "temperature": 0.5}),
                        whole: true,
                    },
                    response: RecordedResponse {
                        status: 200,
                        body: Value::Null,
                        events: Some(vec!["event: a\ndata: {\"x\": 1}\n\n".into()]),
                        retried: vec![429],
                    },
                    round: None,
                    speaker: Speaker::Harness,
                }],
            }],
        };
        cassette.save(folder.path()).unwrap();
        assert_eq!(Cassette::load(folder.path(), "t1").unwrap(), cassette);
    }

    #[test]
    fn loading_checks_version_and_task() {
        let folder = tempfile::tempdir().unwrap();
        std::fs::write(
            folder.path().join("t1.yaml"),
            "version: 1\ntask_id: t2\ntrials: []\n",
        )
        .unwrap();
        let error = Cassette::load(folder.path(), "t1").unwrap_err();
        assert!(error.to_string().contains("records task `t2`"), "{error}");
        assert!(matches!(
            Cassette::load(folder.path(), "absent"),
            Err(CassetteError::Missing { .. })
        ));
    }

    fn speakers(text: &str) -> Result<Vec<Speaker>, String> {
        Cassette::parse(text, Path::new("t.yaml"))
            .map(|cassette| {
                cassette.trials[0]
                    .interactions
                    .iter()
                    .map(|interaction| interaction.speaker)
                    .collect()
            })
            .map_err(|error| error.to_string())
    }

    fn file(version: u32, marks: &[&str]) -> String {
        let interactions: String = marks
            .iter()
            .map(|mark| {
                format!("  - {{{mark}request: {{body: {{}}}}, response: {{body: {{}}}}}}\n")
            })
            .collect();
        format!("version: {version}\ntask_id: t\ntrials:\n- interactions:\n{interactions}")
    }

    #[test]
    fn an_older_cassettes_simulator_mark_reads_as_the_simulated_users_speaker() {
        for version in [1, 2] {
            assert_eq!(
                speakers(&file(version, &["", "simulator: true, "])).unwrap(),
                [Speaker::Harness, Speaker::SimulatedUser]
            );
        }
        assert_eq!(
            speakers(&file(3, &["speaker: judge, ", "speaker: supervisor, ", ""])).unwrap(),
            [Speaker::Judge, Speaker::Supervisor, Speaker::Harness]
        );
    }

    #[test]
    fn each_version_refuses_the_other_spelling_of_a_speaker_naming_the_interaction() {
        let error = speakers(&file(2, &["", "speaker: judge, "])).unwrap_err();
        assert!(
            error.contains("trials[0].interactions[1].speaker")
                && error.contains("write `version: 3`"),
            "{error}"
        );
        let error = speakers(&file(3, &["simulator: true, "])).unwrap_err();
        assert!(
            error.contains("trials[0].interactions[0].simulator")
                && error.contains("speaker: simulated_user"),
            "{error}"
        );
        let error = speakers(&file(3, &["speaker: auditor, "])).unwrap_err();
        assert!(error.contains("auditor"), "{error}");
        let error = speakers(&file(4, &[])).unwrap_err();
        assert!(error.contains("reads versions 1 to 3"), "{error}");
    }

    #[test]
    fn a_cassette_is_written_as_version_3_with_its_speakers_named() {
        let mut cassette =
            Cassette::parse(&file(2, &["", "simulator: true, "]), Path::new("t.yaml")).unwrap();
        let text = cassette.to_text().unwrap();
        assert!(text.starts_with("version: 3\n"), "{text}");
        assert!(
            text.contains("speaker: simulated_user") && !text.contains("simulator"),
            "{text}"
        );
        cassette.version = VERSION;
        assert_eq!(
            Cassette::parse(&text, Path::new("t.yaml")).unwrap(),
            cassette
        );
    }
}
