//! Speed of the mock services: `cargo bench -p clawtest --bench services`.
//!
//! Two parts, both printing figures and asserting nothing:
//!
//! - `World::handle` in memory: the engine alone, per route.
//! - Over HTTP on 127.0.0.1: requests/s and p50/p99/max latency of `POST /todo/tasks` and
//!   `POST /todo/tasks/update` at 1 and 16 keep-alive connections, and the server's RSS.
//!
//! The server runs in a separate process (this binary re-executed with [`SERVER_ENV`] set)
//! and serves one World through `serve::serve`, the path `cargo clawtest serve`
//! takes (a trial's listener runs the same accept loop on its own thread), so its RSS and
//! CPU time are its own. The load generator is kept cheap because it shares the machine's
//! cores with the server: one thread, a current-thread tokio runtime, one task per
//! connection, pre-built request bytes and a minimal response parser (about 6 us of CPU a
//! request; a thread per connection with blocking sockets measured about 9 us). Each
//! connection sends one request and waits for the whole answer before the next (no
//! pipelining): a latency is one request's round trip, from writing the request to having
//! read the whole answer.
//!
//! Next to each row: the CPU the server, the client and the rest of the machine used
//! meanwhile (`/proc`), since on a shared machine other work moves the figures; the
//! machine's load shows in the last column.
//!
//! `CLAWTEST_BENCH_SECONDS` sets the measured seconds per row (default 5; each row also
//! has a 1 s warm-up that is not measured).

// A benchmark is a binary that prints its figures: the library's no-printing lints are not for it.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{BufRead, BufReader as StdBufReader, Write as _};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clawtest::services::Catalogue;
use clawtest::world::{World, WorldOptions};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Set in the re-executed child: it becomes the server.
const SERVER_ENV: &str = "CLAWTEST_BENCH_SERVER";
const SECONDS_ENV: &str = "CLAWTEST_BENCH_SECONDS";
const WARM_UP: Duration = Duration::from_secs(1);
const IN_MEMORY_TIME: Duration = Duration::from_secs(2);
const CONCURRENCY: [usize; 2] = [1, 16];
/// The issue's target, at concurrency 16.
const TARGET_REQUESTS_PER_SECOND: f64 = 20_000.0;
const TARGET_P99: Duration = Duration::from_millis(2);

/// The two measured routes and their bodies. Listing every task keeps the answer the same
/// size while updates run; updates alternate priorities across the tasks.
const ROUTES: [(&str, &str); 2] = [
    ("/todo/tasks", r#"{"status": "all"}"#),
    (
        "/todo/tasks/update",
        r#"{"task_id": "todo_003", "priority": "high", "status": "in_progress"}"#,
    ),
];

/// A todo board the size of a typical ClawEnvKit task's (ten tasks, every field set).
fn fixtures() -> Value {
    let statuses = ["pending", "in_progress", "completed"];
    let priorities = ["low", "medium", "high"];
    let tasks: Vec<Value> = (1..=10)
        .map(|i| {
            json!({
                "id": format!("todo_{i:03}"),
                "title": format!("Task number {i} of the quarterly board"),
                "description": format!("What task {i} is about, in a sentence or two."),
                "status": statuses[i % 3],
                "priority": priorities[i % 3],
                "due_date": format!("2026-01-{:02}", 10 + i),
                "tags": ["work", format!("q{}", 1 + i % 4)],
            })
        })
        .collect();
    json!({ "tasks": tasks })
}

fn world(catalogue: &Catalogue) -> World {
    World::new(
        catalogue,
        &["todo".into()],
        &fixtures(),
        &[],
        WorldOptions::default(),
    )
    .expect("bench world builds")
}

fn in_memory(catalogue: &Catalogue) {
    println!(
        "World::handle_serialized in memory (the engine alone, as the HTTP server calls it; one thread):"
    );
    for (path, body) in ROUTES {
        let mut w = world(catalogue);
        let start = Instant::now();
        let mut done = 0u64;
        while start.elapsed() < IN_MEMORY_TIME {
            for _ in 0..1_000 {
                let answer = w.handle_serialized("POST", path, body.as_bytes());
                assert_eq!(
                    answer.status,
                    200,
                    "{}",
                    String::from_utf8_lossy(&answer.body)
                );
            }
            done += 1_000;
        }
        let seconds = start.elapsed().as_secs_f64();
        println!(
            "  POST {path:<20} {done:>9} requests in {seconds:.2} s = {:>9.0} requests/s",
            done as f64 / seconds
        );
    }
}

/// The child: serves one world on a free loopback port until its stdin closes. It answers
/// two commands on stdin, outside HTTP so they cost the measured server nothing: `reset`
/// (the world back to its fixtures, audit emptied, as `POST /reset`) and `audit` (how many
/// entries the audit holds).
fn server() {
    let catalogue = Catalogue::builtin();
    let world = Arc::new(Mutex::new(world(&catalogue)));
    // The runtime every `cargo clawtest` command runs on (`serve` puts the listener on a
    // thread of its own).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("address").port();
        println!("port {port}");
        std::io::stdout().flush().expect("stdout");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let commanded = Arc::clone(&world);
        std::thread::spawn(move || {
            // The bench closes our stdin to stop us.
            for line in std::io::stdin().lines().map_while(Result::ok) {
                let mut world = commanded.lock().unwrap_or_else(|e| e.into_inner());
                match line.trim() {
                    "reset" => {
                        world.reset();
                        println!("reset");
                    }
                    "audit" => println!("audit {}", world.audit().len()),
                    other => println!("unknown command {other:?}"),
                }
                drop(world);
                let _ = std::io::stdout().flush();
            }
            let _ = stop.send(());
        });
        clawtest::serve::serve(listener, world, async {
            let _ = stopped.await;
        })
        .await
        .expect("serve");
    });
}

/// The server process, as seen from the bench.
struct Server {
    child: Child,
    commands: std::process::ChildStdin,
    lines: StdBufReader<std::process::ChildStdout>,
    address: SocketAddr,
}

impl Server {
    fn start() -> Server {
        let mut child = Command::new(std::env::current_exe().expect("own path"))
            .env(SERVER_ENV, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the server process");
        let commands = child.stdin.take().expect("stdin");
        let mut lines = StdBufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        lines.read_line(&mut line).expect("server banner");
        let port: u16 = line
            .trim()
            .strip_prefix("port ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the server said {line:?}, not its port"));
        Server {
            child,
            commands,
            lines,
            address: SocketAddr::from(([127, 0, 0, 1], port)),
        }
    }

    /// Sends a command (see [`server`]) and returns the answer line.
    fn command(&mut self, command: &str) -> String {
        writeln!(self.commands, "{command}").expect("command the server");
        self.commands.flush().expect("command the server");
        let mut line = String::new();
        self.lines
            .read_line(&mut line)
            .expect("the server's answer");
        line.trim().to_owned()
    }

    /// How many entries the world's audit holds.
    fn audited(&mut self) -> u64 {
        let line = self.command("audit");
        line.strip_prefix("audit ")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("the server said {line:?}, not its audit count"))
    }

    fn stop(self) {
        let Server {
            mut child,
            commands,
            ..
        } = self;
        drop(commands);
        let _ = child.wait();
    }
}

/// VmRSS and VmHWM of a process, in KiB.
fn memory(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// User + system CPU time a process has used so far.
fn cpu_time(pid: &str) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) start at `state`: utime and
    // stime are the 14th and 15th fields of the line, the 12th and 13th after `)`.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let ticks: u64 = after
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|t| t.parse::<u64>().ok())
        .sum();
    let per_second = rustix::param::clock_ticks_per_second().max(1);
    Duration::from_secs_f64(ticks as f64 / per_second as f64)
}

/// The whole machine's CPU time so far, from `/proc/stat`: (busy, all), busy including
/// time stolen by the hypervisor.
fn machine_cpu() -> (Duration, Duration) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let ticks: Vec<u64> = stat
        .lines()
        .next()
        .and_then(|line| line.strip_prefix("cpu "))
        .map(|rest| {
            rest.split_whitespace()
                .filter_map(|t| t.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    // user nice system idle iowait irq softirq steal (guest time is already in user).
    let all: u64 = ticks.iter().take(8).sum();
    let idle: u64 = ticks.iter().skip(3).take(2).sum();
    let per_second = rustix::param::clock_ticks_per_second().max(1) as f64;
    let seconds = |t: u64| Duration::from_secs_f64(t as f64 / per_second);
    (seconds(all - idle), seconds(all))
}

/// The figures of one connection.
#[derive(Default)]
struct Measured {
    /// Round trips of the requests started inside the measured window, in nanoseconds.
    latencies: Vec<u64>,
    /// Requests sent in all (warm-up included), all answered.
    sent: u64,
    /// Answers that were not 200.
    not_ok: u64,
}

/// One keep-alive connection sending `request` until `end`; requests started before
/// `measure_from` are the warm-up.
async fn connection(
    address: SocketAddr,
    request: Arc<[u8]>,
    measure_from: Instant,
    end: Instant,
) -> Measured {
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let mut buffer = vec![0u8; 64 * 1024];
    let mut measured = Measured::default();
    loop {
        let start = Instant::now();
        if start >= end {
            break;
        }
        stream.write_all(&request).await.expect("write");
        let status = read_response(&mut stream, &mut buffer).await;
        let elapsed = start.elapsed();
        measured.sent += 1;
        if status != 200 {
            measured.not_ok += 1;
        }
        if start >= measure_from {
            measured.latencies.push(elapsed.as_nanos() as u64);
        }
    }
    measured
}

/// Reads one HTTP/1.1 response with a `content-length` (hyper always sends one for a
/// full body) and returns its status.
async fn read_response(stream: &mut tokio::net::TcpStream, buffer: &mut Vec<u8>) -> u16 {
    let mut filled = 0;
    let (head, length) = loop {
        let n = stream.read(&mut buffer[filled..]).await.expect("read");
        assert!(n > 0, "the server closed the connection");
        filled += n;
        if let Some(end) = buffer[..filled].windows(4).position(|w| w == b"\r\n\r\n") {
            let head = end + 4;
            let text = std::str::from_utf8(&buffer[..end]).expect("ASCII head");
            let length = text
                .split("\r\n")
                .find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())?
                })
                .expect("content-length");
            break (head, length);
        }
        if filled == buffer.len() {
            buffer.resize(buffer.len() * 2, 0);
        }
    };
    if buffer.len() < head + length {
        buffer.resize(head + length, 0);
    }
    while filled < head + length {
        let n = stream.read(&mut buffer[filled..]).await.expect("read");
        assert!(n > 0, "the server closed the connection");
        filled += n;
    }
    std::str::from_utf8(&buffer[9..12])
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// One row of the table.
struct Row {
    path: &'static str,
    connections: usize,
    requests: usize,
    per_second: f64,
    p50: Duration,
    p99: Duration,
    max: Duration,
    sent: u64,
    not_ok: u64,
    /// Audit entries the server recorded during the row.
    audited: u64,
    /// The server's VmRSS after the row, KiB.
    rss: u64,
    server_cpu: f64,
    client_cpu: f64,
    /// CPU the rest of the machine used meanwhile (other processes, the kernel's own
    /// threads, hypervisor steal), in cores.
    other_cpu: f64,
}

fn run_row(
    runtime: &tokio::runtime::Runtime,
    server: &mut Server,
    path: &'static str,
    body: &str,
    connections: usize,
    measured: Duration,
) -> Row {
    let request: Arc<[u8]> = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
    .into();
    let server_pid = server.child.id().to_string();
    // Every row starts from the fixtures, as a trial does.
    assert_eq!(server.command("reset"), "reset");
    let address = server.address;
    let (results, server_cpu, client_cpu, other_cpu) = runtime.block_on(async {
        let measure_from = Instant::now() + WARM_UP;
        let end = measure_from + measured;
        let tasks: Vec<_> = (0..connections)
            .map(|_| tokio::spawn(connection(address, Arc::clone(&request), measure_from, end)))
            .collect();
        tokio::time::sleep_until(measure_from.into()).await;
        let (server_before, client_before) = (cpu_time(&server_pid), cpu_time("self"));
        let (busy_before, _) = machine_cpu();
        tokio::time::sleep_until(end.into()).await;
        let (server_after, client_after) = (cpu_time(&server_pid), cpu_time("self"));
        let (busy_after, _) = machine_cpu();
        let mut results = Vec::new();
        for task in tasks {
            results.push(task.await.expect("connection"));
        }
        let share = |before: Duration, after: Duration| {
            after.saturating_sub(before).as_secs_f64() / measured.as_secs_f64()
        };
        let (server, client) = (
            share(server_before, server_after),
            share(client_before, client_after),
        );
        let other = (share(busy_before, busy_after) - server - client).max(0.0);
        (results, server, client, other)
    });
    let audited = server.audited();
    let (rss, _) = memory(server.child.id());
    let mut latencies: Vec<u64> = results
        .iter()
        .flat_map(|m| m.latencies.iter().copied())
        .collect();
    latencies.sort_unstable();
    let quantile = |q: f64| {
        let index = ((q * latencies.len() as f64).ceil() as usize).clamp(1, latencies.len()) - 1;
        Duration::from_nanos(latencies.get(index).copied().unwrap_or(0))
    };
    Row {
        path,
        connections,
        requests: latencies.len(),
        per_second: latencies.len() as f64 / measured.as_secs_f64(),
        p50: quantile(0.50),
        p99: quantile(0.99),
        max: Duration::from_nanos(latencies.last().copied().unwrap_or(0)),
        sent: results.iter().map(|m| m.sent).sum(),
        not_ok: results.iter().map(|m| m.not_ok).sum(),
        audited,
        rss,
        server_cpu,
        client_cpu,
        other_cpu,
    }
}

fn milliseconds(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

fn mebibytes(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn over_http() {
    let measured = Duration::from_secs(
        std::env::var(SECONDS_ENV)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(5),
    );
    let mut server = Server::start();
    let pid = server.child.id();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!();
    println!(
        "HTTP/1.1 on {} (server: pid {pid}, a process of its own, serve::serve; client: one thread, {} keep-alive connection(s), no pipelining; {cores} cores shared; {} s warm-up + {} s measured per row):",
        server.address,
        CONCURRENCY.map(|c| c.to_string()).join(" or "),
        WARM_UP.as_secs(),
        measured.as_secs(),
    );
    let (rss_start, _) = memory(pid);
    // One thread for all connections: the cheapest client measured (see the module doc).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    println!(
        "  {:<25} {:>5} {:>9} {:>10} {:>10} {:>10} {:>10} {:>11} {:>11} {:>10} {:>11}",
        "route",
        "conns",
        "requests",
        "req/s",
        "p50",
        "p99",
        "max",
        "server CPU",
        "client CPU",
        "other CPU",
        "server RSS"
    );
    let mut rows = Vec::new();
    for (path, body) in ROUTES {
        for connections in CONCURRENCY {
            let row = run_row(&runtime, &mut server, path, body, connections, measured);
            println!(
                "  POST {:<20} {:>5} {:>9} {:>10.0} {:>10} {:>10} {:>10} {:>10.0}% {:>10.0}% {:>9.0}% {:>11}",
                row.path,
                row.connections,
                row.requests,
                row.per_second,
                milliseconds(row.p50),
                milliseconds(row.p99),
                milliseconds(row.max),
                row.server_cpu * 100.0,
                row.client_cpu * 100.0,
                row.other_cpu * 100.0,
                mebibytes(row.rss),
            );
            rows.push(row);
        }
    }
    let (_, hwm_end) = memory(pid);
    let sent: u64 = rows.iter().map(|r| r.sent).sum();
    let not_ok: u64 = rows.iter().map(|r| r.not_ok).sum();
    let audited: u64 = rows.iter().map(|r| r.audited).sum();
    // The audit keeps the first `limits.audit_entries` calls of each row (a reset starts it
    // again); past them calls are answered and not recorded.
    let cap = WorldOptions::default().audit_entries as u64;
    let audit_matches = rows.iter().all(|r| r.audited == r.sent.min(cap));
    server.stop();
    println!(
        "  (CPU: % of one core during the measured seconds, {cores} cores in all; other = the rest of the machine, hypervisor steal included; requests: those started in the measured seconds; each row starts from a reset world)"
    );
    println!(
        "target at {} connections: >= {:.0} requests/s and p99 < {} ms",
        CONCURRENCY[1],
        TARGET_REQUESTS_PER_SECOND,
        TARGET_P99.as_millis()
    );
    for row in rows.iter().filter(|r| r.connections == CONCURRENCY[1]) {
        let met = row.per_second >= TARGET_REQUESTS_PER_SECOND && row.p99 < TARGET_P99;
        println!(
            "  POST {:<20} {:>7.0} requests/s, p99 {}: {}",
            row.path,
            row.per_second,
            milliseconds(row.p99),
            if met { "met" } else { "NOT met" }
        );
    }
    let first = &rows[0];
    println!(
        "server RSS: {} at start (world loaded), {} at end, VmHWM {}; the first row added {:.1} KiB per request (the audit keeps the first limits.audit_entries calls with their answers; a reset frees it for reuse, so later rows show the high-water mark)",
        mebibytes(rss_start),
        mebibytes(rows.last().map_or(0, |r| r.rss)),
        mebibytes(hwm_end),
        first.rss.saturating_sub(rss_start) as f64 / first.sent.max(1) as f64
    );
    println!(
        "requests sent (warm-ups included): {sent}, answered other than 200: {not_ok}; audit entries recorded: {audited} ({})",
        if audit_matches {
            "one per request in every row, up to limits.audit_entries"
        } else {
            "NOT one per request up to limits.audit_entries"
        }
    );
}

fn main() {
    if std::env::var_os(SERVER_ENV).is_some() {
        server();
        return;
    }
    // Parsed once, as a run does: building the catalogue is not part of a request.
    let catalogue = Catalogue::builtin();
    in_memory(&catalogue);
    over_http();
}
