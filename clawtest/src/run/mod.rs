//! Running a suite: plan (tasks × trials) → execute trials concurrently (at most `jobs` at a
//! time) → aggregate each task's k trials into a verdict → summarize. Progress leaves as
//! [`Event`]s through a [`Reporter`]; the trials themselves never touch a reporter.

mod harness_run;
pub mod partition;
pub mod regrade;
pub mod session;
pub(crate) mod suite;
pub(crate) mod trial;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::{Semaphore, mpsc, watch};

use crate::report::events::{Event, Reporter, TrialOutcome};
use crate::report::snapshots::{self, Review, UpdateMode};
pub use suite::Suite;

use crate::config::Gates;
use crate::config::Mode;
use crate::llm::ModelAccess;
use crate::llm::gateway::{Cassette, Recorder};
use crate::results::{InvalidEntry, RunSummary, SummaryInputs, TrialSummary, Verdict, aggregate};
use crate::sandbox::Sandbox;
use crate::services::Catalogue;
use crate::task::Task;

/// The choices of one run (config merged with the command line).
#[derive(Debug, Clone)]
pub(crate) struct RunOptions {
    /// Trials per task (k); 0 runs one.
    pub(crate) trials: u32,
    /// How many trials run at once; 0 runs one.
    pub(crate) jobs: usize,
    /// The final score a trial needs to pass, for tasks without their own `pass_threshold`.
    pub(crate) pass_threshold: f64,
    /// The suite-level thresholds the summary checks.
    pub(crate) gates: Gates,
    /// Results to compare against (`--baseline`); regressions fail the run.
    pub(crate) baseline: Option<Box<RunSummary>>,
    /// Compare each task's grade breakdown with the snapshots in this folder (`--snapshots`),
    /// as `INSTA_UPDATE` asks; a change fails the run before anything reports its status.
    pub(crate) snapshots: Option<(PathBuf, UpdateMode)>,
}

/// How to start the harness.
#[derive(Debug, Clone)]
pub(crate) struct HarnessLaunch {
    /// The program and its arguments (`harness.command`, as the sandbox names it).
    pub(crate) command: Vec<String>,
    /// `harness.env` names with their host values.
    pub(crate) passthrough: Vec<(String, String)>,
    /// The tool surfaces the harness gets.
    pub(crate) tier: crate::config::Tier,
    /// The exit codes of a harness that ran normally (`harness.success_exit_codes`).
    pub(crate) success_exit_codes: Vec<i32>,
    /// The caps on what a trial sends to the host (`[limits]`).
    pub(crate) limits: crate::config::LimitsConfig,
    /// `harness.model`, given as `CLAWTEST_MODEL` and `{model}`.
    pub(crate) model: Option<String>,
    /// `[harness] files`, read and checked.
    pub(crate) files: Vec<crate::config::HarnessFile>,
}

/// Where and with what the trials run.
pub(crate) struct Resources {
    /// How to start the harness of every trial.
    pub(crate) harness: HarnessLaunch,
    /// The folder of cassettes (read in replay, written in record mode); `None` when the
    /// harness calls no model (`run --oracle`), so no cassette is needed.
    pub(crate) cassettes: Option<std::path::PathBuf>,
    /// Where model answers come from, and the run's cost limit.
    pub(crate) models: ModelAccess,
    /// The mock services the trials' worlds serve.
    pub(crate) catalogue: Arc<Catalogue>,
    /// Where the harness runs (`process` or `docker`).
    pub(crate) sandbox: Arc<dyn Sandbox>,
    /// Answers the tasks' `llm_judge` components.
    pub(crate) judge: Arc<dyn crate::judge::Judge>,
}

/// Everything the trials share, behind one `Arc`.
struct Shared {
    tasks: Vec<Task>,
    cassettes: Vec<Result<Cassette, String>>,
    tools: Vec<String>,
    catalogue: Arc<Catalogue>,
    sandbox: Arc<dyn Sandbox>,
    judge: Arc<dyn crate::judge::Judge>,
    harness: HarnessLaunch,
    threshold: f64,
    models: ModelAccess,
    recorder: Option<Recorder>,
}

enum Progress {
    Started {
        task: usize,
        trial: u32,
    },
    Finished {
        task: usize,
        trial: u32,
        outcome: TrialOutcome,
    },
}

/// Runs every task of `suite` `options.trials` times and reports as it goes. Invalid tasks
/// are reported and not run. Returns the summary that was also sent as `RunFinished`, and the
/// snapshot review when `options.snapshots` asked for one.
pub(crate) async fn execute(
    suite: Suite,
    options: &RunOptions,
    resources: Resources,
    reporter: &mut dyn Reporter,
    interrupt: watch::Receiver<bool>,
) -> (RunSummary, Option<Review>) {
    let Resources {
        harness,
        cassettes,
        models,
        catalogue,
        sandbox,
        judge,
    } = resources;
    let k = options.trials.max(1);
    let jobs = options.jobs.max(1);
    reporter.report(&Event::RunStarted {
        tasks: suite.tasks.len(),
        trials: k,
        jobs,
        backend: sandbox.name(),
        invalid: suite.invalid.len(),
        filtered_out: suite.filtered_out,
    });
    let invalid: Vec<InvalidEntry> = suite
        .invalid
        .iter()
        .map(|error| InvalidEntry {
            path: error.path.clone(),
            line: error.first_line(),
            message: error.plain().trim_end().to_string(),
        })
        .collect();
    for entry in &invalid {
        reporter.report(&Event::TaskInvalid {
            path: entry.path.clone(),
            line: entry.line,
            message: entry.message.clone(),
        });
    }

    let shared = Arc::new(Shared {
        cassettes: suite
            .tasks
            .iter()
            .map(|task| match (models.mode, &cassettes) {
                (Mode::Replay, None) => Ok(Cassette {
                    version: crate::llm::gateway::cassette::VERSION,
                    task_id: task.id.clone(),
                    trials: Vec::new(),
                }),
                (Mode::Replay, Some(cassettes)) => {
                    Cassette::load(cassettes, &task.id).map_err(|error| error.to_string())
                }
                (Mode::Live | Mode::Record, _) => {
                    Err("cassettes are read in replay mode only".into())
                }
            })
            .collect(),
        recorder: match (models.mode, &cassettes) {
            (Mode::Record, Some(cassettes)) => Some(Recorder::new(cassettes.clone(), k)),
            _ => None,
        },
        tools: suite
            .tasks
            .iter()
            .map(|task| match task.catalogue(&catalogue) {
                // With the task's own services, whose routes its tools may name.
                Ok(extended) => crate::surfaces::tools_json(task, &extended).to_string(),
                Err(_) => crate::surfaces::tools_json(task, &catalogue).to_string(),
            })
            .collect(),
        tasks: suite.tasks,
        catalogue,
        sandbox,
        judge,
        harness,
        threshold: options.pass_threshold,
        models,
    });

    let (sender, mut receiver) = mpsc::unbounded_channel();
    let permits = Arc::new(Semaphore::new(jobs));
    let mut workers = tokio::task::JoinSet::new();
    for task in 0..shared.tasks.len() {
        for trial in 0..k {
            let (shared, permits, sender, mut interrupt) = (
                Arc::clone(&shared),
                Arc::clone(&permits),
                sender.clone(),
                interrupt.clone(),
            );
            workers.spawn(async move {
                let permit = tokio::select! {
                    permit = permits.acquire_owned() => permit.ok(),
                    () = crate::sandbox::process::interrupted(&mut interrupt) => None,
                };
                let outcome = if permit.is_none() || *interrupt.borrow() {
                    TrialOutcome::Interrupted
                } else if shared.models.budget.exhausted() {
                    TrialOutcome::NotRun {
                        reason: format!(
                            "the cost limit of ${} was reached (${:.4} spent)",
                            shared.models.budget.limit().unwrap_or_default(),
                            shared.models.budget.spent().usd()
                        ),
                    }
                } else {
                    let _ = sender.send(Progress::Started { task, trial });
                    let spec = &shared.tasks[task];
                    let context = trial::TrialContext {
                        catalogue: &shared.catalogue,
                        sandbox: shared.sandbox.as_ref(),
                        command: &shared.harness.command,
                        passthrough: &shared.harness.passthrough,
                        tier: shared.harness.tier,
                        success_exit_codes: &shared.harness.success_exit_codes,
                        limits: &shared.harness.limits,
                        model: shared.harness.model.as_deref(),
                        files: &shared.harness.files,
                        tools: &shared.tools[task],
                        threshold: spec.pass_threshold.unwrap_or(shared.threshold),
                        judge: shared.judge.as_ref(),
                        models: &shared.models,
                        recorder: shared.recorder.as_ref(),
                    };
                    trial::run(spec, trial, &shared.cassettes[task], &context, interrupt).await
                };
                let _ = sender.send(Progress::Finished {
                    task,
                    trial,
                    outcome,
                });
                drop(permit);
            });
        }
    }
    drop(sender);

    let mut finished: BTreeMap<usize, Vec<TrialSummary>> = BTreeMap::new();
    let mut verdicts: BTreeMap<usize, Verdict> = BTreeMap::new();
    while let Some(progress) = receiver.recv().await {
        match progress {
            Progress::Started { task, trial } => reporter.report(&Event::TrialStarted {
                task_id: shared.tasks[task].id.clone(),
                trial,
            }),
            Progress::Finished {
                task,
                trial,
                outcome,
            } => {
                let record = outcome.summary(&shared.tasks[task], trial);
                reporter.report(&Event::TrialFinished {
                    task_id: shared.tasks[task].id.clone(),
                    trial,
                    outcome,
                });
                let records = finished.entry(task).or_default();
                records.push(record);
                if records.len() == k as usize {
                    let spec = &shared.tasks[task];
                    let verdict = aggregate::verdict(
                        spec,
                        spec.pass_threshold.unwrap_or(shared.threshold),
                        k,
                        std::mem::take(records),
                    );
                    if let Some(path) = shared
                        .recorder
                        .as_ref()
                        .and_then(|recorder| recorder.written(&spec.id))
                    {
                        reporter.report(&Event::CassetteWritten {
                            task_id: spec.id.clone(),
                            path,
                            trials: k,
                        });
                    }
                    reporter.report(&Event::TaskFinished {
                        verdict: verdict.clone(),
                    });
                    verdicts.insert(task, verdict);
                }
            }
        }
    }
    while workers.join_next().await.is_some() {}

    let verdicts: Vec<Verdict> = verdicts.into_values().collect();
    let interrupted = *interrupt.borrow();
    // The snapshots are part of the status: compared before the summary decides it.
    let review = options
        .snapshots
        .as_ref()
        .and_then(|(folder, mode)| snapshots::review(&verdicts, interrupted, folder, *mode));
    let summary = RunSummary::new(SummaryInputs {
        verdicts,
        invalid,
        k,
        backend: shared.sandbox.name(),
        interrupted,
        cost_usd: shared.models.budget.cost().usd(),
        spent_usd: shared.models.budget.spent().usd(),
        gates: &options.gates,
        baseline: options.baseline.as_deref(),
        snapshots_changed: review.as_ref().is_some_and(Review::changed),
    });
    if let Some(review) = &review {
        reporter.report(&Event::SnapshotsCompared {
            changes: review.changes(),
        });
    }
    reporter.report(&Event::RunFinished {
        summary: summary.clone(),
    });
    (summary, review)
}

/// Runs the configured `harness.build` command once, in `root`, before any trial. Its output
/// goes to this process's stderr so the user sees a build as it happens. It runs in its own
/// process group, which is killed at `timeout` (an error) or when the run is interrupted
/// (then this returns, and the run stops with every trial interrupted).
pub(crate) async fn build_harness(
    command: &[String],
    root: &Path,
    timeout: std::time::Duration,
    interrupt: &mut watch::Receiver<bool>,
) -> Result<(), String> {
    let Some((program, arguments)) = command.split_first() else {
        return Ok(());
    };
    let mut build = tokio::process::Command::new(program);
    build
        .args(arguments)
        .current_dir(root)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::inherit())
        .stderr(std::process::Stdio::inherit())
        .process_group(0)
        .kill_on_drop(true);
    crate::sandbox::process::die_with_parent(&mut build);
    let mut child = build.spawn().map_err(|error| {
        format!(
            "the harness build command `{}` could not be started: {error}",
            command.join(" ")
        )
    })?;
    let group = child.id();
    let status = tokio::select! {
        status = child.wait() => status.map_err(|error| error.to_string())?,
        () = tokio::time::sleep(timeout) => {
            crate::sandbox::process::kill_group(group);
            let _ = child.wait().await;
            return Err(format!(
                "the harness build command `{}` did not finish within {} s (harness.build_timeout_seconds)",
                command.join(" "),
                timeout.as_secs()
            ));
        }
        () = crate::sandbox::process::interrupted(interrupt) => {
            crate::sandbox::process::kill_group(group);
            let _ = child.wait().await;
            return Ok(());
        }
    };
    crate::sandbox::process::kill_group(group);
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "the harness build command `{}` failed ({status})",
            command.join(" ")
        ))
    }
}
