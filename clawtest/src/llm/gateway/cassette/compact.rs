//! The cassette file as written (version 3) and read (versions 1 to 3): the raw form of a
//! [`Cassette`]. Versions 1 and 2 mark the simulated user's calls `simulator: true`; version 3
//! names every call's speaker but the harness's (`speaker: judge`). A request may be the difference from the previous call of its trial
//! (`continues: true`), a trial may be `same_as` an earlier one; [`CassetteFile::expand`]
//! makes every request and trial whole, [`CassetteFile::compact`] writes them back as small as
//! these two rules allow. Expanding what `compact` wrote gives the cassette back, equal.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Cassette, Interaction, RecordedRequest, RecordedResponse, TrialRecording, VERSION};
use crate::trajectory::Speaker;

/// A cassette file as written.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CassetteFile {
    pub(super) version: u32,
    task_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    faults: Option<crate::fault::FaultSettings>,
    trials: Vec<TrialFile>,
}

/// One trial: its interactions, or the number of an earlier trial it repeats.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TrialFile {
    /// The trial is the same as trial `same_as` (from 0, an earlier one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    same_as: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    interactions: Option<Vec<InteractionFile>>,
}

/// One interaction as written: its request perhaps a difference.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct InteractionFile {
    request: RequestFile,
    response: RecordedResponse,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    round: Option<u32>,
    /// Versions 1 and 2: the simulated user made the call (never written now).
    #[serde(default, skip_serializing)]
    simulator: bool,
    /// Version 3: who made the call (absent: the harness).
    #[serde(default, skip_serializing_if = "Speaker::is_harness")]
    speaker: Speaker,
}

/// A request as written.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestFile {
    #[serde(default = "super::default_path")]
    path: String,
    /// The previous call of the trial continued: `body`'s lists are appended to the previous
    /// request's lists of the same key, its other keys replace the previous's, and the keys it
    /// does not name are the previous's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    continues: bool,
    #[serde(default)]
    body: Value,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    whole: bool,
}

/// How much a file may expand to: the weight ([`weight`]) of all its whole requests and
/// answers together. A few lines of `continues` and `same_as` can stand for a great deal
/// (each repeats what came before): a file from a pull request must not take the memory of the
/// machine that reads it. 256 Mi is far above any recording (nanobot's, the largest example,
/// weighs under 1 Mi whole).
const EXPANDED_LIMIT: u64 = 256 * 1024 * 1024;

impl CassetteFile {
    /// Every request and trial made whole; an error says which trial and call cannot be.
    pub(super) fn expand(self) -> Result<Cassette, String> {
        self.expand_within(EXPANDED_LIMIT)
    }

    /// [`CassetteFile::expand`], refusing a file whose whole form weighs more than `limit`.
    fn expand_within(self, limit: u64) -> Result<Cassette, String> {
        let mut trials: Vec<TrialRecording> = Vec::with_capacity(self.trials.len());
        let mut weights: Vec<u64> = Vec::with_capacity(self.trials.len());
        let mut budget = Budget { left: limit, limit };
        for (number, trial) in self.trials.into_iter().enumerate() {
            let recording = match (trial.same_as, trial.interactions) {
                (Some(earlier), None) if earlier < number => {
                    budget.spend(weights[earlier], number)?;
                    weights.push(weights[earlier]);
                    trials[earlier].clone()
                }
                (Some(earlier), None) => {
                    return Err(format!(
                        "trials[{number}].same_as: {earlier} is not an earlier trial"
                    ));
                }
                (None, Some(interactions)) => {
                    let before = budget.left;
                    let interactions =
                        expand_trial(self.version, number, interactions, &mut budget)?;
                    weights.push(before - budget.left);
                    TrialRecording { interactions }
                }
                _ => {
                    return Err(format!(
                        "trials[{number}]: give either `interactions` or `same_as`, one of them"
                    ));
                }
            };
            trials.push(recording);
        }
        Ok(Cassette {
            version: self.version,
            task_id: self.task_id,
            faults: self.faults,
            trials,
        })
    }

    /// `cassette` as written: each request the difference from the previous one where it
    /// continues it, each trial that repeats an earlier one as `same_as`.
    pub(super) fn compact(cassette: &Cassette) -> CassetteFile {
        let trials = cassette
            .trials
            .iter()
            .enumerate()
            .map(|(number, trial)| {
                match cassette.trials[..number]
                    .iter()
                    .position(|earlier| earlier == trial)
                {
                    Some(earlier) => TrialFile {
                        same_as: Some(earlier),
                        interactions: None,
                    },
                    None => TrialFile {
                        same_as: None,
                        interactions: Some(compact_trial(&trial.interactions)),
                    },
                }
            })
            .collect();
        CassetteFile {
            version: VERSION,
            task_id: cassette.task_id.clone(),
            faults: cassette.faults,
            trials,
        }
    }
}

/// The expansion's limit, and what is left of it.
struct Budget {
    left: u64,
    limit: u64,
}

impl Budget {
    /// Takes `weight` from what is left, or says the file expands past the limit at `trial`.
    fn spend(&mut self, weight: u64, trial: usize) -> Result<(), String> {
        self.left = self.left.checked_sub(weight).ok_or_else(|| {
            format!(
                "trials[{trial}]: the cassette expands to more than {} MiB of whole requests and answers (`continues`, `same_as`); it is not one clawtest recorded: record it again",
                self.limit / (1024 * 1024)
            )
        })?;
        Ok(())
    }
}

/// A value's size as read into memory, roughly: one per value, and a string's bytes.
fn weight(value: &Value) -> u64 {
    match value {
        Value::String(text) => 1 + text.len() as u64,
        Value::Array(items) => 1 + items.iter().map(weight).sum::<u64>(),
        Value::Object(map) => {
            1 + map
                .iter()
                .map(|(key, value)| key.len() as u64 + weight(value))
                .sum::<u64>()
        }
        _ => 1,
    }
}

/// Who made call `call` of trial `trial`, as a file of `version` says it.
fn speaker_of(
    version: u32,
    (trial, call): (usize, usize),
    interaction: &InteractionFile,
) -> Result<Speaker, String> {
    let field = format!("trials[{trial}].interactions[{call}]");
    match (version, interaction.simulator, interaction.speaker) {
        (..=2, simulator, Speaker::Harness) => Ok(match simulator {
            true => Speaker::SimulatedUser,
            false => Speaker::Harness,
        }),
        (..=2, _, speaker) => Err(format!(
            "{field}.speaker: a version-{version} cassette has no speakers (its simulated user's calls say `simulator: true`); `speaker: {}` is version {VERSION}'s: write `version: {VERSION}`",
            speaker.name()
        )),
        (_, true, _) => Err(format!(
            "{field}.simulator: version {version} names each call's speaker: write `speaker: simulated_user` instead"
        )),
        (_, false, speaker) => Ok(speaker),
    }
}

fn expand_trial(
    version: u32,
    trial: usize,
    interactions: Vec<InteractionFile>,
    budget: &mut Budget,
) -> Result<Vec<Interaction>, String> {
    let mut whole: Vec<Interaction> = Vec::with_capacity(interactions.len());
    // The weight of the previous whole request: a continuing one weighs at most it and what
    // it adds (counted before the request is built, so a file past the limit builds nothing
    // more).
    let mut previous_weight = 0;
    for (call, interaction) in interactions.into_iter().enumerate() {
        let speaker = speaker_of(version, (trial, call), &interaction)?;
        let request = interaction.request;
        let request_weight = match request.continues {
            true => previous_weight + weight(&request.body),
            false => weight(&request.body),
        };
        let answer_weight = weight(&interaction.response.body)
            + interaction
                .response
                .events
                .iter()
                .flatten()
                .map(|event| event.len() as u64)
                .sum::<u64>();
        budget.spend(request_weight + answer_weight, trial)?;
        previous_weight = request_weight;
        let body = match (request.continues, whole.last()) {
            (false, _) => request.body,
            (true, None) => {
                return Err(format!(
                    "trials[{trial}].interactions[0].request.continues: the first call has no previous call to continue"
                ));
            }
            (true, Some(previous)) => {
                continued(&previous.request.body, request.body).map_err(|message| {
                    format!("trials[{trial}].interactions[{call}].request.body: {message}")
                })?
            }
        };
        whole.push(Interaction {
            request: RecordedRequest {
                path: request.path,
                body,
                whole: request.whole,
            },
            response: interaction.response,
            round: interaction.round,
            speaker,
        });
    }
    Ok(whole)
}

/// The previous body continued by `difference`: its lists appended, its other keys replaced.
fn continued(previous: &Value, difference: Value) -> Result<Value, String> {
    let (Value::Object(previous), Value::Object(difference)) = (previous, difference) else {
        return Err(
            "a request that continues the previous one and the previous one must both be maps"
                .into(),
        );
    };
    let mut body = previous.clone();
    for (key, value) in difference {
        match (body.get_mut(&key), value) {
            (Some(Value::Array(items)), Value::Array(appended)) => items.extend(appended),
            (_, value) => {
                body.insert(key, value);
            }
        }
    }
    Ok(Value::Object(body))
}

fn compact_trial(interactions: &[Interaction]) -> Vec<InteractionFile> {
    let mut previous: Option<&Interaction> = None;
    interactions
        .iter()
        .map(|interaction| {
            let difference = previous
                .filter(|previous| previous.request.path == interaction.request.path)
                .and_then(|previous| difference(&previous.request.body, &interaction.request.body));
            previous = Some(interaction);
            let (continues, body) = match difference {
                Some(difference) => (true, difference),
                None => (false, interaction.request.body.clone()),
            };
            InteractionFile {
                request: RequestFile {
                    path: interaction.request.path.clone(),
                    continues,
                    body,
                    whole: interaction.request.whole,
                },
                response: interaction.response.clone(),
                round: interaction.round,
                simulator: false,
                speaker: interaction.speaker,
            }
        })
        .collect()
}

/// `body` as the difference from `previous` ([`continued`] gives `body` back), when it is one:
/// both maps, no key of `previous` left out, and every list that changed `previous`'s with
/// items appended (a list changed otherwise, or a key removed, cannot be said as a difference).
fn difference(previous: &Value, body: &Value) -> Option<Value> {
    let (Value::Object(previous), Value::Object(body)) = (previous, body) else {
        return None;
    };
    if previous.keys().any(|key| !body.contains_key(key)) {
        return None;
    }
    let mut difference = Map::new();
    for (key, value) in body {
        match (previous.get(key), value) {
            (Some(before), value) if before == value => {}
            (Some(Value::Array(before)), Value::Array(after)) => {
                if after.len() < before.len() || after[..before.len()] != before[..] {
                    return None;
                }
                difference.insert(key.clone(), Value::Array(after[before.len()..].to_vec()));
            }
            // A list in the difference is appended: a new list where there was none, or
            // where there was another value, cannot be said as one.
            (_, Value::Array(_)) => return None,
            (_, value) => {
                difference.insert(key.clone(), value.clone());
            }
        }
    }
    Some(Value::Object(difference))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn interaction(body: Value, answer: &str) -> Interaction {
        Interaction {
            request: RecordedRequest {
                path: "/v1/chat/completions".into(),
                body,
                whole: true,
            },
            response: RecordedResponse {
                status: 200,
                body: json!({"choices": [{"message": {"content": answer}}]}),
                events: None,
                retried: Vec::new(),
            },
            round: None,
            speaker: Speaker::Harness,
        }
    }

    fn conversation() -> TrialRecording {
        let system = json!({"role": "system", "content": "be brief"});
        let user = json!({"role": "user", "content": "list the tasks"});
        let assistant = json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1"}]});
        let tool = json!({"role": "tool", "tool_call_id": "c1", "content": "[]"});
        TrialRecording {
            interactions: vec![
                interaction(
                    json!({"model": "m", "tools": [{"name": "list"}], "messages": [system, user]}),
                    "calling",
                ),
                interaction(
                    json!({"model": "m", "tools": [{"name": "list"}], "messages": [system, user, assistant, tool], "temperature": 0}),
                    "done",
                ),
                // Not a continuation: the conversation was cut, not grown.
                interaction(
                    json!({"model": "m", "tools": [{"name": "list"}], "messages": [user]}),
                    "again",
                ),
            ],
        }
    }

    fn cassette() -> Cassette {
        let mut other = conversation();
        other.interactions.pop();
        Cassette {
            version: VERSION,
            task_id: "t".into(),
            faults: None,
            trials: vec![conversation(), other, conversation()],
        }
    }

    #[test]
    fn a_compact_file_reads_back_whole_and_equal() {
        let cassette = cassette();
        let text = cassette.to_text().unwrap();
        let read = Cassette::parse(&text, std::path::Path::new("t.yaml")).unwrap();
        assert_eq!(read, cassette);
    }

    #[test]
    fn a_grown_conversation_is_written_as_what_it_appends_and_a_repeated_trial_once() {
        let file = CassetteFile::compact(&cassette());
        let first = file.trials[0].interactions.as_ref().unwrap();
        assert!(!first[0].request.continues);
        assert!(first[1].request.continues);
        assert_eq!(
            first[1].request.body,
            json!({"messages": [{"role": "assistant", "content": null, "tool_calls": [{"id": "c1"}]}, {"role": "tool", "tool_call_id": "c1", "content": "[]"}], "temperature": 0})
        );
        // A list that shrank cannot be a difference: written whole.
        assert!(!first[2].request.continues);
        assert_eq!(
            (file.trials[1].same_as, file.trials[2].same_as),
            (None, Some(0))
        );
    }

    #[test]
    fn a_file_that_cannot_be_expanded_names_the_place() {
        let path = std::path::Path::new("t.yaml");
        let first_continues = "version: 2\ntask_id: t\ntrials:\n- interactions:\n  - request: {continues: true, body: {}}\n    response: {body: {}}\n";
        let error = Cassette::parse(first_continues, path)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("trials[0].interactions[0].request.continues"),
            "{error}"
        );
        let later = "version: 2\ntask_id: t\ntrials:\n- same_as: 0\n";
        let error = Cassette::parse(later, path).unwrap_err().to_string();
        assert!(
            error.contains("trials[0].same_as: 0 is not an earlier trial"),
            "{error}"
        );
        let version = "version: 4\ntask_id: t\ntrials: []\n";
        let error = Cassette::parse(version, path).unwrap_err().to_string();
        assert!(error.contains("version 4 is not supported"), "{error}");
    }

    #[test]
    fn a_file_that_would_expand_past_the_limit_is_refused_before_it_is_built() {
        const MIB: u64 = 1024 * 1024;
        let expand = |text: &str| {
            serde_saphyr::from_str::<CassetteFile>(text)
                .unwrap()
                .expand_within(MIB)
        };
        let head = "version: 2\ntask_id: t\ntrials:\n- interactions:\n";
        let call = |continues: bool, text: &str| {
            format!(
                "  - request: {{continues: {continues}, body: {{messages: [{text}]}}}}\n    response: {{body: {{}}}}\n"
            )
        };
        // Each call continues the previous one with a short text: a file of 50 kB stands for
        // 500 calls of up to 16 kB each whole (4 MB); refused at trial 0.
        let text = "x".repeat(32);
        let calls: String = (0..500).map(|index| call(index > 0, &text)).collect();
        let error = expand(&format!("{head}{calls}")).unwrap_err();
        assert_eq!(
            error,
            "trials[0]: the cassette expands to more than 1 MiB of whole requests and answers (`continues`, `same_as`); it is not one clawtest recorded: record it again"
        );
        // One such call fits: the limit is on the whole expansion.
        assert!(expand(&format!("{head}{}", call(false, &text))).is_ok());
        // Repeating a trial counts as often as it is repeated.
        let big = call(false, &"y".repeat(64 * 1024));
        let error = expand(&format!("{head}{big}{}", "- same_as: 0\n".repeat(20))).unwrap_err();
        assert!(
            error.starts_with("trials[15]: the cassette expands"),
            "{error}"
        );
        // Cassette::parse applies the limit every run uses.
        assert_eq!(EXPANDED_LIMIT, 256 * MIB);
    }

    #[test]
    fn a_version_1_file_still_reads() {
        let text = "version: 1\ntask_id: t\ntrials:\n- interactions:\n  - request: {body: {messages: [{role: user, content: hi}]}}\n    response: {body: {choices: []}}\n";
        let cassette = Cassette::parse(text, std::path::Path::new("t.yaml")).unwrap();
        assert_eq!(cassette.version, 1);
        assert_eq!(
            cassette.trials[0].interactions[0].request.body,
            json!({"messages": [{"role": "user", "content": "hi"}]})
        );
        assert!(!cassette.trials[0].interactions[0].request.whole);
    }
}
