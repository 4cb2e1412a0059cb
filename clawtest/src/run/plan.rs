//! What a task's trials run, decided once per task before any of them starts: the
//! [`TrialPlan`] (the task with its threshold, the catalogue extended with the task's own
//! services, its tools document, the commands its checks run, whether it runs as a closed
//! loop, and where its model answers come from, an [`AnswerSource`]), and the
//! [`Provisions`] every trial of the run shares.

use std::sync::Arc;

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
    /// The tools.json document (with the task's own services when they could be added).
    pub(crate) tools: Value,
    /// The `exit_code` / `pytest_pass` commands, run where the harness ran once it has ended
    /// (a closed loop's checkpoints' among them).
    pub(crate) commands: Vec<PlannedCommand>,
    /// The task runs as a closed loop (it has checkpoints or feedback).
    pub(crate) closed_loop: bool,
    /// Where its trials' model answers come from.
    pub(crate) answers: AnswerSource,
}

impl TrialPlan {
    /// Plans `task`'s trials against the run's `catalogue`, with `answers`, and the run's
    /// threshold and faults where the task sets none of its own.
    pub(crate) fn new(
        task: Task,
        catalogue: &Arc<Catalogue>,
        options: &super::settings::RunOptions,
        answers: AnswerSource,
    ) -> TrialPlan {
        let extended = match task.local_services.is_empty() {
            true => Ok(Arc::clone(catalogue)),
            false => task
                .catalogue(catalogue)
                .map(Arc::new)
                .map_err(|error| error.to_string()),
        };
        let tools = crate::surfaces::tools_json(&task, extended.as_ref().unwrap_or(catalogue));
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
            tools,
            commands,
            closed_loop,
            answers,
        }
    }
}

impl TrialPlan {
    /// When the task's cassette was recorded under other fault settings than its trials now
    /// get: what to say about it.
    pub(crate) fn changed_faults(&self) -> Option<String> {
        let AnswerSource::Replay(cassette) = &self.answers else {
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
    /// Answers the tasks' `llm_judge` components.
    pub(crate) judge: Arc<dyn crate::judge::Judge>,
    /// How to start the harness.
    pub(crate) harness: HarnessLaunch,
    /// The prices, budget and rules of every trial's gateway.
    pub(crate) models: ModelAccess,
    /// Set in record mode: where the trials' exchanges go.
    pub(crate) recorder: Option<Recorder>,
}
