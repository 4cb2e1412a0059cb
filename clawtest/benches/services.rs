//! Requests per second of the mock services: `cargo bench -p clawtest --bench services`.
//!
//! Two figures: `World::handle` in memory (the engine alone), and the HTTP listener on
//! 127.0.0.1 with keep-alive connections (engine + hyper + loopback). Both runs are bounded
//! in request count and in time, and print their figures; nothing is asserted.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clawtest::services::Catalogue;
use clawtest::world::{World, WorldOptions};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

const IN_MEMORY_REQUESTS: usize = 200_000;
const HTTP_REQUESTS: usize = 20_000;
const CONNECTIONS: usize = 4;
const TIME_LIMIT: Duration = Duration::from_secs(10);

/// A mixed workload over two services: reads, filtered reads, creates, updates, sends.
const CALLS: &[(&str, &str)] = &[
    // Created tasks are pending: listing completed ones keeps the answers the same size.
    ("/todo/tasks", r#"{"status": "completed"}"#),
    (
        "/todo/tasks/update",
        r#"{"task_id": "t1", "priority": "high"}"#,
    ),
    ("/gmail/messages", r#"{"days_back": 30, "max_results": 5}"#),
    ("/gmail/messages/get", r#"{"message_id": "m2"}"#),
    ("/todo/tasks/create", r#"{"title": "bench"}"#),
    (
        "/gmail/send",
        r#"{"to": "a@x.com", "subject": "s", "body": "b"}"#,
    ),
];

fn world(catalogue: &Catalogue) -> World {
    let tasks: Vec<_> = (1..=20)
        .map(|i| json!({"id": format!("t{i}"), "title": format!("Task {i}"), "status": if i % 2 == 0 { "pending" } else { "completed" }}))
        .collect();
    let inbox: Vec<_> = (1..=20)
        .map(|i| json!({"id": format!("m{i}"), "subject": format!("Mail {i}"), "date": format!("2026-01-{:02}T10:00:00Z", i)}))
        .collect();
    World::new(
        catalogue,
        &["todo".into(), "gmail".into()],
        &json!({"tasks": tasks, "inbox": inbox}),
        &[],
        WorldOptions::default(),
    )
    .expect("bench world builds")
}

fn in_memory(catalogue: &Catalogue) {
    let mut w = world(catalogue);
    let start = Instant::now();
    let mut done = 0;
    while done < IN_MEMORY_REQUESTS && start.elapsed() < TIME_LIMIT {
        // A fresh world now and then, so creates and the audit do not grow without bound.
        if done % 2_000 == 0 {
            w = world(catalogue);
        }
        let (path, body) = CALLS[done % CALLS.len()];
        let answer = w.handle("POST", path, body.as_bytes());
        assert_eq!(answer.status, 200);
        done += 1;
    }
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "World::handle (in memory): {done} requests in {seconds:.3} s = {:.0} requests/s",
        done as f64 / seconds
    );
}

async fn client(address: std::net::SocketAddr, requests: usize, deadline: Instant) -> usize {
    let stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let (read, mut write) = stream.into_split();
    let mut read = BufReader::new(read);
    let mut done = 0;
    while done < requests && Instant::now() < deadline {
        let (path, body) = CALLS[done % CALLS.len()];
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        write.write_all(request.as_bytes()).await.expect("write");
        let mut length = 0;
        let mut line = String::new();
        loop {
            line.clear();
            read.read_line(&mut line).await.expect("read");
            if line == "\r\n" || line.is_empty() {
                break;
            }
            if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = value.trim().parse().expect("length");
            }
        }
        let mut content = vec![0; length];
        read.read_exact(&mut content).await.expect("body");
        done += 1;
    }
    done
}

fn over_http(catalogue: &Catalogue) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let shared = Arc::new(Mutex::new(world(catalogue)));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("address");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(clawtest::services::http::serve(listener, Arc::clone(&shared), async {
            let _ = stopped.await;
        }));
        let start = Instant::now();
        let deadline = start + TIME_LIMIT;
        let clients: Vec<_> = (0..CONNECTIONS)
            .map(|_| tokio::spawn(client(address, HTTP_REQUESTS / CONNECTIONS, deadline)))
            .collect();
        let mut done = 0;
        for c in clients {
            done += c.await.expect("client");
        }
        let seconds = start.elapsed().as_secs_f64();
        println!(
            "HTTP on 127.0.0.1 ({CONNECTIONS} keep-alive connections): {done} requests in {seconds:.3} s = {:.0} requests/s",
            done as f64 / seconds
        );
        let audited = shared.lock().map(|w| w.audit().len()).unwrap_or(0);
        println!("audit entries recorded: {audited} (one per request)");
        let _ = stop.send(());
        let _ = server.await;
    });
}

fn main() {
    // Parsed once, as a run does: building the catalogue is not part of a request.
    let catalogue = Catalogue::builtin();
    in_memory(&catalogue);
    over_http(&catalogue);
}
