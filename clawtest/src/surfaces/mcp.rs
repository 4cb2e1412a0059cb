//! The trial's tools as an MCP server (ClawEnvKit tier 2): JSON-RPC 2.0 over MCP's streamable
//! HTTP transport, at `/mcp` on the services listener. `tools/list` lists the task's tools with
//! their parameter schemas; `tools/call` goes through the same audited service route an HTTP
//! call would take, so a call made over MCP appears in the audit log exactly once. A trial's
//! server also offers the workspace file tools its tools file has (`read_file`, `write_file`,
//! `list_dir`; not `shell`), run by clawtest in the trial's workspace (`workspace_files.rs`):
//! a harness that reaches its tools over MCP only can still do a file task.
//!
//! Every POST is answered with one JSON body (the transport allows this instead of an event
//! stream); notifications get 202; the server keeps no session and offers no server-initiated
//! stream (GET answers 405, as the transport specifies for servers without one). Also here:
//! the `mcp.json` client configuration pointing at the endpoint.

use std::path::PathBuf;
use std::sync::Mutex;

use serde_json::{Value, json};

use super::workspace_files::{self, WorkspaceFiles};
use crate::method::Method;
use crate::world::{ServiceResponse, World};

/// The protocol revision answered when the client asks for one this server does not know.
const PROTOCOL_VERSION: &str = "2025-06-18";
/// Revisions whose tool methods this server implements unchanged.
const KNOWN_VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18"];

/// One tool: what the client sees and what a call reaches.
#[derive(Debug, Clone, PartialEq)]
struct McpTool {
    name: String,
    description: String,
    input_schema: Value,
    reaches: Reaches,
}

/// What a tool's call reaches.
#[derive(Debug, Clone, PartialEq)]
enum Reaches {
    /// A service route, through the World (audited).
    Route { method: Method, endpoint: String },
    /// A workspace file tool, done by clawtest in the trial's workspace.
    Workspace,
}

/// The MCP endpoint of one trial.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServer {
    tools: Vec<McpTool>,
    /// The trial's workspace on the host, when the server offers its file tools.
    workspace: Option<WorkspaceFiles>,
}

impl McpServer {
    /// The server for the service tools of a `tools.json` document (see
    /// [`super::tools_json`]); its workspace tools are left out (see [`Self::with_workspace`]).
    pub fn from_tools_json(tools: &Value) -> McpServer {
        Self::serving(tools, None)
    }

    /// The server of a trial whose workspace is the host folder `workspace`: the service tools,
    /// and the workspace file tools the document offers (`"workspace": true`), run there.
    pub fn with_workspace(tools: &Value, workspace: PathBuf) -> McpServer {
        Self::serving(tools, Some(WorkspaceFiles::new(workspace)))
    }

    fn serving(tools: &Value, workspace: Option<WorkspaceFiles>) -> McpServer {
        let tools = tools
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .filter_map(|entry| {
                let name = entry["name"].as_str()?;
                let reaches = if entry["workspace"] == true {
                    (workspace.is_some() && workspace_files::SERVED.contains(&name))
                        .then_some(Reaches::Workspace)?
                } else {
                    Reaches::Route {
                        method: Method::from_name(entry["method"].as_str().unwrap_or("POST"))?,
                        endpoint: entry["endpoint"].as_str()?.to_string(),
                    }
                };
                Some(McpTool {
                    name: name.to_string(),
                    description: entry["description"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    input_schema: entry["parameters"].clone(),
                    reaches,
                })
            })
            .collect();
        McpServer { tools, workspace }
    }

    /// Answers one HTTP request to `/mcp`.
    pub(crate) fn answer(
        &self,
        http_method: &str,
        body: &[u8],
        world: &Mutex<World>,
    ) -> ServiceResponse {
        if http_method != "POST" {
            return response(
                405,
                json!({"error": "this MCP endpoint answers POST only (no server-initiated stream)"}),
            );
        }
        let message: Value = match serde_json::from_slice(body) {
            Ok(message) => message,
            Err(error) => {
                return response(
                    400,
                    rpc_error(Value::Null, -32700, &format!("parse error: {error}")),
                );
            }
        };
        let Some(method) = message["method"].as_str() else {
            // A response or something else from the client: nothing to answer.
            return response(202, Value::Null);
        };
        let Some(id) = message.get("id").cloned() else {
            // Notifications (`notifications/initialized`, cancellations) need no answer.
            return response(202, Value::Null);
        };
        let params = &message["params"];
        let result = match method {
            "initialize" => Ok(self.initialize(params)),
            "ping" => Ok(json!({})),
            "tools/list" => Ok(self.list()),
            "tools/call" => self.call(params, world),
            other => Err((-32601, format!("method `{other}` is not supported"))),
        };
        match result {
            Ok(result) => response(200, json!({"jsonrpc": "2.0", "id": id, "result": result})),
            Err((code, message)) => response(200, rpc_error(id, code, &message)),
        }
    }

    fn initialize(&self, params: &Value) -> Value {
        let asked = params["protocolVersion"].as_str().unwrap_or_default();
        let version = if KNOWN_VERSIONS.contains(&asked) {
            asked
        } else {
            PROTOCOL_VERSION
        };
        json!({
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": false}},
            "serverInfo": {"name": "clawtest", "version": env!("CARGO_PKG_VERSION")},
            "instructions": if self.tools.iter().any(|tool| tool.reaches == Reaches::Workspace) {
                "The tools of this evaluation task: each call reaches the task's services, or (read_file, write_file, list_dir) its workspace, /workspace."
            } else {
                "The tools of this evaluation task; each call reaches the task's services."
            },
        })
    }

    fn list(&self) -> Value {
        let tools: Vec<Value> = self
            .tools
            .iter()
            .map(|tool| {
                json!({"name": tool.name, "description": tool.description, "inputSchema": tool.input_schema})
            })
            .collect();
        json!({"tools": tools})
    }

    fn call(&self, params: &Value, world: &Mutex<World>) -> Result<Value, (i64, String)> {
        let name = params["name"].as_str().unwrap_or_default();
        let Some(tool) = self.tools.iter().find(|tool| tool.name == name) else {
            return Err((-32602, format!("unknown tool `{name}`")));
        };
        let arguments = match &params["arguments"] {
            Value::Null => json!({}),
            arguments => arguments.clone(),
        };
        let (method, endpoint) = match (&tool.reaches, &self.workspace) {
            (Reaches::Route { method, endpoint }, _) => (method, endpoint),
            (Reaches::Workspace, Some(workspace)) => {
                let (text, is_error) = match workspace.call(name, &arguments) {
                    Ok(text) => (text, false),
                    Err(error) => (format!("error: {error}"), true),
                };
                return Ok(json!({
                    "content": [{"type": "text", "text": text}],
                    "isError": is_error,
                }));
            }
            (Reaches::Workspace, None) => {
                return Err((-32602, format!("unknown tool `{name}`")));
            }
        };
        let body = arguments.to_string();
        let answer = {
            // A poisoned lock still holds a usable world: handle() never leaves it half-updated.
            let mut world = world
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            world.handle(method.name(), endpoint, body.as_bytes())
        };
        let text = serde_json::to_string_pretty(&answer.body).unwrap_or_default();
        Ok(json!({
            "content": [{"type": "text", "text": text}],
            "isError": answer.status >= 400,
        }))
    }
}

fn rpc_error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

fn response(status: u16, body: Value) -> ServiceResponse {
    ServiceResponse {
        status,
        body,
        headers: vec![],
        delay: None,
    }
}

/// The MCP endpoint on the services listener at `services_url`.
pub(crate) fn mcp_url(services_url: &str) -> String {
    format!("{}/mcp", services_url.trim_end_matches('/'))
}

/// The `mcp.json` in the control folder: one document holding the server in each shape the
/// common clients read, so a harness can pass the file as it is or copy its part of it.
///
/// - `mcpServers`: Cline's, Cursor's and nanobot's shape (`tools.mcpServers` in nanobot's
///   config), `{"type": "streamableHttp", "url"}`. nanobot validates `type` against `stdio`,
///   `sse` and `streamableHttp` and refuses the whole file for anything else (`"http"`
///   included); a client that ignores `type` goes by `url`.
/// - `servers`: VS Code's shape, `{"type": "http", "url"}`.
/// - `mcp.servers`: OpenClaw's native shape, `{"url", "transport": "streamable-http"}`.
///
/// Claude Code's shape (`{"type": "http", "url"}` under `mcpServers`) is written as
/// `.mcp.json` in the workspace instead ([`project_config`]), where Claude Code looks.
/// `stdio_bridge`, when the sandbox has one (the docker backend's shim), adds a
/// `clawtest-stdio` server for clients that can only spawn stdio servers:
/// `clawtest-shim mcp-stdio` relays each line to the same endpoint.
pub(crate) fn mcp_config(services_url: &str, stdio_bridge: Option<&str>) -> Value {
    let url = mcp_url(services_url);
    let mut servers = json!({"clawtest": {"type": "streamableHttp", "url": url}});
    let mut openclaw = json!({"clawtest": {"url": url, "transport": "streamable-http"}});
    if let Some(bridge) = stdio_bridge {
        let args = json!(["mcp-stdio", url]);
        servers["clawtest-stdio"] = json!({"type": "stdio", "command": bridge, "args": args});
        openclaw["clawtest-stdio"] = json!({"transport": "stdio", "command": bridge, "args": args});
    }
    json!({
        "mcpServers": servers,
        "servers": {"clawtest": {"type": "http", "url": url}},
        "mcp": {"servers": openclaw},
    })
}

/// Claude Code's project configuration, `.mcp.json` in its working directory (the
/// workspace): `mcpServers` with `{"type": "http", "url"}`.
pub(crate) fn project_config(services_url: &str) -> Value {
    json!({"mcpServers": {"clawtest": {"type": "http", "url": mcp_url(services_url)}}})
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::services::Catalogue;
    use crate::world::WorldOptions;

    /// The todo service with one pending task, the world the MCP tool calls reach (the serve
    /// tests use it too).
    pub(crate) fn world() -> Mutex<World> {
        let fixtures = json!({"tasks": [{"id": "t1", "title": "Plan", "status": "pending"}]});
        Mutex::new(
            World::new(
                &Catalogue::builtin(),
                &["todo".into()],
                &fixtures,
                &[],
                WorldOptions::default(),
            )
            .unwrap(),
        )
    }

    /// An MCP server with one tool, `list_tasks`, calling the todo service's list route.
    pub(crate) fn server() -> McpServer {
        McpServer::from_tools_json(&server_tools())
    }

    fn server_tools() -> Value {
        json!([{
            "name": "list_tasks", "description": "List the tasks", "endpoint": "/todo/tasks",
            "method": "POST", "parameters": {"type": "object", "properties": {"status": {"type": "string"}}, "required": []}
        }])
    }

    fn rpc(server: &McpServer, world: &Mutex<World>, message: Value) -> ServiceResponse {
        server.answer("POST", message.to_string().as_bytes(), world)
    }

    #[test]
    fn initialize_list_and_call_reach_the_audited_route() {
        let (server, world) = (server(), world());
        let init = rpc(
            &server,
            &world,
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}),
        );
        assert_eq!(init.body["result"]["protocolVersion"], "2025-03-26");
        let notified = rpc(
            &server,
            &world,
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        );
        assert_eq!(notified.status, 202);
        let listed = rpc(
            &server,
            &world,
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        );
        assert_eq!(listed.body["result"]["tools"][0]["name"], "list_tasks");
        assert_eq!(
            listed.body["result"]["tools"][0]["inputSchema"]["properties"]["status"]["type"],
            "string"
        );
        let called = rpc(
            &server,
            &world,
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "list_tasks", "arguments": {}}}),
        );
        assert_eq!(called.body["result"]["isError"], false);
        let text = called.body["result"]["content"][0]["text"]
            .as_str()
            .unwrap();
        assert!(text.contains("Plan"), "{text}");
        let world = world.lock().unwrap();
        assert_eq!(world.audit().len(), 1);
        assert_eq!(world.audit()[0].action, "list_tasks");
    }

    #[test]
    fn unknown_tools_and_methods_are_json_rpc_errors() {
        let (server, world) = (server(), world());
        let unknown_tool = rpc(
            &server,
            &world,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "rm_rf"}}),
        );
        assert_eq!(unknown_tool.body["error"]["code"], -32602);
        let unknown_method = rpc(
            &server,
            &world,
            json!({"jsonrpc": "2.0", "id": 2, "method": "resources/list"}),
        );
        assert_eq!(unknown_method.body["error"]["code"], -32601);
        assert_eq!(server.answer("GET", b"", &world).status, 405);
        assert!(world.lock().unwrap().audit().is_empty());
    }

    /// A trial's server offers the file tools of a file task's tools document (not `shell`),
    /// run in its workspace and not in the audit; without a workspace it offers none of them.
    #[test]
    fn a_trial_server_runs_the_workspace_file_tools_in_its_workspace() {
        let workspace = tempfile::tempdir().unwrap();
        std::fs::write(workspace.path().join("sales.csv"), "pens,10\n").unwrap();
        let mut tools = server_tools();
        tools
            .as_array_mut()
            .unwrap()
            .extend(super::super::workspace::entries());
        let world = world();
        let server = McpServer::with_workspace(&tools, workspace.path().to_path_buf());
        let listed = rpc(
            &server,
            &world,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        );
        let names: Vec<&str> = listed.body["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["list_tasks", "read_file", "write_file", "list_dir"]);
        let call = |id: u32, name: &str, arguments: Value| {
            rpc(
                &server,
                &world,
                json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}}),
            )
            .body["result"]
                .clone()
        };
        let read = call(2, "read_file", json!({"path": "/workspace/sales.csv"}));
        assert_eq!(read["content"][0]["text"], "pens,10\n");
        assert_eq!(read["isError"], false);
        let wrote = call(
            3,
            "write_file",
            json!({"path": "/workspace/report.md", "content": "Total: 10"}),
        );
        assert_eq!(wrote["isError"], false);
        assert_eq!(
            std::fs::read_to_string(workspace.path().join("report.md")).unwrap(),
            "Total: 10"
        );
        let refused = call(4, "read_file", json!({"path": "../../etc/passwd"}));
        assert_eq!(refused["isError"], true);
        assert!(world.lock().unwrap().audit().is_empty());
        let shell = rpc(
            &server,
            &world,
            json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "shell", "arguments": {"command": "id"}}}),
        );
        assert_eq!(shell.body["error"]["code"], -32602);

        let standalone = McpServer::from_tools_json(&tools);
        let listed = rpc(
            &standalone,
            &world,
            json!({"jsonrpc": "2.0", "id": 6, "method": "tools/list"}),
        );
        assert_eq!(listed.body["result"]["tools"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn the_client_configuration_points_at_the_endpoint() {
        let loopback = mcp_config("http://127.0.0.1:4000/", None);
        let url = "http://127.0.0.1:4000/mcp";
        assert_eq!(loopback["mcpServers"]["clawtest"]["url"], url);
        assert!(loopback["mcpServers"].get("clawtest-stdio").is_none());
        let container = mcp_config("http://127.0.0.1:9100", Some("/.clawtest-shim"));
        assert_eq!(
            container["mcpServers"]["clawtest-stdio"]["command"],
            "/.clawtest-shim"
        );
        assert_eq!(
            container["mcpServers"]["clawtest-stdio"]["args"],
            json!(["mcp-stdio", "http://127.0.0.1:9100/mcp"])
        );
        assert_eq!(
            container["mcp"]["servers"]["clawtest-stdio"]["transport"],
            "stdio"
        );
    }

    /// Each shape as its client reads it: the transport names those clients accept (nanobot
    /// refuses `"http"`, the value VS Code and Claude Code want).
    #[test]
    fn each_client_shape_names_a_transport_its_client_accepts() {
        let config = mcp_config("http://127.0.0.1:4000", None);
        let url = json!("http://127.0.0.1:4000/mcp");
        // nanobot's MCPServerConfig.type: Literal["stdio", "sse", "streamableHttp"] | None.
        let nanobot = &config["mcpServers"]["clawtest"];
        assert!(["stdio", "sse", "streamableHttp"].contains(&nanobot["type"].as_str().unwrap()));
        assert_eq!(nanobot["url"], url);
        assert_eq!(
            config["servers"]["clawtest"],
            json!({"type": "http", "url": url})
        );
        assert_eq!(
            config["mcp"]["servers"]["clawtest"],
            json!({"url": url, "transport": "streamable-http"})
        );
        assert_eq!(
            project_config("http://127.0.0.1:4000/"),
            json!({"mcpServers": {"clawtest": {"type": "http", "url": url}}})
        );
    }
}
