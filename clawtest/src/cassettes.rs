//! `cargo clawtest cassettes`: the state of a suite's cassettes (docs/cassettes.md), pruning
//! the unused ones, and upgrading old-format files.
//!
//! Whether a cassette still answers its task cannot be known without the agent: the requests
//! it sends are what changed. So the status is read from a replay run of the whole suite (no
//! model is called): each replaying gateway notes the first call its cassette could not
//! answer, or a trial that made fewer calls than recorded, in the run's `StaleLog`, with the
//! recorded and the sent request as a diff. [`status`] puts that beside the folder's files:
//! current, diverged (at which trial and call, and why), missing, not needed (no cassette and
//! no model call), unreadable, unchecked (a trial that ended otherwise, so the replay did not
//! get to the end), and unused (a file no task of the suite names).

use std::path::{Path, PathBuf};

use crate::llm::gateway::{Cassette, CassetteError, StaleLog, StaleTrial};
use crate::results::{RunSummary, TrialStatus};

/// One cassette's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Every trial replayed whole.
    Current,
    /// A trial the cassette no longer answers: the first (lowest-numbered) one.
    Diverged(StaleTrial),
    /// The task has no cassette and its harness calls the model.
    Missing,
    /// The task has no cassette and its harness made no model call: none is needed.
    NotNeeded,
    /// The file cannot be read as a cassette of its task.
    Unreadable(String),
    /// A trial ended otherwise than graded (the harness crashed, the run was stopped) before
    /// its cassette could be checked to the end.
    Unchecked(String),
    /// No task of the suite has this id.
    Unused,
}

impl State {
    /// The cassette needs recording (again), or could not be checked: a state `cassettes`
    /// fails on.
    pub fn needs_attention(&self) -> bool {
        !matches!(self, State::Current | State::NotNeeded | State::Unused)
    }

    /// The state's word, as the status shows it.
    pub fn word(&self) -> &'static str {
        match self {
            State::Current => "current",
            State::Diverged(_) => "diverged",
            State::Missing => "missing",
            State::NotNeeded => "not needed",
            State::Unreadable(_) => "unreadable",
            State::Unchecked(_) => "unchecked",
            State::Unused => "unused",
        }
    }
}

/// One line of the status: a task's cassette, or a file no task names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The task id (a file's stem, for an unused one).
    pub task_id: String,
    /// The cassette file (where it is, or would be).
    pub path: PathBuf,
    /// Its state.
    pub state: State,
}

/// The state of each task's cassette in `folder` after a replay run (`summary`, whose
/// gateways noted the stale trials in `stale`), in task order, then the unused files in name
/// order. `task_ids` are every task of the suite (a file none of them names is unused).
pub fn status(
    task_ids: &[String],
    folder: &Path,
    summary: &RunSummary,
    stale: &StaleLog,
) -> Vec<Entry> {
    let mut entries: Vec<Entry> = task_ids
        .iter()
        .map(|task_id| Entry {
            task_id: task_id.clone(),
            path: Cassette::path_for(folder, task_id),
            state: state_of(task_id, folder, summary, stale),
        })
        .collect();
    entries.extend(unused(task_ids, folder).into_iter().map(|path| Entry {
        task_id: stem(&path),
        path,
        state: State::Unused,
    }));
    entries
}

fn state_of(task_id: &str, folder: &Path, summary: &RunSummary, stale: &StaleLog) -> State {
    let noted = stale.of_task(task_id);
    match Cassette::load(folder, task_id) {
        Err(CassetteError::Missing { .. }) => {
            return match noted {
                Some(_) => State::Missing,
                None => State::NotNeeded,
            };
        }
        Err(error) => return State::Unreadable(error.to_string()),
        Ok(_) => {}
    }
    if let Some(stale) = noted {
        return State::Diverged(stale);
    }
    let trials = summary
        .verdicts
        .iter()
        .filter(|verdict| verdict.task_id == task_id)
        .flat_map(|verdict| &verdict.trials);
    for trial in trials {
        let reason = match &trial.status {
            TrialStatus::Graded { .. } => continue,
            TrialStatus::Error { message } => message.clone(),
            TrialStatus::Interrupted => "the run was interrupted".into(),
            TrialStatus::NotRun { reason } => reason.clone(),
        };
        return State::Unchecked(format!("trial {}: {reason}", trial.trial));
    }
    State::Current
}

/// The cassettes in `folder` that no task of `task_ids` names, in name order: the `*.yaml`
/// files (not links) that read as the cassette of the task their name says. Any other file
/// is not a cassette of the suite's, and is never called unused (nor pruned).
pub fn unused(task_ids: &[String], folder: &Path) -> Vec<PathBuf> {
    yaml_files(folder)
        .into_iter()
        .filter(|path| !task_ids.contains(&stem(path)))
        .filter(|path| Cassette::load(folder, &stem(path)).is_ok())
        .collect()
}

/// The `*.yaml` files of `folder` that are files, not links, in name order.
fn yaml_files(folder: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_file()))
        .map(|entry| entry.path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "yaml")
        })
        .collect();
    files.sort();
    files
}

/// Removes the unused cassettes of `folder`; returns those removed.
pub fn prune(task_ids: &[String], folder: &Path) -> std::io::Result<Vec<PathBuf>> {
    let files = unused(task_ids, folder);
    for file in &files {
        std::fs::remove_file(file)?;
    }
    Ok(files)
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The status as the terminal shows it: one line per cassette, and under a diverged one the
/// reason and the diff of the recorded request against the one sent. The texts come from
/// the agent and the model, so they are made harmless for a terminal.
pub fn render(entries: &[Entry]) -> String {
    let width = entries
        .iter()
        .map(|entry| entry.path.display().to_string().chars().count())
        .max()
        .unwrap_or(0);
    let mut text = String::new();
    for entry in entries {
        let path = crate::escape::terminal(&entry.path.display().to_string());
        let line = match &entry.state {
            State::Diverged(stale) => format!(
                "{path:<width$}  diverged at trial {} call {}",
                stale.trial, stale.call
            ),
            state => format!("{path:<width$}  {}", state.word()),
        };
        text.push_str(&line);
        text.push('\n');
        let detail = match &entry.state {
            State::Diverged(stale) => Some(match &stale.diff {
                Some(diff) => format!("{}\n{diff}", stale.reason),
                None => stale.reason.clone(),
            }),
            State::Unreadable(reason) | State::Unchecked(reason) => Some(reason.clone()),
            _ => None,
        };
        for line in detail.iter().flat_map(|detail| detail.lines()) {
            text.push_str("    ");
            text.push_str(&crate::escape::terminal(line));
            text.push('\n');
        }
    }
    text
}

/// What `cassettes upgrade` did to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upgraded {
    /// The file.
    pub path: PathBuf,
    /// Its size before, in bytes.
    pub before: u64,
    /// Its size after (the same when it was left as it is).
    pub after: u64,
    /// What happened to it.
    pub outcome: Upgrade,
}

/// What `cassettes upgrade` did to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Upgrade {
    /// Rewritten in the current format, `marked_whole` requests marked `whole: true`.
    Rewritten {
        /// The requests that were not marked whole before.
        marked_whole: usize,
    },
    /// Already as this build writes it.
    Unchanged,
    /// Written by hand (it has comments): left as it is, since rewriting would lose them and
    /// `whole` would change how it matches.
    HandWritten,
    /// Not a cassette this build reads.
    Unreadable(String),
}

/// Rewrites every cassette clawtest recorded in `folder` in the format a fresh recording
/// writes: compact (version 3, speakers named), every request `whole: true` (a recording
/// holds the whole request; files recorded before `whole` existed replay with looser
/// matching). A file with a comment line is hand-written and left as it is. Files in name
/// order.
pub fn upgrade(folder: &Path) -> std::io::Result<Vec<Upgraded>> {
    // A folder that cannot be read is an error, not a folder without cassettes.
    std::fs::read_dir(folder)?;
    yaml_files(folder)
        .into_iter()
        .map(|path| upgrade_file(&path))
        .collect()
}

fn upgrade_file(path: &Path) -> std::io::Result<Upgraded> {
    let text = std::fs::read_to_string(path)?;
    let before = text.len() as u64;
    let done = |outcome: Upgrade, after: u64| Upgraded {
        path: path.to_path_buf(),
        before,
        after,
        outcome,
    };
    // A comment starts in the first column; a line of a block scalar (a prompt's Markdown
    // heading) is indented.
    if text.lines().any(|line| line.starts_with('#')) {
        return Ok(done(Upgrade::HandWritten, before));
    }
    let mut cassette = match Cassette::parse(&text, path) {
        Ok(cassette) => cassette,
        Err(error) => return Ok(done(Upgrade::Unreadable(error.to_string()), before)),
    };
    let mut marked_whole = 0;
    for trial in &mut cassette.trials {
        for interaction in &mut trial.interactions {
            if !interaction.request.whole {
                interaction.request.whole = true;
                marked_whole += 1;
            }
        }
    }
    let upgraded = cassette.to_text().map_err(std::io::Error::other)?;
    if upgraded == text {
        return Ok(done(Upgrade::Unchanged, before));
    }
    crate::persist::write(
        path,
        upgraded.as_bytes(),
        crate::persist::Durability::Recording,
    )?;
    Ok(done(
        Upgrade::Rewritten { marked_whole },
        upgraded.len() as u64,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "version: 1\ntask_id: t\ntrials:\n- interactions:\n  - request:\n      path: /v1/chat/completions\n      body: {model: m, messages: [{role: user, content: hi}]}\n    response: {body: {choices: []}}\n  - request:\n      path: /v1/chat/completions\n      body: {model: m, messages: [{role: user, content: hi}, {role: assistant, content: ok}, {role: user, content: more}]}\n    response: {body: {choices: []}}\n- interactions:\n  - request:\n      path: /v1/chat/completions\n      body: {model: m, messages: [{role: user, content: hi}]}\n    response: {body: {choices: []}}\n  - request:\n      path: /v1/chat/completions\n      body: {model: m, messages: [{role: user, content: hi}, {role: assistant, content: ok}, {role: user, content: more}]}\n    response: {body: {choices: []}}\n";

    #[test]
    fn upgrade_rewrites_a_recording_compact_and_whole_and_leaves_a_hand_written_one() {
        let folder = tempfile::tempdir().unwrap();
        std::fs::write(folder.path().join("t.yaml"), OLD).unwrap();
        let hand = format!(
            "# answers written by hand\n{}",
            OLD.replace("task_id: t", "task_id: h")
        );
        std::fs::write(folder.path().join("h.yaml"), &hand).unwrap();
        let upgraded = upgrade(folder.path()).unwrap();
        assert_eq!(upgraded[0].outcome, Upgrade::HandWritten);
        assert_eq!(
            std::fs::read_to_string(folder.path().join("h.yaml")).unwrap(),
            hand
        );
        assert_eq!(upgraded[1].outcome, Upgrade::Rewritten { marked_whole: 4 });
        assert!(upgraded[1].after < upgraded[1].before, "{upgraded:?}");
        let old = Cassette::parse(OLD, Path::new("t.yaml")).unwrap();
        let new = Cassette::load(folder.path(), "t").unwrap();
        assert_eq!(new.version, crate::llm::gateway::cassette::VERSION);
        // The same calls, now matched whole.
        for (old, new) in old.trials.iter().zip(&new.trials) {
            for (old, new) in old.interactions.iter().zip(&new.interactions) {
                assert_eq!(old.request.body, new.request.body);
                assert!(new.request.whole);
            }
        }
        // A second upgrade finds nothing to do.
        assert_eq!(
            upgrade(folder.path()).unwrap()[1].outcome,
            Upgrade::Unchanged
        );
    }

    #[test]
    fn prune_removes_only_the_cassettes_no_task_names() {
        let folder = tempfile::tempdir().unwrap();
        let cassette = |task: &str| format!("version: 1\ntask_id: {task}\ntrials: []\n");
        for (name, text) in [
            ("kept.yaml", cassette("kept")),
            ("gone.yaml", cassette("gone")),
            // Not cassettes of the task their name says: never taken for unused ones.
            ("notes.txt", cassette("notes")),
            ("settings.yaml", "retries: 3\n".to_string()),
            ("renamed.yaml", cassette("other")),
        ] {
            std::fs::write(folder.path().join(name), text).unwrap();
        }
        let gone = folder.path().join("gone.yaml");
        std::os::unix::fs::symlink(&gone, folder.path().join("link.yaml")).unwrap();
        let removed = prune(&["kept".to_string()], folder.path()).unwrap();
        assert_eq!(removed, vec![gone]);
        for left in [
            "kept.yaml",
            "notes.txt",
            "settings.yaml",
            "renamed.yaml",
            "link.yaml",
        ] {
            assert!(
                folder.path().join(left).symlink_metadata().is_ok(),
                "{left}"
            );
        }
    }
}
