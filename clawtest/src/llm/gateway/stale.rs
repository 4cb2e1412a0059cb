//! The trials whose cassette no longer answers them ([`StaleLog`]): every replaying gateway of
//! a run notes here the first call its cassette could not answer (none, a request that
//! diverges, a call or a trial more than recorded) and a trial that made fewer calls than
//! recorded. `cargo clawtest cassettes` reads it after a replay run to say which cassettes are
//! current; `record-missing` records exactly the tasks it names.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde_json::Value;

/// Why a trial's cassette does not answer it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleTrial {
    /// The trial's number, from 0.
    pub trial: u32,
    /// The first call the cassette could not answer (for a trial that made fewer calls than
    /// recorded: the first recorded call it did not make).
    pub call: usize,
    /// What happened, in words (the gateway failure's own sentence, without its place).
    pub reason: String,
    /// For a request that diverges: the recorded request and the one made, both normalised as
    /// the replay compares them, as a unified diff of their YAML.
    pub diff: Option<String>,
}

/// The stale trials of one run, by task and trial (in that order, whatever order they ended).
#[derive(Debug, Default)]
pub struct StaleLog {
    trials: Mutex<BTreeMap<(String, u32), StaleTrial>>,
}

impl StaleLog {
    /// Notes `stale` for trial `stale.trial` of `task_id`, unless an earlier note is kept.
    pub(crate) fn note(&self, task_id: &str, stale: StaleTrial) {
        self.lock()
            .entry((task_id.to_string(), stale.trial))
            .or_insert(stale);
    }

    /// The first stale trial of `task_id`, if any (the lowest trial number).
    pub fn of_task(&self, task_id: &str) -> Option<StaleTrial> {
        self.lock()
            .iter()
            .find(|((task, _), _)| task == task_id)
            .map(|(_, stale)| stale.clone())
    }

    /// Whether trial `trial` of `task_id` is stale.
    pub(crate) fn contains(&self, task_id: &str, trial: u32) -> bool {
        self.lock().contains_key(&(task_id.to_string(), trial))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<(String, u32), StaleTrial>> {
        // A poisoned lock only means a writer panicked; the map is still whole.
        self.trials
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The unified diff of two request bodies, each written as YAML (a multi-line string stays
/// several lines, so a prompt that changed in one sentence shows that line).
pub(crate) fn diff(recorded: &Value, actual: &Value) -> String {
    let yaml = |value: &Value| serde_saphyr::to_string(value).unwrap_or_else(|_| value.to_string());
    let (recorded, actual) = (yaml(recorded), yaml(actual));
    similar::TextDiff::from_lines(&recorded, &actual)
        .unified_diff()
        .context_radius(3)
        .header("recorded", "now")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_diff_shows_the_changed_line_of_a_long_prompt() {
        let recorded = json!({"messages": [{"role": "system", "content": "one\ntwo\nthree\n"}]});
        let actual = json!({"messages": [{"role": "system", "content": "one\n2\nthree\n"}]});
        let diff = diff(&recorded, &actual);
        assert!(diff.starts_with("--- recorded\n+++ now\n"), "{diff}");
        assert!(diff.contains("\n-    two\n+    2\n"), "{diff}");
    }

    #[test]
    fn the_first_note_of_a_trial_is_kept_and_tasks_are_apart() {
        let log = StaleLog::default();
        let note = |call| StaleTrial {
            trial: 1,
            call,
            reason: "r".into(),
            diff: None,
        };
        log.note("a", note(2));
        log.note("a", note(5));
        assert_eq!(log.of_task("a").map(|stale| stale.call), Some(2));
        assert!(log.contains("a", 1) && !log.contains("a", 0));
        assert_eq!(log.of_task("b"), None);
    }
}
