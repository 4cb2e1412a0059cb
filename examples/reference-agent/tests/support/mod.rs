//! Test doubles for the sandbox: a minimal HTTP/1.1 server on `127.0.0.1:0` that records every
//! request and answers from a script, used both as the OpenAI-compatible model and as the mock
//! tool service, plus a temporary directory for the tools and prompt files.

#![allow(dead_code)] // Each test binary uses a different subset.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// Header names are lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("request body is JSON")
    }
}

/// What the server answers.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub body: String,
}

impl Reply {
    pub fn new(status: u16, body: impl Into<String>) -> Reply {
        Reply {
            status,
            body: body.into(),
        }
    }

    pub fn json(status: u16, body: &Value) -> Reply {
        Reply::new(status, body.to_string())
    }
}

/// A server thread that lives until the test process exits.
pub struct MockServer {
    pub url: String,
    requests: Arc<Mutex<Vec<RecordedRequest>>>,
}

impl MockServer {
    /// Answers each request with `handler(request)`.
    pub fn start(handler: impl Fn(&RecordedRequest) -> Reply + Send + 'static) -> MockServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let address = listener.local_addr().expect("local address");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&requests);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                serve(stream, &handler, &recorded);
            }
        });
        MockServer {
            url: format!("http://{address}"),
            requests,
        }
    }

    /// Answers the n-th request with `replies[n]`, repeating the last one when the script runs out.
    pub fn scripted(replies: Vec<Reply>) -> MockServer {
        assert!(!replies.is_empty(), "a script needs at least one reply");
        let counter = AtomicUsize::new(0);
        MockServer::start(move |_| {
            let index = counter.fetch_add(1, Ordering::SeqCst);
            replies[index.min(replies.len() - 1)].clone()
        })
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.requests.lock().expect("requests lock").clone()
    }
}

fn serve(
    stream: TcpStream,
    handler: &impl Fn(&RecordedRequest) -> Reply,
    recorded: &Mutex<Vec<RecordedRequest>>,
) {
    let Some(request) = read_request(&stream) else {
        return;
    };
    let reply = handler(&request);
    // Record before answering: once the agent has the answer, the test may inspect the log.
    recorded.lock().expect("requests lock").push(request);
    let mut stream = stream;
    let head = format!(
        "HTTP/1.1 {} Mock\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        reply.status,
        reply.body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(reply.body.as_bytes());
    let _ = stream.flush();
}

fn read_request(stream: &TcpStream) -> Option<RecordedRequest> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();

    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let length = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, value)| value.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(RecordedRequest {
        method,
        path,
        headers,
        body,
    })
}

/// A unique temporary directory, removed on drop.
pub struct TempDir {
    pub path: PathBuf,
}

impl TempDir {
    pub fn new() -> TempDir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "reference-agent-test-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&path).expect("create temporary directory");
        TempDir { path }
    }

    pub fn write(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.path.join(name);
        std::fs::write(&path, contents).expect("write temporary file");
        path
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// A chat-completions response whose message asks for the given `(id, name, arguments)` calls.
pub fn tool_calls_reply(calls: &[(&str, &str, &str)]) -> Reply {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, arguments)| {
            serde_json::json!({
                "id": id,
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            })
        })
        .collect();
    Reply::json(
        200,
        &serde_json::json!({
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": null, "tool_calls": calls},
                "finish_reason": "tool_calls",
            }],
        }),
    )
}

/// A chat-completions response with a final answer.
pub fn final_reply(content: &str) -> Reply {
    Reply::json(
        200,
        &serde_json::json!({
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }],
        }),
    )
}

/// Result of running the agent binary.
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Runs the agent binary with exactly these environment variables (nothing inherited, so the
/// developer's own OPENAI_* settings cannot leak into a test).
pub fn run_agent(variables: &[(&str, &Path)], text_variables: &[(&str, &str)]) -> Run {
    run_agent_with_arguments(variables, text_variables, &[])
}

/// [`run_agent`] with command-line arguments.
pub fn run_agent_with_arguments(
    variables: &[(&str, &Path)],
    text_variables: &[(&str, &str)],
    arguments: &[&str],
) -> Run {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_reference-agent"));
    command.args(arguments);
    command.env_clear();
    for (name, value) in variables {
        command.env(name, value);
    }
    for (name, value) in text_variables {
        command.env(name, value);
    }
    let output = command.output().expect("run reference-agent");
    Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}
