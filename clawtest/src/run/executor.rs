//! The executor: a suite and its settings → one [`TrialPlan`] per task → every (task, trial)
//! scheduled (at most `jobs` at a time) → each task's k trials aggregated into a verdict as
//! they finish → the summary. Progress leaves as [`Event`]s through a [`Reporter`]; the
//! trials themselves never touch a reporter.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use futures_util::stream::{BoxStream, Stream, StreamExt};
use tokio::sync::{OwnedSemaphorePermit, mpsc};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::noisy_answer::Noticed;
use super::plan::{Provisions, TrialPlan};
use super::settings::{RunOptions, RunSettings};
use super::suite::Suite;
use crate::config::Mode;
use crate::llm::gateway::Recorder;
use crate::report::events::{Event, Reporter, TrialOutcome};
use crate::report::snapshots::{self, Review};
use crate::results::{InvalidEntry, RunSummary, SummaryInputs, TrialSummary, Verdict, aggregate};
use crate::sandbox::Sandbox;
use crate::services::Catalogue;
use crate::task::Task;

/// Where the trials run, and with what besides their settings.
pub(crate) struct Resources {
    /// The mock services the trials' worlds serve.
    pub(crate) catalogue: Arc<Catalogue>,
    /// Where the harness runs (`process` or `docker`).
    pub(crate) sandbox: Arc<dyn Sandbox>,
    /// Answers the tasks' `llm_judge` components and checkpoints.
    pub(crate) judge: Arc<crate::judge::Judging>,
}

/// What every trial shares, and what a task's plan is made from, behind one `Arc`.
struct Shared {
    provisions: Provisions,
    catalogue: Arc<Catalogue>,
    options: RunOptions,
    cassettes: Option<PathBuf>,
}

/// Tasks that arrive while the run goes (`run --variants`: drawn one at a time on a thread of
/// their own), and how many are expected (for `RunStarted`; fewer arrive when some fail).
pub(crate) struct Streamed {
    pub(crate) expected: usize,
    pub(crate) receiver: mpsc::Receiver<Task>,
}

/// One task's plan, made when its first trial is about to start and let go with its verdict.
type Planned = Arc<TrialPlan>;

enum Progress {
    Started {
        plan: Planned,
        trial: u32,
    },
    Finished {
        task: usize,
        plan: Planned,
        trial: u32,
        outcome: TrialOutcome,
    },
}

/// Runs every task of `suite` `settings.options.trials` times and reports as it goes. Invalid
/// tasks are reported and not run. Returns the summary that was also sent as `RunFinished`,
/// the snapshot review when the options asked for one, and the run's warnings about its
/// trials (a graded stdout that looks like a log, once per task), for the caller to show.
pub(crate) async fn execute(
    suite: Suite,
    settings: RunSettings,
    resources: Resources,
    reporter: &mut dyn Reporter,
    interrupt: CancellationToken,
) -> (RunSummary, Option<Review>, Vec<String>) {
    execute_streamed(suite, None, settings, resources, reporter, interrupt).await
}

/// [`execute`], with tasks that arrive while the run goes after the suite's own (`streamed`):
/// each task is planned when its first trial is about to start, and its plan let go with its
/// verdict, so a run of many tasks holds only those running and the compact results.
pub(crate) async fn execute_streamed(
    suite: Suite,
    streamed: Option<Streamed>,
    settings: RunSettings,
    resources: Resources,
    reporter: &mut dyn Reporter,
    interrupt: CancellationToken,
) -> (RunSummary, Option<Review>, Vec<String>) {
    let RunSettings {
        options,
        harness,
        models,
        cassettes,
        ..
    } = settings;
    let k = options.trials.max(1);
    let jobs = options.jobs.max(1);
    let expected = streamed.as_ref().map_or(0, |streamed| streamed.expected);
    reporter.report(&Event::RunStarted {
        tasks: suite.tasks.len() + expected,
        trials: k,
        jobs,
        backend: resources.sandbox.name(),
        invalid: suite.invalid.len(),
        filtered_out: suite.filtered_out,
    });
    let invalid = report_invalid(&suite, reporter);
    let recorder = match (models.mode, &cassettes) {
        (Mode::Record | Mode::RecordMissing, Some(cassettes)) => {
            Some(Recorder::new(cassettes.clone(), k))
        }
        _ => None,
    };
    let shared = Arc::new(Shared {
        provisions: Provisions {
            sandbox: resources.sandbox,
            judge: resources.judge,
            harness,
            models,
            recorder,
        },
        catalogue: resources.catalogue,
        options,
        cassettes,
    });
    let listed = futures_util::stream::iter(suite.tasks);
    let tasks = match streamed {
        Some(streamed) => listed.chain(arrivals(streamed.receiver)).boxed(),
        None => listed.boxed(),
    };
    let (mut trials, receiver) = schedule(&shared, tasks, k, jobs, &interrupt);
    let mut noticed = Noticed::default();
    let verdicts = collect(receiver, &shared, k, reporter, &mut noticed).await;
    while trials.join_next().await.is_some() {}
    // What the backend kept warm between trials (docker's worker containers) goes now.
    shared.provisions.sandbox.settle().await;
    let interrupted = interrupt.is_cancelled();
    let (summary, review) = summarize(verdicts, invalid, &shared, k, interrupted, reporter);
    (summary, review, noticed.warnings())
}

/// What a run tells its user once it has ended, in the order shown: the judge's warnings (a
/// cache it could not write), the budget's (answers that reported no usage), then the trials'
/// (`trials`: a graded stdout that looks like a log). `cargo clawtest run` and a task test
/// (`cargo_test`) both gather them here.
pub(crate) fn closing_warnings(
    judge: &crate::judge::Judging,
    budget: &crate::llm::gateway::Budget,
    trials: Vec<String>,
) -> Vec<String> {
    let mut warnings = judge.take_warnings();
    warnings.extend(budget.warnings());
    warnings.extend(trials);
    warnings
}

/// The invalid task files, each reported.
fn report_invalid(suite: &Suite, reporter: &mut dyn Reporter) -> Vec<InvalidEntry> {
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
    invalid
}

/// The tasks sent on `receiver`, as they arrive.
fn arrivals(receiver: mpsc::Receiver<Task>) -> impl Stream<Item = Task> + Send + 'static {
    futures_util::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|task| (task, receiver))
    })
}

/// A task's plan (where its model answers come from is decided when its first trial starts,
/// [`TrialPlan::loaded`]).
fn plan(shared: &Shared, task: Task) -> TrialPlan {
    TrialPlan::new(
        task,
        &shared.catalogue,
        &shared.options,
        shared.cassettes.clone(),
    )
}

/// Starts every (task, trial) in task order, at most `jobs` running at once, each task planned
/// as its first trial comes up; their progress comes back on the returned channel, which
/// closes when the last has finished.
fn schedule(
    shared: &Arc<Shared>,
    tasks: BoxStream<'static, Task>,
    k: u32,
    jobs: usize,
    interrupt: &CancellationToken,
) -> (JoinSet<()>, mpsc::UnboundedReceiver<Progress>) {
    let (sender, receiver) = mpsc::unbounded_channel();
    let planner = Arc::clone(shared);
    let units = tasks.enumerate().flat_map(move |(task, source)| {
        let plan = Arc::new(plan(&planner, source));
        futures_util::stream::iter((0..k).map(move |trial| (task, Arc::clone(&plan), trial)))
    });
    // Once the last unit has been started, the backend hears that no trial will come after
    // the running ones: docker's workers go as their trials end, not all at the run's end.
    let sandbox = Arc::clone(&shared.provisions.sandbox);
    let ended = futures_util::stream::once(async move { sandbox.all_trials_started() })
        .filter_map(|()| std::future::ready(None));
    let units = units.chain(ended);
    let shared = Arc::clone(shared);
    let stop = interrupt.clone();
    let mut dispatcher = JoinSet::new();
    dispatcher.spawn(super::dispatch::in_order(
        units,
        jobs,
        interrupt.clone(),
        move |(task, plan, trial), permit| {
            let (shared, sender, interrupt) = (Arc::clone(&shared), sender.clone(), stop.clone());
            async move {
                let outcome = one(&shared, &plan, trial, permit, interrupt, &sender).await;
                let _ = sender.send(Progress::Finished {
                    task,
                    plan,
                    trial,
                    outcome,
                });
            }
        },
    ));
    (dispatcher, receiver)
}

/// Trial `trial` of `plan`'s task, started with its permit: not run when the run was
/// interrupted (no permit) or its cost limit reached before it could start.
async fn one(
    shared: &Shared,
    plan: &Planned,
    trial: u32,
    permit: Option<OwnedSemaphorePermit>,
    interrupt: CancellationToken,
    sender: &mpsc::UnboundedSender<Progress>,
) -> TrialOutcome {
    let budget = &shared.provisions.models.budget;
    if permit.is_none() || interrupt.is_cancelled() {
        return TrialOutcome::Interrupted;
    }
    if budget.exhausted() {
        return TrialOutcome::NotRun {
            reason: format!(
                "the cost limit of ${} was reached ({} spent)",
                budget.limit().unwrap_or_default(),
                crate::llm::money::dollars(budget.spent().usd())
            ),
        };
    }
    let _ = sender.send(Progress::Started {
        plan: Arc::clone(plan),
        trial,
    });
    let outcome = super::trial::run(plan, trial, &shared.provisions, interrupt).await;
    drop(permit);
    outcome
}

/// Reports each trial as it starts and ends, and each task's verdict once its k trials have
/// ended; the verdicts in task order. A graded trial's answer is looked at by `noticed`.
async fn collect(
    mut receiver: mpsc::UnboundedReceiver<Progress>,
    shared: &Shared,
    k: u32,
    reporter: &mut dyn Reporter,
    noticed: &mut Noticed,
) -> Vec<Verdict> {
    let mut finished: BTreeMap<usize, Vec<TrialSummary>> = BTreeMap::new();
    let mut verdicts: BTreeMap<usize, Verdict> = BTreeMap::new();
    while let Some(progress) = receiver.recv().await {
        let (task, plan, trial, outcome) = match progress {
            Progress::Started { plan, trial } => {
                reporter.report(&Event::TrialStarted {
                    task_id: plan.task.id.clone(),
                    trial,
                });
                continue;
            }
            Progress::Finished {
                task,
                plan,
                trial,
                outcome,
            } => (task, plan, trial, outcome),
        };
        let plan = &*plan;
        let record = outcome.summary(&plan.task, trial);
        if let TrialOutcome::Graded { trajectory, .. } = &outcome {
            noticed.look(task, trajectory);
        }
        reporter.report(&Event::TrialFinished {
            task_id: plan.task.id.clone(),
            trial,
            outcome,
        });
        let records = finished.entry(task).or_default();
        records.push(record);
        if records.len() == k as usize {
            // Its trials have all ended: its cassette and tools document are not needed, and
            // its records leave the map with its verdict; its plan goes with the last trial's
            // progress.
            plan.let_go();
            let records = finished.remove(&task).unwrap_or_default();
            let verdict = aggregate::verdict(&plan.task, plan.threshold, k, records);
            task_finished(shared, plan, k, &verdict, reporter);
            verdicts.insert(task, verdict);
        }
    }
    verdicts.into_values().collect()
}

/// Reports a task's verdict, after its cassette when one was written.
fn task_finished(
    shared: &Shared,
    plan: &TrialPlan,
    k: u32,
    verdict: &Verdict,
    reporter: &mut dyn Reporter,
) {
    let task_id = &plan.task.id;
    if let Some(path) = shared
        .provisions
        .recorder
        .as_ref()
        .and_then(|recorder| recorder.written(task_id))
    {
        reporter.report(&Event::CassetteWritten {
            task_id: task_id.clone(),
            path,
            trials: k,
        });
    }
    reporter.report(&Event::TaskFinished {
        verdict: verdict.clone(),
    });
}

/// The run's summary (the grade snapshots compared first: they are part of its status), and
/// the snapshot review; both reported.
fn summarize(
    verdicts: Vec<Verdict>,
    invalid: Vec<InvalidEntry>,
    shared: &Shared,
    k: u32,
    interrupted: bool,
    reporter: &mut dyn Reporter,
) -> (RunSummary, Option<Review>) {
    let options = &shared.options;
    let review = options
        .snapshots
        .as_ref()
        .and_then(|(folder, mode)| snapshots::review(&verdicts, interrupted, folder, *mode));
    let summary = RunSummary::new(SummaryInputs {
        verdicts,
        invalid,
        k,
        backend: shared.provisions.sandbox.name(),
        interrupted,
        cost_usd: shared.provisions.models.budget.cost().usd(),
        spent_usd: shared.provisions.models.budget.spent().usd(),
        gates: &options.gates,
        baseline: options.baseline.as_deref(),
        snapshots: review.as_ref().map(Review::failures).unwrap_or_default(),
    });
    if let Some(review) = &review {
        reporter.report(&Event::SnapshotsCompared {
            changes: review.changes(),
        });
    }
    reporter.report(&Event::RunFinished {
        summary: Box::new(summary.clone()),
    });
    (summary, review)
}
