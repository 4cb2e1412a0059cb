//! `run --oracle`'s backend: the process backend with the oracle agent as every trial's
//! harness (`PROGRAM oracle-agent`, PROGRAM being clawtest's own binary), each task's
//! [`Plan`] made once, up front, and handed to its trials in a file. A task whose plan cannot
//! be made is an error of its trials, with what to write. The trial's checks run where the
//! chosen backend runs commands (`sandbox::commands`): on docker, in a container of the
//! harness image over the workspace the oracle left, never on the host.

use std::collections::BTreeMap;
use std::path::PathBuf;

use tokio_util::sync::CancellationToken;

use super::plan;
use crate::sandbox::commands::{CommandPlace, CommandRule, CommandsError, Origin};
use crate::sandbox::process::ProcessSandbox;
use crate::sandbox::{Launch, Running, Sandbox, SandboxError};
use crate::services::Catalogue;
use crate::task::Task;
use crate::world::{World, WorldOptions};

/// Runs the oracle as the harness of every trial.
pub struct OracleSandbox {
    program: PathBuf,
    /// Per task id: the plan's file, or why there is none.
    plans: BTreeMap<String, Result<PathBuf, String>>,
    /// Where the trials' checks run: the chosen backend's place.
    commands: CommandPlace,
    /// Holds the plan files for as long as the run.
    _folder: tempfile::TempDir,
}

impl OracleSandbox {
    /// Makes the plans of `tasks` (their services from `catalogue`); `program` is the binary
    /// whose `oracle-agent` subcommand plays a plan; the checks run at `commands`.
    pub fn new(
        program: PathBuf,
        tasks: &[Task],
        catalogue: &Catalogue,
        commands: CommandPlace,
    ) -> std::io::Result<Self> {
        let folder = tempfile::Builder::new()
            .prefix("clawtest-oracle-")
            .tempdir()?;
        let mut plans = BTreeMap::new();
        for task in tasks {
            let made = plan_file(task, catalogue, &folder);
            plans.insert(task.id.clone(), made);
        }
        Ok(OracleSandbox {
            program,
            plans,
            commands,
            _folder: folder,
        })
    }
}

fn plan_file(
    task: &Task,
    catalogue: &Catalogue,
    folder: &tempfile::TempDir,
) -> Result<PathBuf, String> {
    let catalogue = task
        .catalogue(catalogue)
        .map_err(|error| error.to_string())?;
    let world = World::new(
        &catalogue,
        &task.services,
        &task.seed_fixtures(),
        &task.tool_bindings(),
        WorldOptions::default(),
    )
    .map_err(|error| error.to_string())?;
    let plan = plan(task, &world, &catalogue).map_err(|gaps| {
        let reasons: Vec<String> = gaps
            .iter()
            .map(|gap| format!("{}: {} ({})", gap.field, gap.message, gap.help))
            .collect();
        format!("no oracle for this task: {}", reasons.join("; "))
    })?;
    let path = folder.path().join(format!("{}.json", task.id));
    let text = serde_json::to_string(&plan).map_err(|error| error.to_string())?;
    std::fs::write(&path, text).map_err(|error| error.to_string())?;
    Ok(path)
}

impl Sandbox for OracleSandbox {
    fn name(&self) -> &'static str {
        "process"
    }

    fn run(&self, mut launch: Launch, interrupt: CancellationToken) -> Running<'_> {
        let plan = self.plans.get(&launch.task_id).cloned();
        Box::pin(async move {
            let path = match plan {
                Some(Ok(path)) => path,
                Some(Err(message)) => return Err(SandboxError::Prepare { message }),
                None => {
                    return Err(SandboxError::Prepare {
                        message: format!("no oracle was planned for task `{}`", launch.task_id),
                    });
                }
            };
            launch.command = vec![
                self.program.to_string_lossy().into_owned(),
                "oracle-agent".into(),
            ];
            launch.passthrough.push((
                "CLAWTEST_ORACLE_PLAN".into(),
                path.to_string_lossy().into_owned(),
            ));
            if self.commands == CommandPlace::Host {
                return ProcessSandbox::default().run(launch, interrupt).await;
            }
            let checks = std::mem::take(&mut launch.checks);
            let (task_id, folder) = (launch.task_id.clone(), launch.folder.clone());
            let output_bytes = launch.limits.output_bytes;
            let mut finished = ProcessSandbox::default()
                .run(launch, interrupt.clone())
                .await?;
            if !checks.is_empty() {
                // In a container every origin's commands run: the rule's answer is the container.
                let commands =
                    CommandRule::new(self.commands.clone(), false).for_origin(Origin::Person);
                finished.checks = commands
                    .run(&task_id, &folder, &checks, output_bytes, &interrupt)
                    .await
                    .map_err(|error| match error {
                        CommandsError::Sandbox(error) => error,
                        other => SandboxError::Docker {
                            message: other.to_string(),
                        },
                    })?;
            }
            Ok(finished)
        })
    }
}
