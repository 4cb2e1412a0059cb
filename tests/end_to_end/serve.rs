//! `cargo clawtest serve TASK.yaml`: the real binary on a free loopback port, a request
//! through a std TcpStream, and the audit line it prints.

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

#[test]
fn serve_prints_the_url_and_tools_then_one_audit_line_per_call() {
    let task = repository().join("examples/demo/tasks/gmail-reply.yaml");
    let mut server = Server(
        Command::new(env!("CARGO_BIN_EXE_cargo-clawtest"))
            .args(["serve", task.to_str().unwrap(), "--port", "0"])
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
    assert!(
        banner
            .iter()
            .any(|l| l.contains("send_email") && l.contains(&format!("POST {url}/gmail/send"))),
        "{banner:?}"
    );

    let address = url.trim_start_matches("http://");
    let mut stream = TcpStream::connect(address).unwrap();
    let body = r#"{"message_id": "nope"}"#;
    write!(
        stream,
        "POST /gmail/messages/get HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
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
