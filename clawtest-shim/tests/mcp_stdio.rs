//! `clawtest-shim mcp-stdio`: JSON-RPC lines on stdin reach the trial's MCP endpoint, answers
//! come back one per line, notifications produce nothing, and the tool call is audited.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use clawtest::services::{Catalogue, ToolBinding};
use clawtest::surfaces::mcp::McpServer;
use clawtest::world::{World, WorldOptions};
use serde_json::{Value, json};

#[test]
fn stdio_messages_are_relayed_to_the_mcp_endpoint() {
    let catalogue = Catalogue::builtin();
    let bindings = vec![ToolBinding {
        name: "list_tasks".into(),
        service: "todo".into(),
        endpoint: "/todo/tasks".into(),
        method: clawtest::method::Method::Post,
    }];
    let fixtures =
        json!({"tasks": [{"id": "todo_001", "title": "Patch OpenSSL", "status": "pending"}]});
    let world = Arc::new(Mutex::new(
        World::new(
            &catalogue,
            &["todo".to_string()],
            &fixtures,
            &bindings,
            WorldOptions::default(),
        )
        .unwrap(),
    ));
    let tools = json!([{"type": "function", "function": {"name": "list_tasks", "description": "List", "parameters": {"type": "object", "properties": {}}}, "name": "list_tasks", "service": "todo", "endpoint": "/todo/tasks", "method": "POST"}]);
    let mcp = Arc::new(McpServer::from_tools_json(&tools));

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let served = Arc::clone(&world);
    runtime.spawn(clawtest::serve::serve_with_mcp(
        listener,
        served,
        Some(mcp),
        std::future::pending(),
    ));

    let mut bridge = Command::new(env!("CARGO_BIN_EXE_clawtest-shim"))
        .args(["mcp-stdio", &url])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the shim starts");
    let mut stdin = bridge.stdin.take().unwrap();
    for message in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "list_tasks", "arguments": {}}}),
    ] {
        writeln!(stdin, "{message}").unwrap();
    }
    drop(stdin);
    let answers: Vec<Value> = BufReader::new(bridge.stdout.take().unwrap())
        .lines()
        .map(|line| serde_json::from_str(&line.unwrap()).expect("one JSON message per line"))
        .collect();
    assert_eq!(bridge.wait().unwrap().code(), Some(0));
    assert_eq!(
        answers.len(),
        2,
        "the notification has no answer: {answers:?}"
    );
    assert_eq!(answers[0]["id"], 1);
    assert_eq!(answers[1]["id"], 2);
    assert!(
        answers[1]["result"].to_string().contains("Patch OpenSSL"),
        "{}",
        answers[1]
    );
    assert_eq!(world.lock().unwrap().audit().len(), 1);
}
