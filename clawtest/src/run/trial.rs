//! One trial: World + Sandbox + Gateway → Trajectory → Grade. Starts the trial's services and
//! gateway on free loopback ports, runs the harness, stops the servers, collects what
//! happened, and grades it.

use std::sync::{Arc, Mutex};

use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};

use super::events::TrialOutcome;
use crate::gateway::{Cassette, Gateway, Recorder};
use crate::grade;
use crate::sandbox::{Launch, Sandbox, SandboxError};
use crate::services::{Catalogue, ToolBinding};
use crate::spec::Task;
use crate::surfaces::mcp::{McpServer, mcp_config};
use crate::surfaces::skill::skill_md;
use crate::trajectory::{OutputOrigin, Trajectory};
use crate::world::{World, WorldOptions};

/// How much of the harness's stderr a trajectory keeps.
const STDERR_TAIL: usize = 4000;

/// What a trial needs besides its task.
pub struct TrialContext<'a> {
    pub catalogue: &'a Catalogue,
    pub sandbox: &'a dyn Sandbox,
    pub command: &'a [String],
    pub passthrough: &'a [(String, String)],
    pub tools: &'a str,
    pub threshold: f64,
    pub models: &'a super::Models,
    /// Set in record mode: where the trial's exchanges go.
    pub recorder: Option<&'a Recorder>,
}

/// Runs trial `trial` of `task`; `cassette` is the task's cassette or why there is none
/// (used in replay mode only).
pub async fn run(
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
        (None, Err(message)) => {
            return TrialOutcome::Error {
                message: message.clone(),
                trajectory: None,
            };
        }
    }
    .with_costs(
        Arc::clone(&context.models.prices),
        Arc::clone(&context.models.budget),
    );
    let bindings: Vec<ToolBinding> = task
        .tools
        .iter()
        .map(|tool| ToolBinding {
            name: tool.name.clone(),
            service: tool.service.clone(),
            endpoint: tool.endpoint.clone(),
            method: tool.method.clone(),
        })
        .collect();
    let world = match World::new(
        context.catalogue,
        &task.services,
        &task.fixtures,
        &bindings,
        WorldOptions::default(),
    ) {
        Ok(world) => Arc::new(Mutex::new(world)),
        Err(error) => {
            return TrialOutcome::Error {
                message: format!("could not build the services of the task: {error}"),
                trajectory: None,
            };
        }
    };
    let (services_listener, gateway_listener) = match (
        TcpListener::bind("127.0.0.1:0").await,
        TcpListener::bind("127.0.0.1:0").await,
    ) {
        (Ok(services), Ok(gateway)) => (services, gateway),
        (Err(error), _) | (_, Err(error)) => {
            return TrialOutcome::Error {
                message: format!("could not open a loopback port: {error}"),
                trajectory: None,
            };
        }
    };
    let services_url = local_url(&services_listener);
    let gateway_url = local_url(&gateway_listener);
    let (stop_services, services_stopped) = oneshot::channel::<()>();
    let (stop_gateway, gateway_stopped) = oneshot::channel::<()>();
    let tools: serde_json::Value = serde_json::from_str(context.tools).unwrap_or_default();
    let mcp = Arc::new(McpServer::from_tools_json(&tools));
    let services_server = tokio::spawn(crate::services::http::serve_with_mcp(
        services_listener,
        Arc::clone(&world),
        Some(mcp),
        async {
            let _ = services_stopped.await;
        },
    ));
    let gateway_server = tokio::spawn(crate::http::serve(
        gateway_listener,
        Arc::new(gateway.clone()),
        async {
            let _ = gateway_stopped.await;
        },
    ));

    let launch = Launch {
        task_id: task.id.clone(),
        trial,
        command: context.command.to_vec(),
        prompt: task.prompt.clone(),
        tools: context.tools.to_string(),
        skill: skill_md(&task.id, &tools, &services_url),
        mcp_config: mcp_config(&services_url).to_string(),
        files: task.files.clone(),
        services_url,
        gateway_url,
        passthrough: context.passthrough.to_vec(),
        timeout: task.limits.timeout,
        max_turns: task.limits.max_turns,
    };
    let finished = context.sandbox.run(launch, interrupt).await;
    gateway.settle().await;

    let _ = stop_services.send(());
    let _ = stop_gateway.send(());
    let _ = services_server.await;
    let _ = gateway_server.await;

    let finished = match finished {
        Ok(finished) => finished,
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
        duration: finished.duration,
    };
    // A model call the cassette could not answer means the trial did not see the model it was
    // meant to: grading it would judge the gateway, not the agent.
    if let Some(failure) = gateway.failure() {
        return TrialOutcome::Error {
            message: format!("model gateway ({}): {failure}", context.models.mode.name()),
            trajectory: Some(Box::new(trajectory)),
        };
    }
    if let Some(recorder) = context.recorder
        && let Err(error) = recorder.add(&task.id, trial, gateway.recording())
    {
        return TrialOutcome::Error {
            message: error.to_string(),
            trajectory: Some(Box::new(trajectory)),
        };
    }
    let grade = grade::grade(task, &trajectory, context.threshold);
    TrialOutcome::Graded {
        grade,
        trajectory: Box::new(trajectory),
    }
}

fn local_url(listener: &TcpListener) -> String {
    match listener.local_addr() {
        Ok(address) => format!("http://{address}"),
        Err(_) => "http://127.0.0.1:0".into(),
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
