//! One trial: World + Sandbox + Gateway → Trajectory → Grade (a closed-loop task: round after
//! round, `closed_loop`, on the same World and gateway). Starts the trial's services and
//! gateway where the sandbox wants them (free loopback ports, or Unix sockets in a per-trial
//! folder for the docker backend), runs the harness, stops the servers, collects what
//! happened, and grades it.

use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, UnixListener};
use tokio::sync::{oneshot, watch};

use crate::closed_loop::LoopError;
use crate::config::{HarnessFile, Tier};
use crate::grade;
use crate::http::Listener;
use crate::llm::gateway::{Cassette, Gateway, Recorder, TrialValues};
use crate::report::events::TrialOutcome;
use crate::sandbox::{
    CheckCommand, Endpoints, GATEWAY_SOCKET, HarnessSetup, Launch, SERVICES_SOCKET, Sandbox,
    Transport,
};
use crate::services::Catalogue;
use crate::surfaces::mcp::{McpServer, mcp_config, mcp_url, project_config};
use crate::surfaces::skill::{skill_md, skill_path};
use crate::task::Task;
use crate::trajectory::Trajectory;
use crate::world::{FaultPlan, World, WorldOptions};

/// What a trial needs besides its task.
pub(crate) struct TrialContext<'a> {
    pub(crate) catalogue: &'a Catalogue,
    pub(crate) sandbox: &'a dyn Sandbox,
    pub(crate) command: &'a [String],
    pub(crate) passthrough: &'a [(String, String)],
    /// Which tool surfaces the harness gets (`harness.tier`).
    pub(crate) tier: Tier,
    /// The exit codes of a harness that ran normally (`harness.success_exit_codes`).
    pub(crate) success_exit_codes: &'a [i32],
    /// The caps on what reaches the host (`[limits]`).
    pub(crate) limits: &'a crate::config::LimitsConfig,
    /// `harness.model`.
    pub(crate) model: Option<&'a str>,
    /// `[harness] files`.
    pub(crate) files: &'a [HarnessFile],
    pub(crate) tools: &'a str,
    pub(crate) threshold: f64,
    /// Answers `llm_judge` components.
    pub(crate) judge: &'a dyn crate::judge::Judge,
    pub(crate) models: &'a crate::llm::ModelAccess,
    /// Set in record mode: where the trial's exchanges go.
    pub(crate) recorder: Option<&'a Recorder>,
}

/// Runs trial `trial` of `task`; `cassette` is the task's cassette or why there is none
/// (used in replay mode only).
pub(crate) async fn run(
    task: &Task,
    trial: u32,
    cassette: &Result<Cassette, String>,
    context: &TrialContext<'_>,
    interrupt: watch::Receiver<bool>,
) -> TrialOutcome {
    let gateway = match (&context.models.upstream, cassette) {
        (Some(upstream), _) => Gateway::upstream(
            &task.id,
            trial,
            Arc::clone(upstream),
            context.recorder.is_some(),
        ),
        (None, Ok(cassette)) => Gateway::replay(cassette, trial),
        // A harness that never calls the model needs no cassette: its first call fails.
        (None, Err(message)) => Gateway::replay_without_cassette(&task.id, trial, message),
    }
    .with_costs(
        Arc::clone(&context.models.prices),
        Arc::clone(&context.models.budget),
    )
    .with_rules(Arc::clone(&context.models.rules));
    let bindings = task.tool_bindings();
    // Task-local services (`services:` in the task) join the catalogue for this trial only.
    let local;
    let catalogue = if task.local_services.is_empty() {
        context.catalogue
    } else {
        match task.catalogue(context.catalogue) {
            Ok(extended) => {
                local = extended;
                &local
            }
            Err(error) => {
                return TrialOutcome::Error {
                    message: format!("could not add the task's own services: {error}"),
                    trajectory: None,
                };
            }
        }
    };
    let world = match World::new(
        catalogue,
        &task.services,
        &task.fixtures,
        &bindings,
        world_options(task, trial, context.limits),
    ) {
        Ok(world) => Arc::new(Mutex::new(world)),
        Err(error) => {
            return TrialOutcome::Error {
                message: format!("could not build the services of the task: {error}"),
                trajectory: None,
            };
        }
    };

    let (services_listener, gateway_listener, endpoints, _socket_folder, token) =
        match listen(context.sandbox.transport()).await {
            Ok(listening) => listening,
            Err(error) => {
                return TrialOutcome::Error {
                    message: format!("could not open the trial's endpoints: {error}"),
                    trajectory: None,
                };
            }
        };
    let (stop_services, services_stopped) = oneshot::channel::<()>();
    let (stop_gateway, gateway_stopped) = oneshot::channel::<()>();
    let tools: serde_json::Value = serde_json::from_str(context.tools).unwrap_or_default();
    let mcp = Arc::new(McpServer::from_tools_json(&tools));
    // On loopback every process of the host can reach the port: the services answer only
    // under a random per-trial path, which only this trial's harness is told.
    let services_path: Arc<str> = match &endpoints {
        Endpoints::Loopback { .. } => format!("/t/{}", crate::http::random_token()).into(),
        Endpoints::Sockets { .. } => "".into(),
    };
    let served_world = Arc::clone(&world);
    let served_path = Arc::clone(&services_path);
    // Its own thread: every request takes the world's lock (see accept_loop_on_own_thread).
    let services_server = tokio::spawn(crate::http::accept_loop_on_own_thread(
        services_listener,
        async {
            let _ = services_stopped.await;
        },
        move |stream| {
            crate::serve::serve_connection_behind(
                stream,
                Arc::clone(&served_world),
                Some(Arc::clone(&mcp)),
                Arc::clone(&served_path),
            )
        },
    ));
    // What the harness sees as the services' address: the loopback port, or the shim's fixed
    // port inside a container (where the shim also bridges MCP to stdio).
    let stdio_bridge = match &endpoints {
        Endpoints::Loopback { .. } => None,
        Endpoints::Sockets { .. } => Some(crate::sandbox::docker::SHIM_MOUNT),
    };
    let mut endpoints = endpoints;
    let services_url = match &mut endpoints {
        Endpoints::Loopback { services_url, .. } => {
            services_url.push_str(&services_path);
            services_url.clone()
        }
        Endpoints::Sockets { .. } => {
            format!("http://127.0.0.1:{}", crate::sandbox::docker::SERVICES_PORT)
        }
    };
    let gateway = trial_values(gateway, &endpoints, &services_url, token);
    let gateway_server = tokio::spawn(crate::http::serve(
        gateway_listener,
        Arc::new(gateway.clone()),
        async {
            let _ = gateway_stopped.await;
        },
    ));

    // A closed loop's checkpoints may run commands too: they are planned with the task's.
    let closed_loop = crate::closed_loop::applies(task);
    let planned = match closed_loop {
        true => grade::commands::plan(&crate::closed_loop::supervisor::supervised_task(task)),
        false => grade::commands::plan(task),
    };
    let surfaces = surfaces(
        context.tier,
        &task.prompt,
        context.tools,
        skill_md(&task.id, &tools, &services_url),
        mcp_config(&services_url, stdio_bridge).to_string(),
        &services_url,
    );
    // The skill again where skill-loading harnesses look, and Claude Code's `.mcp.json`.
    let mut workspace_files = Vec::new();
    if !surfaces.skill.is_empty() {
        workspace_files.push((skill_path(), surfaces.skill.clone()));
    }
    let offers_mcp = !surfaces.mcp_config.is_empty();
    if offers_mcp {
        workspace_files.push((
            ".mcp.json".into(),
            project_config(&services_url).to_string(),
        ));
    }
    let setup = HarnessSetup {
        model: context.model.map(str::to_string),
        mcp_url: offers_mcp.then(|| mcp_url(&services_url)),
        workspace_files,
        files: context.files.to_vec(),
        round: None,
    };
    let launch = Launch {
        task_id: task.id.clone(),
        trial,
        command: context.command.to_vec(),
        prompt: surfaces.prompt,
        eval_tools: crate::surfaces::eval_tools::eval_tools(
            &serde_json::from_str(&surfaces.tools).unwrap_or_default(),
            &services_url,
        )
        .to_string(),
        tools: surfaces.tools,
        skill: surfaces.skill,
        mcp_config: surfaces.mcp_config,
        files: task.files.clone(),
        endpoints,
        passthrough: context.passthrough.to_vec(),
        timeout: task.limits.timeout,
        max_turns: task.limits.max_turns,
        limits: *context.limits,
        // The exit_code / pytest_pass commands, run where the harness ran once it has ended.
        checks: planned
            .iter()
            .map(|planned| CheckCommand {
                command: vec!["sh".into(), "-c".into(), planned.command.clone()],
                timeout: std::time::Duration::from_secs(planned.timeout_seconds),
            })
            .collect(),
        setup,
    };
    let mut harness = super::harness_run::TrialHarness {
        task,
        context,
        gateway: &gateway,
        world: &world,
        planned: &planned,
        interrupt,
        launch,
    };
    let outcome = match closed_loop {
        false => match harness.run_once(harness.launch.clone()).await {
            Ok(trajectory) => Ok((None, trajectory)),
            Err(outcome) => Err(outcome),
        },
        true => {
            let first_prompt = harness.launch.prompt.clone();
            let setting = crate::closed_loop::Setting {
                task,
                prompt: &first_prompt,
                judge: context.judge,
                threshold: context.threshold,
                model: context.model,
            };
            match crate::closed_loop::run(setting, &mut harness).await {
                Ok(outcome) => Ok((Some(outcome.grade), outcome.trajectory)),
                Err(LoopError::Round(outcome)) => Err(outcome),
                Err(LoopError::Message(message, trajectory)) => Err(TrialOutcome::Error {
                    message,
                    trajectory,
                }),
            }
        }
    };

    let _ = stop_services.send(());
    let _ = stop_gateway.send(());
    let _ = services_server.await;
    let _ = gateway_server.await;

    let (graded, trajectory) = match outcome {
        Ok(done) => done,
        Err(outcome) => return outcome,
    };
    if let Some(recorder) = context.recorder
        && let Err(error) = recorder.add(&task.id, trial, gateway.recording())
    {
        return TrialOutcome::Error {
            message: error.to_string(),
            trajectory: Some(Box::new(trajectory)),
        };
    }
    if let Some(grade) = graded {
        return TrialOutcome::Graded {
            grade,
            trajectory: Box::new(trajectory),
        };
    }
    let requests = grade::judge::plan(task, &trajectory);
    let answers = match crate::judge::answer_all(context.judge, &requests).await {
        Ok(answers) => answers,
        // Never a silent default score: a trial whose judge cannot answer is not graded.
        Err(error) => {
            return TrialOutcome::Error {
                message: error.to_string(),
                trajectory: Some(Box::new(trajectory)),
            };
        }
    };
    let grade = grade::grade(task, &trajectory, &answers, context.threshold);
    TrialOutcome::Graded {
        grade,
        trajectory: Box::new(trajectory),
    }
}

/// The trial after the gateway's first failure: not run when the run's cost limit cut it
/// short (not a verdict on the agent), else an infrastructure error.
pub(super) fn gateway_error(
    gateway: &Gateway,
    context: &TrialContext<'_>,
    trajectory: Option<Trajectory>,
) -> TrialOutcome {
    match gateway.failure() {
        Some(failure) if failure.is_budget_reached() => TrialOutcome::NotRun {
            reason: failure.to_string(),
        },
        failure => TrialOutcome::Error {
            message: format!(
                "model gateway ({}): {}",
                context.models.mode.name(),
                failure
                    .map(|failure| failure.to_string())
                    .unwrap_or_default()
            ),
            trajectory: trajectory.map(Box::new),
        },
    }
}

/// The gateway told the trial's own values, which cassettes hold as placeholders: the
/// URLs the harness is given and (process backend) the trial's folder in the temp folder;
/// on loopback it answers only under the trial's random token.
fn trial_values(
    gateway: Gateway,
    endpoints: &Endpoints,
    services_url: &str,
    token: Option<String>,
) -> Gateway {
    let values = TrialValues::default()
        .with_url("services_url", services_url)
        .with_folder(&std::env::temp_dir(), crate::sandbox::TRIAL_FOLDER_PREFIX);
    let values = match endpoints {
        Endpoints::Loopback { gateway_url, .. } => values.with_url("gateway_url", gateway_url),
        Endpoints::Sockets { .. } => values,
    };
    let gateway = gateway.with_values(values);
    match token {
        Some(token) => gateway.with_token(token),
        None => gateway,
    }
}

/// What a harness of `tier` is given: the prompt (tier 2 and 3 say where the tools are), and
/// tools.json, SKILL.md and mcp.json, empty where the tier leaves a surface out (an empty
/// SKILL.md or mcp.json is not written; tools.json is then `[]`).
struct Surfaces {
    prompt: String,
    tools: String,
    skill: String,
    mcp_config: String,
}

fn surfaces(
    tier: Tier,
    prompt: &str,
    tools: &str,
    skill: String,
    mcp_config: String,
    services_url: &str,
) -> Surfaces {
    match tier {
        Tier::All => Surfaces {
            prompt: prompt.to_string(),
            tools: tools.to_string(),
            skill,
            mcp_config,
        },
        Tier::Tools => Surfaces {
            prompt: prompt.to_string(),
            tools: tools.to_string(),
            skill: String::new(),
            mcp_config: String::new(),
        },
        Tier::Mcp => Surfaces {
            prompt: format!(
                "{}\n\nYour tools are served by the MCP server `clawtest` (streamable HTTP) at {}/mcp; its configuration is in mcp.json in $CLAWTEST_DIR.",
                prompt.trim_end(),
                services_url.trim_end_matches('/')
            ),
            tools: "[]".into(),
            skill: String::new(),
            mcp_config,
        },
        // As ClawEnvKit's tier-3 harnesses get it: the skill appended to the prompt.
        Tier::Skill => Surfaces {
            prompt: format!("{}\n\n{skill}", prompt.trim_end()),
            tools: "[]".into(),
            skill,
            mcp_config: String::new(),
        },
    }
}

/// The World's options for one trial: the task's fault injection (`error_injection`),
/// seeded per (task, trial) so every trial sees its own reproducible faults.
fn world_options(task: &Task, trial: u32, limits: &crate::config::LimitsConfig) -> WorldOptions {
    let faults = match &task.error_injection {
        Some(injection) => FaultPlan::for_trial(
            &task.id,
            trial,
            injection.rate,
            injection.seed,
            injection.mode,
        ),
        None => FaultPlan::default(),
    };
    WorldOptions {
        faults,
        audit_entries: limits.audit_entries,
        audit_bytes: limits.audit_bytes,
        audit_answer_bytes: limits.audit_answer_bytes,
        ..WorldOptions::default()
    }
}

/// Opens the trial's two listeners for `transport`; the folder (for sockets) lives as long as
/// the returned guard.
/// On loopback, the gateway's URL ends in a random token (other processes of the host
/// can reach the port; only the trial's harness is told the token).
#[allow(clippy::type_complexity)]
async fn listen(
    transport: Transport,
) -> std::io::Result<(
    Listener,
    Listener,
    Endpoints,
    Option<tempfile::TempDir>,
    Option<String>,
)> {
    match transport {
        Transport::Loopback => {
            let services = TcpListener::bind("127.0.0.1:0").await?;
            let gateway = TcpListener::bind("127.0.0.1:0").await?;
            let token = crate::http::random_token();
            let endpoints = Endpoints::Loopback {
                services_url: format!("http://{}", services.local_addr()?),
                gateway_url: format!("http://{}/{token}", gateway.local_addr()?),
            };
            Ok((
                services.into(),
                gateway.into(),
                endpoints,
                None,
                Some(token),
            ))
        }
        Transport::Sockets => {
            let folder = crate::sandbox::scratch::folder("sockets")?;
            let services = UnixListener::bind(folder.path().join(SERVICES_SOCKET))?;
            let gateway = UnixListener::bind(folder.path().join(GATEWAY_SOCKET))?;
            let endpoints = Endpoints::Sockets {
                folder: folder.path().to_path_buf(),
            };
            Ok((
                Listener::Unix(services),
                Listener::Unix(gateway),
                endpoints,
                Some(folder),
                None,
            ))
        }
    }
}
