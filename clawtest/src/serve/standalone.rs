//! `cargo clawtest serve TASK.yaml`: one task's World standing alone, for debugging an
//! agent (or a curl session, or an MCP client at `/mcp`) by hand. It prints the services
//! URL, the MCP endpoint and the tools, then one line per audit entry as each request is
//! answered, until the shutdown future completes.

use std::fmt::Write as _;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::TcpListener;

use crate::escape;
use crate::services::{Catalogue, ToolBinding};
use crate::surfaces::mcp::McpServer;
use crate::task::Task;
use crate::trajectory::AuditEntry;
use crate::world::{Observed, World, WorldError, WorldOptions};

/// The default port: ClawEnvKit's 9100.
pub const DEFAULT_PORT: u16 = 9100;

/// Why the world could not be served.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The task's world cannot be built (an unknown service, fixtures of the wrong shape).
    #[error("could not build the services of task `{task}`: {source}")]
    World {
        /// The task's id.
        task: String,
        /// Why the world was refused.
        #[source]
        source: WorldError,
    },
    /// The port cannot be listened on (taken, or not allowed).
    #[error("could not listen on 127.0.0.1:{port}: {source} (choose another with --port)")]
    Bind {
        /// The port asked for (`--port`).
        port: u16,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The listening socket failed: its address could not be read, or serving stopped on an
    /// error.
    #[error("the services server failed: {0}")]
    Server(#[source] std::io::Error),
}

/// Serves `task`'s world on 127.0.0.1:`port` (0 = any free port) until `shutdown`
/// completes, writing the banner and the audit lines to `out`; `fault_seed` is the seed the
/// user gave (`--seed`), which the banner shows as given (the plan's own seed mixes it with
/// the task id).
pub async fn serve_task(
    task: &Task,
    catalogue: &Catalogue,
    port: u16,
    options: WorldOptions,
    fault_seed: Option<u64>,
    out: impl Write + Send + 'static,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let bindings = task.tool_bindings();
    let mut world = World::new(
        catalogue,
        &task.services,
        &task.seed_fixtures(),
        &bindings,
        options,
    )
    .map_err(|source| ServeError::World {
        task: task.id.clone(),
        source,
    })?;
    let entries = world.subscribe();
    let listener = TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|source| ServeError::Bind { port, source })?;
    let address = listener.local_addr().map_err(ServeError::Server)?;
    let url = format!("http://{address}");
    let mut out = out;
    let _ = write!(out, "{}", banner(task, &world, &bindings, &url, fault_seed));
    let _ = out.flush();

    // The audit arrives on a std channel from inside World::handle; a blocking thread
    // prints it so printing never holds the world's lock.
    let stopped = Arc::new(AtomicBool::new(false));
    let printer = {
        let stopped = Arc::clone(&stopped);
        tokio::task::spawn_blocking(move || {
            while !stopped.load(Ordering::Relaxed) {
                if let Ok(observed) = entries.recv_timeout(Duration::from_millis(50)) {
                    let _ = writeln!(out, "{}", observed_line(&observed));
                    let _ = out.flush();
                }
            }
        })
    };
    let world = Arc::new(Mutex::new(world));
    // The same MCP server a trial has: the task's tools, each call through the audited route.
    let mcp = Arc::new(McpServer::from_tools_json(&crate::surfaces::tools_json(
        task, catalogue,
    )));
    let served = super::serve_with_mcp(listener, world, Some(mcp), shutdown).await;
    stopped.store(true, Ordering::Relaxed);
    let _ = printer.await;
    served.map_err(ServeError::Server)
}

/// What `serve` prints first: the URL, the services, the MCP endpoint and the tools.
fn banner(
    task: &Task,
    world: &World,
    tools: &[ToolBinding],
    url: &str,
    fault_seed: Option<u64>,
) -> String {
    let mut text = format!("task {} ({})\n", task.id, task.path.display());
    let _ = writeln!(text, "services: {url}");
    let _ = writeln!(text, "mcp: {url}/mcp");
    for service in world.services() {
        let _ = writeln!(text, "  {:<20} {url}/{}/", service.name, service.prefix());
    }
    text.push_str("tools:\n");
    if tools.is_empty() {
        // No task tools: every route of the task's services, by canonical name.
        for service in world.services() {
            for route in service.routes() {
                let _ = writeln!(
                    text,
                    "  {:<20} {} {url}{}",
                    route.action, route.method, route.endpoint
                );
            }
        }
    }
    for tool in tools {
        let _ = writeln!(
            text,
            "  {:<20} {} {url}{}",
            tool.name, tool.method, tool.endpoint
        );
    }
    let plan = world.fault_plan();
    if plan.rate > 0.0 {
        let seed = fault_seed.map_or_else(|| "none".to_string(), |seed| seed.to_string());
        let _ = writeln!(
            text,
            "faults: rate {} seed {seed} mode {:?} (the seed mixed with the task id: the faults of trial 1 of a run)",
            plan.rate, plan.mode
        );
    }
    text.push_str("audit (Ctrl-C to stop):\n");
    text
}

/// What the log prints for what the audit heard: an entry's line, or once, that the audit's cap
/// was reached and later calls go unlogged (else the log would fall silent with no reason).
fn observed_line(observed: &Observed) -> String {
    match observed {
        Observed::Entry(entry) => audit_line(entry),
        Observed::CapReached(note) => format!(
            "audit log full ({note}): later calls are answered but neither recorded nor shown here; POST /reset empties it"
        ),
    }
}

/// One audit entry as a line: `#SEQ AT SERVICE ACTION STATUS [FAULT] PARAMS`, escaped for the
/// terminal (the parameters are the client's).
fn audit_line(entry: &AuditEntry) -> String {
    let fault = match (entry.fault, entry.delay_ms) {
        (Some(kind), Some(ms)) => format!(" fault={kind:?} delay={ms}ms"),
        (Some(kind), None) => format!(" fault={kind:?}"),
        _ => String::new(),
    };
    escape::terminal(&format!(
        "#{} {} {} {} {}{} {}",
        entry.seq, entry.at, entry.service, entry.action, entry.status, fault, entry.params
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_says_when_the_audit_cap_is_reached() {
        let line = observed_line(&Observed::CapReached(
            "audit: 1 call(s) answered but not recorded past 10000 entries".into(),
        ));
        assert!(
            line.starts_with(
                "audit log full (audit: 1 call(s) answered but not recorded past 10000 entries)"
            ),
            "{line}"
        );
    }
}
