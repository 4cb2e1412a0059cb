//! `clawtest-shim mcp-stdio [URL]`: an MCP stdio server for clients that can only spawn one
//! (mcp.json's `command` form). Each JSON-RPC message read from stdin, one per line, is
//! POSTed to the trial's streamable-HTTP MCP endpoint (default `http://127.0.0.1:9100/mcp`,
//! the services port inside the sandbox); each answer is written to stdout as one line.
//! Notifications (answered 202) produce no output. std only, like the rest of the shim.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;

/// The MCP endpoint inside the sandbox.
pub const DEFAULT_URL: &str = "http://127.0.0.1:9100/mcp";

/// Runs the bridge until stdin closes; returns the process exit code.
pub fn run(url: &str) -> i32 {
    let Some((address, path)) = split(url) else {
        eprintln!("clawtest-shim mcp-stdio: `{url}` is not an http://HOST:PORT/PATH URL");
        return 2;
    };
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        match post(&address, &path, line.trim()) {
            Ok((202, _)) => {}
            Ok((_, body)) if body.trim().is_empty() || body.trim() == "null" => {}
            Ok((_, body)) => {
                // One message per line: the stdio transport's framing.
                let flat = body.replace('\n', " ");
                if writeln!(stdout, "{flat}")
                    .and_then(|()| stdout.flush())
                    .is_err()
                {
                    return 0;
                }
            }
            Err(error) => {
                eprintln!("clawtest-shim mcp-stdio: {address}{path}: {error}");
                return 1;
            }
        }
    }
    0
}

/// `http://host:port/path` → (`host:port`, `/path`).
fn split(url: &str) -> Option<(String, String)> {
    let rest = url.strip_prefix("http://")?;
    let (address, path) = match rest.find('/') {
        Some(index) => (&rest[..index], &rest[index..]),
        None => (rest, "/"),
    };
    (!address.is_empty()).then(|| (address.to_string(), path.to_string()))
}

/// One HTTP/1.1 POST with a JSON body; the connection is closed after the answer.
fn post(address: &str, path: &str, body: &str) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(address)?;
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader.read_line(&mut status_line)?;
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let mut length: Option<usize> = None;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header == "\r\n" || header == "\n" {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok();
        }
    }
    let mut answer = Vec::new();
    match length {
        Some(length) => {
            answer.resize(length, 0);
            reader.read_exact(&mut answer)?;
        }
        None => {
            reader.read_to_end(&mut answer)?;
        }
    }
    Ok((status, String::from_utf8_lossy(&answer).into_owned()))
}
