//! clawtest-shim: PID 1 of a docker-sandbox container (DESIGN.md §5). The container has no
//! network, so the shim gives the harness the sandbox contract's loopback ports by forwarding
//! each TCP connection on them to a Unix socket in the bind-mounted `/clawtest` folder, where
//! the host serves the trial's services and model gateway. It starts the harness, forwards
//! SIGTERM/SIGINT to it, kills it at the time limit, and reports how it ended on the control
//! socket. It then stays alive (so checks can be run in the container) until the host closes
//! the control connection, which also happens when the host process dies: if the harness is
//! still running then, it is killed with its group, the container ends on its own and the
//! engine removes it.
//!
//! std only, built with `-C target-feature=+crt-static`, so it runs in any Linux image.
//!
//! The harness's stdout and stderr are connected to Unix sockets the host listens on
//! (`--stdout`, `--stderr`, in the read-only shared folder): the host reads them as they are
//! written, capped, and no file the harness could replace by a link is involved.
//!
//! Usage: `clawtest-shim [--forward PORT=SOCKET]… [--control SOCKET] [--timeout SECONDS]
//! [--stdout SOCKET] [--stderr SOCKET] -- COMMAND [ARGUMENT…]`, or `clawtest-shim mcp-stdio [URL]`
//! (see [`mcp_stdio`]), or `clawtest-shim none`: a harness that exits 0 at once, for the
//! container that only runs a task's commands (a feasibility proof, `run --oracle`'s checks),
//! or `clawtest-shim [--forward PORT=SOCKET]… --worker SOCKET [--host-empties PATH]…`: a
//! worker container that runs one trial after another, each asked for on SOCKET (see
//! [`worker`]).

mod mcp_stdio;
mod reset;
mod wait;
mod worker;

use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::BorrowedFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

use wait::Waited;

const SIGINT: i32 = 2;
const SIGKILL: i32 = 9;
const SIGTERM: i32 = 15;

unsafe extern "C" {
    fn signal(signum: i32, handler: usize) -> usize;
    fn kill(pid: i32, signum: i32) -> i32;
    fn _exit(status: i32) -> !;
}

/// The harness's process group, once started (0 before).
static HARNESS_GROUP: AtomicI32 = AtomicI32::new(0);
/// Set when the container was asked to stop: the shim leaves as soon as the harness has.
static STOPPING: AtomicBool = AtomicBool::new(false);
/// Set once the harness has ended: a stop request then ends the shim at once.
static HARNESS_DONE: AtomicBool = AtomicBool::new(false);
/// Set in a worker container: what the shim says is kept for the trial's report ([`SAID`]).
static IN_WORKER: AtomicBool = AtomicBool::new(false);
/// What the shim said since a worker's last report (a one-shot container's log holds it).
static SAID: Mutex<String> = Mutex::new(String::new());
/// The most a worker keeps of what it said for one report.
const SAID_CAP: usize = 64 * 1024;

/// Says `message` on the shim's stderr (the container's log) and, in a worker, keeps it for
/// the trial's report.
fn say(message: &str) {
    eprintln!("clawtest-shim: {message}");
    if IN_WORKER.load(Ordering::SeqCst)
        && let Ok(mut said) = SAID.lock()
        && said.len() < SAID_CAP
    {
        said.push_str("clawtest-shim: ");
        said.push_str(message);
        said.push('\n');
    }
}

extern "C" fn on_signal(signum: i32) {
    STOPPING.store(true, Ordering::SeqCst);
    if HARNESS_DONE.load(Ordering::SeqCst) {
        // SAFETY: _exit is async-signal-safe.
        unsafe { _exit(0) }
    }
    let group = HARNESS_GROUP.load(Ordering::SeqCst);
    if group > 0 {
        // SAFETY: kill is async-signal-safe; a stale group only yields ESRCH.
        unsafe {
            kill(-group, signum);
        }
    }
}

struct Options {
    forwards: Vec<(u16, String)>,
    control: Option<String>,
    /// A worker's socket (`--worker`): trials are asked for there, one after another.
    worker: Option<String>,
    /// Folders the host empties between a worker's trials (`--host-empties`), which the
    /// worker leaves alone.
    host_empties: Vec<String>,
    harness: Harness,
}

/// One harness to run: its command, where its output goes, its time limit and the variables
/// it gets besides the shim's own.
#[derive(Debug, Default, PartialEq)]
struct Harness {
    command: Vec<String>,
    timeout: Option<Duration>,
    stdout: Option<String>,
    stderr: Option<String>,
    env: Vec<(String, String)>,
}

fn parse(arguments: Vec<String>) -> Result<Options, String> {
    let mut options = Options {
        forwards: Vec::new(),
        control: None,
        worker: None,
        host_empties: Vec::new(),
        harness: Harness::default(),
    };
    let mut arguments = arguments.into_iter();
    while let Some(argument) = arguments.next() {
        let mut value = |name: &str| {
            arguments
                .next()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match argument.as_str() {
            "--forward" => {
                let text = value("--forward")?;
                let (port, socket) = text
                    .split_once('=')
                    .ok_or_else(|| format!("--forward {text}: expected PORT=SOCKET"))?;
                let port = port
                    .parse()
                    .map_err(|_| format!("--forward {text}: `{port}` is not a port"))?;
                options.forwards.push((port, socket.to_string()));
            }
            "--control" => options.control = Some(value("--control")?),
            "--worker" => options.worker = Some(value("--worker")?),
            "--host-empties" => options.host_empties.push(value("--host-empties")?),
            "--stdout" => options.harness.stdout = Some(value("--stdout")?),
            "--stderr" => options.harness.stderr = Some(value("--stderr")?),
            "--timeout" => options.harness.timeout = Some(seconds(&value("--timeout")?)?),
            "--" => {
                options.harness.command = arguments.collect();
                break;
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if options.harness.command.is_empty() && options.worker.is_none() {
        return Err("no harness command after `--`".into());
    }
    Ok(options)
}

/// A time limit given in seconds (`--timeout`, a worker's `timeout` line).
fn seconds(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text
        .parse()
        .map_err(|_| format!("--timeout {text}: not a number of seconds"))?;
    Duration::try_from_secs_f64(seconds).map_err(|_| format!("--timeout {text}: not a duration"))
}

fn main() {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    if arguments.first().map(String::as_str) == Some("none") {
        std::process::exit(0);
    }
    if arguments.first().map(String::as_str) == Some("mcp-stdio") {
        let url = arguments
            .get(1)
            .map_or(mcp_stdio::DEFAULT_URL, String::as_str);
        std::process::exit(mcp_stdio::run(url));
    }
    let options = match parse(arguments) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("clawtest-shim: {message}");
            std::process::exit(2);
        }
    };
    // SAFETY: installs a handler that only touches atomics and calls kill.
    unsafe {
        signal(SIGTERM, on_signal as *const () as usize);
        signal(SIGINT, on_signal as *const () as usize);
    }
    for (port, socket) in &options.forwards {
        match TcpListener::bind(("127.0.0.1", *port)) {
            Ok(listener) => {
                let socket = socket.clone();
                std::thread::spawn(move || forward_all(listener, socket));
            }
            Err(error) => {
                eprintln!("clawtest-shim: cannot listen on 127.0.0.1:{port}: {error}");
                std::process::exit(2);
            }
        }
    }
    if let Some(socket) = &options.worker {
        worker::run(socket, &options.host_empties);
    }
    // Connected before the harness starts, so the host knows the container came up.
    let control = options.control.as_ref().map(|path| {
        UnixStream::connect(path).unwrap_or_else(|error| {
            eprintln!("clawtest-shim: cannot reach the control socket {path}: {error}");
            std::process::exit(2);
        })
    });

    // The host hanging up (or dying) ends the shim, and the harness if it still runs.
    if let Some(control) = &control
        && let Ok(watched) = control.try_clone()
    {
        std::thread::spawn(move || {
            let mut reader = BufReader::new(watched);
            let mut line = String::new();
            while matches!(reader.read_line(&mut line), Ok(read) if read > 0) {
                line.clear();
            }
            kill_group(HARNESS_GROUP.load(Ordering::SeqCst));
            std::process::exit(0);
        });
    }
    // The control connection's watcher thread ends the shim on a hang-up: the wait watches
    // no connection and never says the host hung up.
    let Ok(report) = run_harness(&options.harness, None) else {
        std::process::exit(0);
    };
    HARNESS_DONE.store(true, Ordering::SeqCst);
    let Some(mut control) = control else {
        std::process::exit(match report {
            Report::Exited(code) => code,
            _ => 124,
        });
    };
    let _ = control.write_all(report.line().as_bytes());
    let _ = control.flush();
    if STOPPING.load(Ordering::SeqCst) {
        std::process::exit(0);
    }
    // Stay up for checks until the host hangs up (or dies): the watcher then exits.
    loop {
        std::thread::park();
    }
}

enum Report {
    Exited(i32),
    Signalled(i32),
    TimedOut,
    NotStarted(String),
}

impl Report {
    fn line(&self) -> String {
        match self {
            Report::Exited(code) => format!("exit {code}\n"),
            Report::Signalled(signum) => format!("signal {signum}\n"),
            Report::TimedOut => "timeout\n".into(),
            Report::NotStarted(message) => format!("error {message}\n"),
        }
    }
}

/// The harness's stream: a connection to the host's socket when asked for, else the
/// shim's own.
fn output(path: Option<&String>) -> Result<Stdio, String> {
    match path {
        None => Ok(Stdio::inherit()),
        Some(path) => UnixStream::connect(path)
            .map(|stream| Stdio::from(std::os::fd::OwnedFd::from(stream)))
            .map_err(|error| format!("cannot connect {path}: {error}")),
    }
}

/// The host hung up on the connection a worker watches while its harness runs.
#[derive(Debug)]
struct HungUp;

/// Runs the harness to its end or its time limit; `watched`, a worker's connection to the
/// host, ends the wait when the host hangs up on it (the harness still runs then).
fn run_harness(options: &Harness, watched: Option<BorrowedFd<'_>>) -> Result<Report, HungUp> {
    let (stdout, stderr) = match (
        output(options.stdout.as_ref()),
        output(options.stderr.as_ref()),
    ) {
        (Ok(stdout), Ok(stderr)) => (stdout, stderr),
        (Err(message), _) | (_, Err(message)) => return Ok(Report::NotStarted(message)),
    };
    let Some(program) = options.command.first() else {
        return Ok(Report::NotStarted("no harness command".into()));
    };
    // A worker's harness: the shim's own variables (the image's) with the trial's over them.
    let mut child = match Command::new(program)
        .args(&options.command[1..])
        .envs(options.env.iter().map(|(name, value)| (name, value)))
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .process_group(0)
        .spawn()
    {
        Ok(child) => child,
        Err(error) => {
            let message = format!("cannot start `{program}`: {error}");
            say(&message);
            return Ok(Report::NotStarted(message));
        }
    };
    let group = i32::try_from(child.id()).unwrap_or(0);
    HARNESS_GROUP.store(group, Ordering::SeqCst);
    if STOPPING.load(Ordering::SeqCst) {
        on_signal(SIGTERM);
    }
    let status = match wait::wait(&mut child, options.timeout, watched, || kill_group(group)) {
        Waited::Ended(status) => status,
        Waited::TimedOut => return Ok(Report::TimedOut),
        Waited::HungUp => return Err(HungUp),
    };
    // Whatever the harness left running in its group ends with it.
    kill_group(group);
    Ok(match status {
        Ok(status) => match (status.code(), status.signal()) {
            (Some(code), _) => Report::Exited(code),
            (None, Some(signum)) => Report::Signalled(signum),
            (None, None) => Report::Exited(-1),
        },
        Err(error) => Report::NotStarted(format!("waiting for the harness: {error}")),
    })
}

fn kill_group(group: i32) {
    if group > 0 {
        // SAFETY: only sends a signal.
        unsafe {
            kill(-group, SIGKILL);
        }
    }
}

fn forward_all(listener: TcpListener, socket: String) {
    for incoming in listener.incoming() {
        let Ok(client) = incoming else { continue };
        match UnixStream::connect(&socket) {
            Ok(upstream) => {
                std::thread::spawn(move || splice(client, upstream));
            }
            Err(error) => {
                say(&format!("cannot reach {socket}: {error}"));
                let _ = client.shutdown(Shutdown::Both);
            }
        }
    }
}

/// Copies both directions until each side has finished writing.
fn splice(client: TcpStream, upstream: UnixStream) {
    let (Ok(mut client_reader), Ok(mut upstream_writer)) =
        (client.try_clone(), upstream.try_clone())
    else {
        return;
    };
    let outbound = std::thread::spawn(move || {
        let _ = std::io::copy(&mut client_reader, &mut upstream_writer);
        let _ = upstream_writer.shutdown(Shutdown::Write);
    });
    let mut upstream_reader = upstream;
    let mut client_writer = client;
    let _ = std::io::copy(&mut upstream_reader, &mut client_writer);
    let _ = client_writer.shutdown(Shutdown::Write);
    let _ = outbound.join();
}
