//! One trial: a [`TrialPlan`] and its number → World + endpoints + gateway + Sandbox →
//! Trajectory → Grade (a closed-loop task: round after round, `closed_loop`, on the same
//! World, gateway and folder). The trial makes its folder and tells the sandbox (in the
//! launch) and the gateway (which hides it in recordings); it opens its endpoints where the
//! backend wants them (`endpoints.rs`), asks the backend the services' URL the harness sees,
//! builds the launch (`launch.rs`), runs the harness (`harness.rs`), stops the servers,
//! records, and grades.

mod endpoints;
mod harness;
mod launch;

use std::path::Path;
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use self::endpoints::Opened;
use self::harness::TrialHarness;
use self::launch::Place;
use crate::closed_loop::LoopError;
use crate::grade::Grade;
use crate::llm::AnswerSource;
use crate::llm::gateway::{Gateway, TrialValues};
use crate::report::events::TrialOutcome;
use crate::run::plan::{Provisions, TrialPlan};
use crate::sandbox::{Endpoints, ServicesSeen, TrialFolder};
use crate::surfaces::mcp::McpServer;
use crate::trajectory::Trajectory;
use crate::world::{FaultPlan, World, WorldOptions};

/// Runs trial `trial` of `plan`.
pub(crate) async fn run(
    plan: &TrialPlan,
    trial: u32,
    provisions: &Provisions,
    interrupt: CancellationToken,
) -> TrialOutcome {
    let ready = match prepare(plan, trial, provisions).await {
        Ok(ready) => ready,
        Err(message) => {
            return TrialOutcome::Error {
                message,
                trajectory: None,
            };
        }
    };
    let Ready {
        world,
        folder,
        opened,
    } = ready;
    let endpoints = opened.endpoints.clone();
    let seen = provisions.sandbox.services_seen(&endpoints);
    let loaded = plan.loaded(&provisions.models);
    let gateway = gateway(
        &loaded.answers,
        plan,
        trial,
        provisions,
        &opened,
        &seen,
        folder.path(),
    );
    // The MCP server's file tools act on the workspace the sandbox lays out in the trial's
    // folder (a bind mount on the docker backend): the same files the harness sees.
    let mcp = McpServer::with_workspace(&loaded.tools, folder.path().join("workspace"));
    let serving = opened.serve(&world, mcp, &gateway);
    let place = Place {
        seen: &seen,
        endpoints,
        folder: folder.path(),
    };
    let mut harness = TrialHarness {
        task: &plan.task,
        provisions,
        gateway: &gateway,
        world: &world,
        planned: &plan.commands,
        interrupt,
        launch: launch::launch(plan, &loaded, trial, &provisions.harness, place),
        session: None,
    };
    let outcome = run_harness(plan, provisions, &mut harness)
        .await
        .map_err(|outcome| with_fault_note(outcome, plan, &loaded.answers, &gateway));
    drop(loaded);
    serving.stop().await;
    drop(folder);
    match outcome {
        Ok(done) => finish(plan, trial, provisions, &gateway, done).await,
        Err(outcome) => outcome,
    }
}

/// What a trial needs before its harness starts: its World, its folder and its endpoints.
struct Ready {
    world: Arc<Mutex<World>>,
    folder: TrialFolder,
    opened: Opened,
}

/// The trial's World (with the task's own services), folder and endpoints, or why they could
/// not be had (an infrastructure error).
async fn prepare(plan: &TrialPlan, trial: u32, provisions: &Provisions) -> Result<Ready, String> {
    let task = &plan.task;
    let catalogue = plan
        .catalogue
        .as_ref()
        .map_err(|error| format!("could not add the task's own services: {error}"))?;
    let world = World::new(
        catalogue,
        &task.services,
        &task.seed_fixtures(),
        &task.tool_bindings(),
        world_options(plan, trial, &provisions.harness.limits),
    )
    .map_err(|error| format!("could not build the services of the task: {error}"))?;
    // Kept from one round of a closed loop to the next, removed (or given back to the
    // backend) when the trial ends.
    let folder = provisions
        .sandbox
        .trial_folder(provisions.harness.limits.workspace_disk_bytes)
        .map_err(|error| format!("could not make the trial's folder: {error}"))?;
    let opened = endpoints::open(provisions.sandbox.kind().transport(), folder.sockets())
        .await
        .map_err(|error| format!("could not open the trial's endpoints: {error}"))?;
    Ok(Ready {
        world: Arc::new(Mutex::new(world)),
        folder,
        opened,
    })
}

/// The trial's gateway: answering from the plan's source, priced and charged to the run's
/// budget, matching by the run's rules, and told the trial's own values, which cassettes hold
/// as placeholders: the URLs the harness is given and the trial's folder. On loopback it
/// answers only under the trial's token.
fn gateway(
    answers: &AnswerSource,
    plan: &TrialPlan,
    trial: u32,
    provisions: &Provisions,
    opened: &Opened,
    seen: &ServicesSeen,
    folder: &Path,
) -> Gateway {
    let values = TrialValues::default()
        .with_url("services_url", &seen.url)
        .with_folder(folder);
    let values = match &opened.endpoints {
        Endpoints::Loopback { gateway_url, .. } => values.with_url("gateway_url", gateway_url),
        Endpoints::Sockets { .. } => values,
    };
    let gateway = answers
        .gateway(&plan.task.id, trial, &provisions.models)
        .with_values(values);
    let gateway = provisions.judge.equip(gateway);
    match &opened.token {
        Some(token) => gateway.with_token(token.clone()),
        None => gateway,
    }
}

/// Runs the harness once, or round after round for a closed loop (whose grade is then its
/// best round's).
async fn run_harness(
    plan: &TrialPlan,
    provisions: &Provisions,
    harness: &mut TrialHarness<'_>,
) -> Result<(Option<Grade>, Trajectory), TrialOutcome> {
    if !plan.closed_loop {
        let trajectory = harness.run_once(harness.launch.clone()).await?;
        return Ok((None, trajectory));
    }
    let first_prompt = harness.launch.prompt.clone();
    // The checkpoints' rubrics are the judge's calls through the trial's gateway.
    let judge = provisions
        .judge
        .for_trial(harness.gateway, provisions.models.mode);
    let setting = crate::closed_loop::Setting {
        task: &plan.task,
        prompt: &first_prompt,
        judge: &judge,
        threshold: plan.threshold,
        model: provisions.harness.model.as_deref(),
        provider: provisions.models.simulator_provider,
    };
    let looped = crate::closed_loop::run(setting, harness).await;
    // Whatever stopped the loop, a kept session ends with it.
    harness.end_session().await;
    match looped {
        Ok(mut outcome) => {
            // The supervisor's last call came after the last round's trajectory was taken.
            harness
                .gateway
                .update_calls(&mut outcome.trajectory.model_calls);
            Ok((Some(outcome.grade), outcome.trajectory))
        }
        Err(LoopError::Round(outcome)) => Err(outcome),
        // The judge's call failed at the gateway (a replay miss, the cost limit): said as
        // any speaker's failure is.
        Err(LoopError::Message(_, trajectory)) if harness.gateway.failure().is_some() => {
            let mode = provisions.models.mode;
            Err(failed_at_the_gateway(
                harness.gateway,
                mode,
                trajectory.map(|t| *t),
            ))
        }
        Err(LoopError::Message(message, trajectory)) => Err(TrialOutcome::Error {
            message,
            trajectory,
        }),
    }
}

/// The trial after its harness: graded (a closed loop's grade is given; else its
/// `llm_judge` components asked of the judge through the trial's gateway), then its exchanges,
/// the judge's among them, recorded (record mode). Its trajectory holds every model call,
/// the judge's too.
async fn finish(
    plan: &TrialPlan,
    trial: u32,
    provisions: &Provisions,
    gateway: &Gateway,
    (graded, trajectory): (Option<Grade>, Trajectory),
) -> TrialOutcome {
    let mode = provisions.models.mode;
    let grade = match graded {
        Some(grade) => Ok(grade),
        None => {
            let judge = provisions.judge.for_trial(gateway, mode);
            crate::judge::grade_trajectory(&plan.task, &trajectory, &judge, plan.threshold).await
        }
    };
    let mut trajectory = trajectory;
    gateway.update_calls(&mut trajectory.model_calls);
    let grade = match grade {
        Ok(grade) => grade,
        Err(_) if gateway.failure().is_some() => {
            return failed_at_the_gateway(gateway, mode, Some(trajectory));
        }
        // Never a silent default score: a trial whose judge cannot answer is not graded.
        Err(error) => {
            return TrialOutcome::Error {
                message: error.to_string(),
                trajectory: Some(Box::new(trajectory)),
            };
        }
    };
    // Record mode records every trial; `record-missing` the tasks with a trial the cassette
    // no longer answered (and, in any mode, a trial that made fewer calls than recorded is
    // noted for `cargo clawtest cassettes`).
    let stale = gateway.check_complete();
    let changed = mode == crate::config::Mode::Record || stale;
    if let Some(recorder) = &provisions.recorder
        && let Err(error) = recorder.add(
            &plan.task.id,
            trial,
            gateway.recording(),
            plan.faults,
            changed,
        )
    {
        return TrialOutcome::Error {
            message: error.to_string(),
            trajectory: Some(Box::new(trajectory)),
        };
    }
    TrialOutcome::Graded {
        grade,
        trajectory: Box::new(trajectory),
    }
}

/// The trial's outcome when its gateway failed after the harness ended (the judge's call:
/// a replay miss, the cost limit, the provider), with `trajectory` holding every call, the
/// refused one too.
fn failed_at_the_gateway(
    gateway: &Gateway,
    mode: crate::config::Mode,
    trajectory: Option<Trajectory>,
) -> TrialOutcome {
    let trajectory = trajectory.map(|mut trajectory| {
        gateway.update_calls(&mut trajectory.model_calls);
        trajectory
    });
    harness::gateway_error(gateway, mode, trajectory)
}

/// A trial ended by its gateway's failure, with what the fault settings have to do with it:
/// a replay under other faults than the cassette was recorded with lets the agent meet other
/// faults, and so send other requests, so the divergence names the settings, not only the
/// message that differs.
fn with_fault_note(
    outcome: TrialOutcome,
    plan: &TrialPlan,
    answers: &AnswerSource,
    gateway: &Gateway,
) -> TrialOutcome {
    match (outcome, gateway.failure(), plan.changed_faults(answers)) {
        (
            TrialOutcome::Error {
                message,
                trajectory,
            },
            Some(_),
            Some(note),
        ) => TrialOutcome::Error {
            message: format!("{message}\n{note}"),
            trajectory,
        },
        (outcome, ..) => outcome,
    }
}

/// The World's options for one trial: the plan's faults (the task's `error_injection` over
/// the suite's `[faults]`), seeded per (task, trial) so every trial sees its own reproducible
/// faults.
fn world_options(
    plan: &TrialPlan,
    trial: u32,
    limits: &crate::config::LimitsConfig,
) -> WorldOptions {
    let faults = FaultPlan::for_trial(&plan.task.id, trial, &plan.faults);
    WorldOptions {
        faults,
        audit_entries: limits.audit_entries,
        audit_bytes: limits.audit_bytes,
        audit_answer_bytes: limits.audit_answer_bytes,
        ..WorldOptions::default()
    }
}
