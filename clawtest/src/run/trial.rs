//! One trial: World + Sandbox + Gateway → Trajectory → Grade. Starts the trial's services and
//! gateway where the sandbox wants them (free loopback ports, or Unix sockets in a per-trial
//! folder for the docker backend), runs the harness, stops the servers, collects what
//! happened, and grades it.

use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, UnixListener};
use tokio::sync::{oneshot, watch};

use crate::config::{HarnessFile, Tier};
use crate::gateway::{Cassette, Gateway, Recorder, TrialValues};
use crate::grade;
use crate::http::Listener;
use crate::report::events::TrialOutcome;
use crate::sandbox::{
    CheckCommand, Endpoints, GATEWAY_SOCKET, HarnessSetup, Launch, SERVICES_SOCKET, Sandbox,
    SandboxError, Transport,
};
use crate::services::Catalogue;
use crate::spec::Task;
use crate::surfaces::mcp::{McpServer, mcp_config, mcp_url, project_config};
use crate::surfaces::skill::{skill_md, skill_path};
use crate::trajectory::{CommandRun, OutputOrigin, Trajectory};
use crate::world::{FaultPlan, World, WorldOptions};

/// How much of the harness's stderr a trajectory keeps.
const STDERR_TAIL: usize = 4000;
/// How much of a check command's output a trajectory keeps.
const COMMAND_OUTPUT_TAIL: usize = 2000;

/// What a trial needs besides its task.
pub(crate) struct TrialContext<'a> {
    pub(crate) catalogue: &'a Catalogue,
    pub(crate) sandbox: &'a dyn Sandbox,
    pub(crate) command: &'a [String],
    pub(crate) passthrough: &'a [(String, String)],
    /// Which tool surfaces the harness gets (`harness.tier`).
    pub(crate) tier: Tier,
    /// `harness.model`.
    pub(crate) model: Option<&'a str>,
    /// `[harness] files`.
    pub(crate) files: &'a [HarnessFile],
    pub(crate) tools: &'a str,
    pub(crate) threshold: f64,
    /// Answers `llm_judge` components.
    pub(crate) judge: &'a dyn crate::judge::Judge,
    pub(crate) models: &'a super::Models,
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
        world_options(task, trial),
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
    let served_world = Arc::clone(&world);
    // Its own thread: every request takes the world's lock (see accept_loop_on_own_thread).
    let services_server = tokio::spawn(crate::http::accept_loop_on_own_thread(
        services_listener,
        async {
            let _ = services_stopped.await;
        },
        move |stream| {
            crate::serve::serve_connection_with_mcp(
                stream,
                Arc::clone(&served_world),
                Some(Arc::clone(&mcp)),
            )
        },
    ));
    // What the harness sees as the services' address: the loopback port, or the shim's fixed
    // port inside a container (where the shim also bridges MCP to stdio).
    let stdio_bridge = match &endpoints {
        Endpoints::Loopback { .. } => None,
        Endpoints::Sockets { .. } => Some(crate::sandbox::docker::SHIM_MOUNT),
    };
    let services_url = match &endpoints {
        Endpoints::Loopback { services_url, .. } => services_url.clone(),
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

    let planned = grade::commands::plan(task);
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
    };
    let launch = Launch {
        task_id: task.id.clone(),
        trial,
        command: context.command.to_vec(),
        prompt: surfaces.prompt,
        tools: surfaces.tools,
        skill: surfaces.skill,
        mcp_config: surfaces.mcp_config,
        files: task.files.clone(),
        endpoints,
        passthrough: context.passthrough.to_vec(),
        timeout: task.limits.timeout,
        max_turns: task.limits.max_turns,
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
    // The trial stops at the gateway's first failure as at the run's interrupt.
    let (stop_trial, trial_interrupt) = watch::channel(false);
    let (mut run_interrupt, mut failed) = (interrupt.clone(), gateway.failed());
    let relay = tokio::spawn(async move {
        tokio::select! {
            _ = run_interrupt.wait_for(|stop| *stop) => {}
            _ = failed.wait_for(|failed| *failed) => {}
        }
        let _ = stop_trial.send(true);
    });
    let finished = context.sandbox.run(launch, trial_interrupt).await;
    relay.abort();
    gateway.settle().await;

    let _ = stop_services.send(());
    let _ = stop_gateway.send(());
    let _ = services_server.await;
    let _ = gateway_server.await;

    let finished = match finished {
        Ok(finished) => finished,
        Err(SandboxError::Interrupted) if !*interrupt.borrow() && gateway.failure().is_some() => {
            return gateway_error(&gateway, context, None);
        }
        Err(SandboxError::Interrupted) => return TrialOutcome::Interrupted,
        Err(error) => {
            return TrialOutcome::Error {
                message: error.to_string(),
                trajectory: None,
            };
        }
    };
    let audit = world
        .lock()
        .map(|world| world.audit().to_vec())
        .unwrap_or_default();
    let (output, output_source) = match finished.output_file {
        Some(text) => (text, OutputOrigin::AgentOutputFile),
        None => (finished.stdout.clone(), OutputOrigin::Stdout),
    };
    let trajectory = Trajectory {
        task_id: task.id.clone(),
        trial,
        audit,
        model_calls: gateway.calls(),
        output: output.trim().to_string(),
        output_source,
        stderr_tail: tail(&finished.stderr, STDERR_TAIL),
        workspace: finished.workspace,
        exit: finished.exit,
        commands: planned
            .iter()
            .zip(&finished.checks)
            .map(|(planned, outcome)| CommandRun {
                command: planned.command.clone(),
                exit_code: outcome.exit_code,
                timed_out: outcome.timed_out,
                output_tail: tail(
                    &format!("{}{}", outcome.stdout, outcome.stderr),
                    COMMAND_OUTPUT_TAIL,
                ),
            })
            .collect(),
        duration: finished.duration,
    };
    // A model call the cassette could not answer means the trial did not see the model it was
    // meant to: grading it would judge the gateway, not the agent.
    if gateway.failure().is_some() {
        return gateway_error(&gateway, context, Some(trajectory));
    }
    if let Some(recorder) = context.recorder
        && let Err(error) = recorder.add(&task.id, trial, gateway.recording())
    {
        return TrialOutcome::Error {
            message: error.to_string(),
            trajectory: Some(Box::new(trajectory)),
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
fn gateway_error(
    gateway: &Gateway,
    context: &TrialContext<'_>,
    trajectory: Option<Trajectory>,
) -> TrialOutcome {
    match gateway.failure() {
        Some(failure @ crate::gateway::GatewayFailure::BudgetReached { .. }) => {
            TrialOutcome::NotRun {
                reason: failure.to_string(),
            }
        }
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
    let (values, gateway) = match endpoints {
        Endpoints::Loopback { gateway_url, .. } => {
            (values.with_url("gateway_url", gateway_url), gateway)
        }
        Endpoints::Sockets { .. } => (values, gateway),
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
fn world_options(task: &Task, trial: u32) -> WorldOptions {
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
            let token = crate::gateway::random_token()?;
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
            let folder = tempfile::Builder::new()
                .prefix("clawtest-sockets-")
                .tempdir()?;
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

fn tail(text: &str, limit: usize) -> String {
    let count = text.chars().count();
    if count <= limit {
        text.to_string()
    } else {
        text.chars().skip(count - limit).collect()
    }
}
