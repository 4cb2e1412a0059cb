//! `cargo clawtest serve TASK.yaml`: the real binary on a free loopback port, requests
//! through a std TcpStream (a service route, and MCP at `/mcp`), and the audit lines it
//! prints.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

use super::support::repository;

/// Kills the server even when an assertion fails.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The server for the demo's gmail-reply task, its stdout after the banner, the banner and
/// the services URL.
fn start() -> (
    Server,
    std::io::Lines<BufReader<std::process::ChildStdout>>,
    Vec<String>,
    String,
) {
    start_with(&[])
}

/// [`start`] with more arguments to `serve`.
fn start_with(
    more: &[&str],
) -> (
    Server,
    std::io::Lines<BufReader<std::process::ChildStdout>>,
    Vec<String>,
    String,
) {
    let task = repository().join("examples/demo/tasks/gmail-reply.yaml");
    let mut server = Server(
        Command::new(env!("CARGO_BIN_EXE_cargo-clawtest"))
            .args(["serve", task.to_str().unwrap(), "--port", "0"])
            .args(more)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cargo-clawtest starts"),
    );
    let mut lines = BufReader::new(server.0.stdout.take().unwrap()).lines();
    let mut banner = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let done = line.starts_with("audit");
        banner.push(line);
        if done {
            break;
        }
    }
    let url = banner
        .iter()
        .find_map(|l| l.strip_prefix("services: "))
        .unwrap_or_else(|| panic!("no services URL in {banner:?}"))
        .to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    (server, lines, banner, url)
}

/// POSTs `body` to `path` and returns the whole HTTP answer.
fn post(url: &str, path: &str, body: &str) -> String {
    let address = url.trim_start_matches("http://");
    let mut stream = TcpStream::connect(address).unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

/// The JSON body of an HTTP answer.
fn body_of(answer: &str) -> serde_json::Value {
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body)
        .unwrap_or_default();
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {answer}"))
}

/// `--seed 3` is shown as 3, not as the generator's seed it becomes once mixed with the task.
#[test]
fn serve_with_faults_shows_the_seed_it_was_given() {
    let (_server, _lines, banner, _url) = start_with(&["--error-rate", "0.5", "--seed", "3"]);
    let faults = banner
        .iter()
        .find(|line| line.starts_with("faults:"))
        .unwrap_or_else(|| panic!("no faults line in {banner:?}"));
    assert!(
        faults.starts_with("faults: rate 0.5 seed 3 mode Uniform"),
        "{faults}"
    );
}

#[test]
fn serve_prints_the_url_and_tools_then_one_audit_line_per_call() {
    let (_server, mut lines, banner, url) = start();
    assert!(
        banner
            .iter()
            .any(|l| l.contains("send_email") && l.contains(&format!("POST {url}/gmail/send"))),
        "{banner:?}"
    );

    let answer = post(&url, "/gmail/messages/get", r#"{"message_id": "nope"}"#);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        answer.ends_with(r#"{"error":"Message nope not found"}"#),
        "{answer}"
    );

    let line = lines.next().expect("an audit line").unwrap();
    assert_eq!(
        line,
        r#"#1 2026-01-02T09:00:01Z gmail get_message 200 {"message_id":"nope"}"#
    );
}

/// An MCP client can be pointed at `serve` by hand: `/mcp` lists the task's tools, and a
/// call reaches the audited route like an HTTP call.
#[test]
fn serve_lists_the_tools_over_mcp_and_calls_them() {
    let (_server, mut lines, banner, url) = start();
    assert!(banner.contains(&format!("mcp: {url}/mcp")), "{banner:?}");
    let initialized = body_of(&post(
        &url,
        "/mcp",
        r#"{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "by-hand", "version": "0"}}}"#,
    ));
    assert_eq!(
        initialized["result"]["protocolVersion"], "2025-06-18",
        "{initialized}"
    );

    let listed = body_of(&post(
        &url,
        "/mcp",
        r#"{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}"#,
    ));
    let tools = listed["result"]["tools"].as_array().expect("a tool list");
    let send = tools
        .iter()
        .find(|tool| tool["name"] == "send_email")
        .unwrap_or_else(|| panic!("no send_email in {listed}"));
    assert_eq!(send["inputSchema"]["type"], "object", "{send}");
    assert!(
        send["inputSchema"]["properties"]["to"].is_object(),
        "{send}"
    );

    let called = body_of(&post(
        &url,
        "/mcp",
        r#"{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "get_message", "arguments": {"message_id": "nope"}}}"#,
    ));
    assert_eq!(called["result"]["isError"], false, "{called}");
    assert!(
        called["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("Message nope not found")),
        "{called}"
    );
    let line = lines.next().expect("an audit line").unwrap();
    assert_eq!(
        line,
        r#"#1 2026-01-02T09:00:01Z gmail get_message 200 {"message_id":"nope"}"#
    );
}
