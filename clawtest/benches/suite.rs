//! clawtest's own cost per trial over a large replayed suite: `cargo bench -p clawtest --bench
//! suite` (N = 1,040 and 10,400 tasks), or `-- 1040` for one N. Targets: 1,040 × 3 trials in
//! ≤ 15 s, 10,400 × 3 in ≤ 60 s with ≤ 200 MB RSS, ≤ 4 ms of CPU a trial.
//!
//! The suite is the demo's three fault-free tasks (examples/demo: gmail-reply, inbox-to-todo,
//! todo-triage) copied N/3 times each under new ids (`gmail-reply-00001`, ...), each copy with
//! its cassette under the same new id, written to a temporary folder with faults off, replay
//! mode and 3 trials. The bench first builds the release `cargo-clawtest` (what a user runs) and
//! the reference agent as a small static agent (`+crt-static`, not position-independent, fat
//! LTO, `panic = "abort"`: the build a `FROM scratch` image takes, whose start costs a third
//! less than the dynamic build's: no loader, no relocations; against musl when its target is
//! installed, else glibc, and the first line says which), then runs `cargo-clawtest
//! clawtest run` in that folder (process backend, the default jobs: two a core; `--jobs N`
//! after the sizes sets them) and takes the run's figures from `wait4`: wall time, CPU (user +
//! system, the agents' included, since clawtest waits for them), CPU per trial and clawtest's
//! max RSS; and clawtest's own CPU apart from its children's, read from its `/proc/PID/stat`
//! once it has ended but before it is reaped (`waitid` with `WNOWAIT`). The rest of the
//! machine's CPU during the run and the load average are printed beside them, so a figure
//! from a busy machine is read as such. It asserts nothing but that the run passed.
//!
//! `CLAWTEST_BENCH_BINARIES=FOLDER` runs the `cargo-clawtest` and `reference-agent` in FOLDER
//! instead of building them (to compare two builds: copy one's aside, measure both).
//!
//! Nothing else should run beside it: on 2 cores a neighbour's build changes the figures by
//! half; the machine's other CPU during the run is printed for that reason.

// A benchmark is a binary that prints its figures: the library's no-printing lints are not for it.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{target_dir, workspace_root};

mod common;

/// The demo's fault-free tasks (todo-flaky is about faults; it has a seed of its own).
const TASKS: [&str; 3] = ["gmail-reply", "inbox-to-todo", "todo-triage"];
const TRIALS: usize = 3;
const DEFAULT_SIZES: [usize; 2] = [1_040, 10_400];

/// Builds what the bench runs: the release `cargo-clawtest`, as a user would install it, and
/// the static reference agent; returns both paths.
fn build() -> (PathBuf, PathBuf) {
    let clawtest = common::release_clawtest();
    let target = agent_target();
    // `--target` keeps these flags off the host build's artifacts (and off build scripts).
    let status = Command::new(common::cargo())
        .current_dir(workspace_root())
        .args(["build", "--quiet", "--release", "-p", "reference-agent"])
        .args(["--target", &target])
        .env(
            "RUSTFLAGS",
            "-C target-feature=+crt-static -C relocation-model=static",
        )
        .env("CARGO_PROFILE_RELEASE_LTO", "fat")
        .env("CARGO_PROFILE_RELEASE_PANIC", "abort")
        .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "1")
        .status()
        .expect("cargo runs");
    assert!(status.success(), "the static agent's build failed");
    let agent = target_dir()
        .join(target)
        .join("release")
        .join("reference-agent");
    (clawtest, agent)
}

/// The target the agent is built for: musl where its standard library is installed (`rustup
/// target add x86_64-unknown-linux-musl`), else glibc. Both give a static agent; glibc's
/// start-up asks the processor its cache sizes with some sixty `cpuid` instructions, each a
/// trap to the hypervisor on a virtual machine (a third of a millisecond a trial here), and
/// musl's asks nothing.
fn agent_target() -> String {
    let arch = std::env::consts::ARCH;
    let musl = format!("{arch}-unknown-linux-musl");
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let installed = Command::new(rustc)
        .args(["--print", "target-libdir", "--target", &musl])
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| PathBuf::from(String::from_utf8_lossy(&output.stdout).trim()))
        .is_some_and(|folder| folder.is_dir());
    if installed {
        musl
    } else {
        format!("{arch}-unknown-linux-gnu")
    }
}

/// Writes the N-task suite into `folder`.
fn write_suite(folder: &Path, tasks: usize, agent: &Path) {
    let demo = workspace_root().join("examples/demo");
    std::fs::create_dir_all(folder.join("tasks")).expect("tasks folder");
    std::fs::create_dir_all(folder.join("cassettes")).expect("cassettes folder");
    std::fs::write(
        folder.join("clawtest.toml"),
        format!(
            "tasks = [\"tasks/*.yaml\"]\n\
             [harness]\ncommand = [{agent:?}]\n\
             [run]\ntrials = {TRIALS}\n\
             [faults]\nrate = 0\n\
             [llm]\nmode = \"replay\"\ncassettes = \"cassettes\"\n",
            agent = agent.display().to_string(),
        ),
    )
    .expect("clawtest.toml");
    for (index, name) in TASKS.iter().cycle().take(tasks).enumerate() {
        let id = format!("{name}-{index:05}");
        for kind in ["tasks", "cassettes"] {
            let text = std::fs::read_to_string(demo.join(kind).join(format!("{name}.yaml")))
                .expect("the demo's file");
            // Only the id line changes: the first `task_id:` at the start of a line.
            let renamed = text.replacen(
                &format!("\ntask_id: {name}\n"),
                &format!("\ntask_id: {id}\n"),
                1,
            );
            let renamed = if renamed == text {
                text.replacen(
                    &format!("task_id: {name}\n"),
                    &format!("task_id: {id}\n"),
                    1,
                )
            } else {
                renamed
            };
            assert_ne!(renamed, text, "{kind}/{name}.yaml names its task id");
            std::fs::write(folder.join(kind).join(format!("{id}.yaml")), renamed).expect("a copy");
        }
    }
}

/// A finished child's figures, from `wait4` (itself and its children), and its own CPU
/// apart from its children's, from its `/proc/PID/stat` while it is a zombie.
struct Usage {
    success: bool,
    user: Duration,
    system: Duration,
    max_rss_kib: i64,
    /// clawtest's own user and system time (its children's not included).
    own: Option<(Duration, Duration)>,
}

fn duration(time: libc::timeval) -> Duration {
    Duration::from_secs(u64::try_from(time.tv_sec).unwrap_or_default())
        + Duration::from_micros(u64::try_from(time.tv_usec).unwrap_or_default())
}

/// A zombie's own user and system time (fields 14 and 15 of its `stat`, in clock ticks): its
/// threads' together, its children's apart (fields 16 and 17).
fn own_times(pid: libc::pid_t) -> Option<(Duration, Duration)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, fields) = stat.rsplit_once(')')?;
    let fields: Vec<u64> = fields
        .split_whitespace()
        .skip(11)
        .take(2)
        .map(|field| field.parse().ok())
        .collect::<Option<_>>()?;
    // SAFETY: sysconf reads a constant.
    let ticks = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).ok()?;
    let time = |value: u64| Duration::from_micros(value * 1_000_000 / ticks);
    Some((time(fields[0]), time(fields[1])))
}

fn wait_for(child: &std::process::Child) -> Usage {
    let pid = libc::pid_t::try_from(child.id()).expect("a pid");
    // Waited for without reaping first: the zombie's `stat` still holds its own times.
    // SAFETY: waitid writes into the siginfo given, which lives across the call.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let waited = unsafe {
        libc::waitid(
            libc::P_PID,
            libc::id_t::try_from(pid).expect("a pid"),
            &mut info,
            libc::WEXITED | libc::WNOWAIT,
        )
    };
    assert_eq!(waited, 0, "waitid: {}", std::io::Error::last_os_error());
    let own = own_times(pid);
    let mut status = 0;
    // SAFETY: wait4 writes into the two values given, which live across the call.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4: {}", std::io::Error::last_os_error());
    Usage {
        success: libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        user: duration(usage.ru_utime),
        system: duration(usage.ru_stime),
        max_rss_kib: usage.ru_maxrss,
        own,
    }
}

/// The whole machine's busy CPU time so far, from `/proc/stat` (user, nice, system, irq,
/// softirq, steal).
fn machine_busy() -> Duration {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let ticks: u64 = stat
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .skip(1)
        .enumerate()
        .filter(|(index, _)| ![3, 4].contains(index))
        .take(6)
        .filter_map(|(_, value)| value.parse::<u64>().ok())
        .sum();
    // USER_HZ is 100 on every Linux this runs on.
    Duration::from_millis(ticks * 10)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The cgroup v2 folder this process is in (the run's trial groups are made there), from
/// `/proc/self/cgroup` and the cgroup2 mount of `/proc/self/mountinfo`.
fn own_cgroup() -> Option<PathBuf> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let own = cgroups.lines().find_map(|line| line.strip_prefix("0::"))?;
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mount = mounts.lines().find_map(|line| {
        let (fields, filesystem) = line.split_once(" - ")?;
        (filesystem.split_whitespace().next() == Some("cgroup2"))
            .then(|| fields.split_whitespace().nth(4))
            .flatten()
    })?;
    Some(Path::new(mount).join(own.trim_start_matches('/')))
}

/// Counts, until `done`, the trial cgroups (`clawtest-<pid>-<n>`) the run of `pid` makes: none
/// seen means its trials were held by the fallback (a mark and `/proc` scans).
fn watch_groups(
    pid: u32,
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let Some(base) = own_cgroup() else {
            return 0;
        };
        let prefix = format!("clawtest-{pid}-");
        let mut seen = std::collections::BTreeSet::new();
        while !done.load(std::sync::atomic::Ordering::Relaxed) {
            for entry in std::fs::read_dir(&base).into_iter().flatten().flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with(&prefix) {
                    seen.insert(name);
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        seen.len()
    })
}

// The child is waited for by `wait_for` (wait4, for its figures), which clippy cannot see.
#[allow(clippy::zombie_processes)]
fn measure(tasks: usize, jobs: Option<&str>, clawtest: &Path, agent: &Path) {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let suite = folder.path().join("suite");
    write_suite(&suite, tasks, agent);
    let log = folder.path().join("run.log");
    let load_before = load_average();
    let busy_before = machine_busy();
    let started = Instant::now();
    let child = Command::new(clawtest)
        .args(["clawtest", "run", "--backend", "process"])
        .args(jobs.map(|jobs| ["--jobs", jobs]).into_iter().flatten())
        .current_dir(&suite)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).expect("run.log"))
        .stderr(Stdio::inherit())
        .spawn()
        .expect("cargo-clawtest starts");
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let groups = watch_groups(child.id(), std::sync::Arc::clone(&done));
    let usage = wait_for(&child);
    let wall = started.elapsed();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let groups = groups.join().unwrap_or_default();
    let busy = machine_busy().saturating_sub(busy_before);
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let tail: Vec<&str> = text.lines().rev().take(3).collect();
    let cpu = usage.user + usage.system;
    let trials = tasks * TRIALS;
    let per_trial = |time: Duration| time.as_secs_f64() * 1000.0 / trials as f64;
    println!(
        "{tasks} tasks × {TRIALS} trials: wall {:.1} s, CPU {:.1} s ({:.1} user + {:.1} system), \
         {:.2} ms CPU a trial, max RSS {} MB; other CPU on the machine {:.1} s; \
         load {load_before} before, {} after",
        wall.as_secs_f64(),
        cpu.as_secs_f64(),
        usage.user.as_secs_f64(),
        usage.system.as_secs_f64(),
        per_trial(cpu),
        usage.max_rss_kib / 1000,
        busy.saturating_sub(cpu).as_secs_f64(),
        load_average(),
    );
    println!(
        "  trial cgroups seen (every 100 ms): {groups}{}",
        if groups == 0 {
            " — the fallback held the trials (a mark and /proc scans)"
        } else {
            " — the cgroup path held the trials"
        }
    );
    if let Some((user, system)) = usage.own {
        let agents = cpu.saturating_sub(user + system);
        println!(
            "  clawtest alone: {:.1} s ({:.1} user + {:.1} system), {:.2} ms a trial; \
             its children (agents, checks): {:.1} s, {:.2} ms a trial",
            (user + system).as_secs_f64(),
            user.as_secs_f64(),
            system.as_secs_f64(),
            per_trial(user + system),
            agents.as_secs_f64(),
            per_trial(agents),
        );
    }
    if !usage.success {
        eprintln!("the run did not pass; its last lines:");
        for line in tail.iter().rev() {
            eprintln!("  {line}");
        }
        std::process::exit(1);
    }
}

fn main() {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let jobs = arguments
        .iter()
        .position(|argument| argument == "--jobs")
        .and_then(|at| arguments.get(at + 1))
        .map(String::as_str);
    let sizes: Vec<usize> = arguments
        .iter()
        .filter(|argument| Some(argument.as_str()) != jobs)
        .filter_map(|argument| argument.replace([',', '_'], "").parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        DEFAULT_SIZES.to_vec()
    } else {
        sizes
    };
    let (clawtest, agent) = match std::env::var_os("CLAWTEST_BENCH_BINARIES") {
        Some(folder) => {
            let folder = PathBuf::from(folder);
            (
                folder.join("cargo-clawtest"),
                folder.join("reference-agent"),
            )
        }
        None => build(),
    };
    let cores = std::thread::available_parallelism().map_or(1, |cores| cores.get());
    println!(
        "{cores} cores, {}; process backend, replay, release build of {}, agent {}",
        match jobs {
            Some(jobs) => format!("{jobs} jobs"),
            None => format!(
                "the default jobs ({})",
                clawtest::run::settings::default_jobs()
            ),
        },
        clawtest.display(),
        agent.display(),
    );
    for tasks in sizes {
        measure(tasks, jobs, &clawtest, &agent);
    }
}
