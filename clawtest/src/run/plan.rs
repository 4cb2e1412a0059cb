//! What a task's trials run, decided once per task before any of them starts: the
//! [`TrialPlan`] (the task with its threshold, the catalogue extended with the task's own
//! services, the commands its checks run, whether it runs as a closed loop), what its running
//! trials share while they run ([`Loaded`]: where its model answers come from, an
//! [`AnswerSource`], and its tools document), and the [`Provisions`] every trial of the run
//! shares.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

use super::settings::HarnessLaunch;
use crate::grade::commands::PlannedCommand;
use crate::llm::gateway::Recorder;
use crate::llm::{AnswerSource, ModelAccess};
use crate::sandbox::Sandbox;
use crate::services::Catalogue;
use crate::task::Task;

/// The plan every trial of one task runs (a trial adds its number).
pub(crate) struct TrialPlan {
    pub(crate) task: Task,
    /// The final score a trial needs to pass (the task's, else the run's).
    pub(crate) threshold: f64,
    /// The faults its trials get: the task's `error_injection` over the run's `[faults]`.
    pub(crate) faults: crate::fault::FaultSettings,
    /// The catalogue with the task's own services (`services:` in the task), whose routes its
    /// tools may name; or why they could not be added (each trial is then an error).
    pub(crate) catalogue: Result<Arc<Catalogue>, String>,
    /// The `exit_code` / `pytest_pass` commands, run where the harness ran once it has ended
    /// (a closed loop's checkpoints' among them).
    pub(crate) commands: Vec<PlannedCommand>,
    /// The task runs as a closed loop (it has checkpoints or feedback).
    pub(crate) closed_loop: bool,
    /// The run's cassette folder, where its trials' answers are replayed from or recorded to.
    cassettes: Option<PathBuf>,
    /// What its running trials share, while any runs ([`TrialPlan::loaded`]).
    loaded: Mutex<Option<Arc<Loaded>>>,
}

/// What a task's running trials share, loaded when its first trial starts and let go once
/// its last has ended ([`TrialPlan::let_go`]): a run holds the cassettes and tools documents
/// of the tasks running, not the whole suite's (10,400 cassettes, expanded, and tools
/// documents were most of such a run's memory, about 60 KB a task).
pub(crate) struct Loaded {
    /// Where its trials' model answers come from.
    pub(crate) answers: AnswerSource,
    /// The tools.json document (with the task's own services when they could be added).
    pub(crate) tools: Value,
    /// The same, as every trial's `tools.json` holds it (rendered once, not once a trial).
    pub(crate) tools_text: String,
}

impl TrialPlan {
    /// Plans `task`'s trials against the run's `catalogue`, with answers from `cassettes`
    /// (read when its first trial starts), and the run's threshold and faults where the task
    /// sets none of its own.
    pub(crate) fn new(
        task: Task,
        catalogue: &Arc<Catalogue>,
        options: &super::settings::RunOptions,
        cassettes: Option<PathBuf>,
    ) -> TrialPlan {
        let extended = match task.local_services.is_empty() {
            true => Ok(Arc::clone(catalogue)),
            false => task
                .catalogue(catalogue)
                .map(Arc::new)
                .map_err(|error| error.to_string()),
        };
        let closed_loop = crate::closed_loop::applies(&task);
        let commands = match closed_loop {
            true => crate::grade::commands::plan(&crate::closed_loop::supervisor::supervised_task(
                &task,
            )),
            false => crate::grade::commands::plan(&task),
        };
        TrialPlan {
            threshold: task.pass_threshold.unwrap_or(options.pass_threshold),
            faults: task
                .error_injection
                .as_ref()
                .map_or(options.faults, |injection| injection.over(&options.faults)),
            task,
            catalogue: extended,
            commands,
            closed_loop,
            cassettes,
            loaded: Mutex::new(None),
        }
    }

    /// What the task's trials share: loaded by the first trial that asks (the others wait for
    /// it, so the cassette is read once), kept until [`TrialPlan::let_go`].
    pub(crate) fn loaded(&self, models: &ModelAccess) -> Arc<Loaded> {
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(loaded.get_or_insert_with(|| {
            let tools = match &self.catalogue {
                Ok(catalogue) => crate::surfaces::tools_json(&self.task, catalogue),
                // Each trial is an error then (before it is served): no route to describe.
                Err(_) => crate::surfaces::tools_json(&self.task, &Catalogue::default()),
            };
            Arc::new(Loaded {
                answers: AnswerSource::decide(models, self.cassettes.as_deref(), &self.task.id),
                tools_text: tools.to_string(),
                tools,
            })
        }))
    }

    /// Lets go of what the trials shared, once the last has ended (one still running keeps
    /// its own hold; a later trial would load it again).
    pub(crate) fn let_go(&self) {
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        *loaded = None;
    }

    /// When the task's cassette (in `answers`) was recorded under other fault settings than
    /// its trials now get: what to say about it.
    pub(crate) fn changed_faults(&self, answers: &AnswerSource) -> Option<String> {
        let AnswerSource::Replay(cassette) = answers else {
            return None;
        };
        let recorded = cassette.faults?;
        (recorded != self.faults).then(|| {
            format!(
                "the fault settings changed: the cassette was recorded with {} and this run injects {}, so the agent met other faults than when recorded; record again (--mode record), or restore the settings ([faults] in clawtest.toml, --error-rate, the task's error_injection)",
                recorded.describe(),
                self.faults.describe()
            )
        })
    }
}

/// What every trial of a run is given besides its plan.
pub(crate) struct Provisions {
    /// Where the harness runs.
    pub(crate) sandbox: Arc<dyn Sandbox>,
    /// Answers the tasks' `llm_judge` components and checkpoints.
    pub(crate) judge: Arc<crate::judge::Judging>,
    /// How to start the harness.
    pub(crate) harness: HarnessLaunch,
    /// The prices, budget and rules of every trial's gateway.
    pub(crate) models: ModelAccess,
    /// Set in record mode: where the trials' exchanges go.
    pub(crate) recorder: Option<Recorder>,
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::Mode;
    use crate::llm::gateway::{Budget, Prices};

    fn replaying() -> ModelAccess {
        ModelAccess {
            mode: Mode::Replay,
            upstream: None,
            prices: Arc::new(Prices::default()),
            budget: Arc::new(Budget::new(None)),
            rules: Arc::default(),
            simulator_provider: crate::config::Provider::OpenAi,
            stale: Arc::default(),
        }
    }

    #[test]
    fn a_task_s_cassette_is_read_when_its_first_trial_asks_and_let_go_after_its_last() {
        let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/demo");
        let cassettes = tempfile::tempdir().unwrap();
        let cassette = cassettes.path().join("todo-triage.yaml");
        std::fs::copy(demo.join("cassettes/todo-triage.yaml"), &cassette).unwrap();
        let path = demo.join("tasks/todo-triage.yaml");
        let catalogue = Arc::new(Catalogue::builtin());
        let task =
            crate::task::parse(&path, std::fs::read_to_string(&path).unwrap(), &catalogue).unwrap();
        let options = super::super::settings::RunOptions {
            trials: 3,
            jobs: 1,
            pass_threshold: 0.75,
            gates: Default::default(),
            faults: Default::default(),
            baseline: None,
            snapshots: None,
        };
        let plan = TrialPlan::new(task, &catalogue, &options, Some(cassettes.path().into()));
        // Planning reads nothing: a suite of 10,000 tasks does not hold 10,000 cassettes.
        assert!(plan.loaded.lock().unwrap().is_none());
        let models = replaying();
        let first = plan.loaded(&models);
        assert!(
            matches!(&first.answers, AnswerSource::Replay(cassette) if cassette.trials.len() == 3),
            "{:?}",
            first.answers
        );
        assert!(
            first
                .tools
                .as_array()
                .is_some_and(|tools| !tools.is_empty())
        );
        // The task's other trials share it: the cassette is read once, even when it changes.
        std::fs::remove_file(&cassette).unwrap();
        assert!(Arc::ptr_eq(&first, &plan.loaded(&models)));
        plan.let_go();
        assert!(plan.loaded.lock().unwrap().is_none());
        // A running trial keeps its own hold; one asking later reads the folder again.
        assert!(matches!(first.answers, AnswerSource::Replay(_)));
        assert!(matches!(
            plan.loaded(&models).answers,
            AnswerSource::NoCassette { .. }
        ));
    }
}
