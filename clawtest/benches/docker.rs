//! Docker sandbox overhead: how long one trial takes with a trivial harness (a static probe
//! that exits 0) from its folder made to its folder removed or given back, and the trial
//! throughput of 2 parallel jobs against 1, in both modes: a container of its own per trial
//! (`[docker] reuse = false`: create, start, harness exits, stop, remove) and worker
//! containers kept for the run (a trial is the shim's child; the container is reset between
//! trials), and then of the default jobs (two a core) against 1. The targets: a
//! median ≤ 0.15 s a trial and ≥ 1.8× with two jobs. With workers it also prints the CPU a
//! trial costs (this process's, and the worker containers' from the engine's statistics),
//! which other work on the machine does not move as it moves wall times. Last, the docker
//! demo as a user runs it (the issue's own measure: its 12 trials with 1 job and with 2), its
//! time split by the engine's events into the set-up, the trials and the end. Run with `cargo
//! bench -p clawtest --bench docker` (`-- worker`, `-- one-shot` or `-- demo` for one part);
//! it builds its FROM scratch image (and for the demo the release `cargo-clawtest`) locally,
//! prints its figures with the machine's load and asserts nothing but that the demo passes.
//! Without a Docker engine it says so and stops.

// A benchmark is a binary that prints its figures: the library's no-printing lints are not for it.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use clawtest::sandbox::docker::{self, DockerSandbox, ResourceLimits, image::ContextFile, shim};
use clawtest::sandbox::{Endpoints, Launch, Sandbox};

mod common;

const IMAGE: &str = "clawtest-bench-harness:latest";
const SEQUENTIAL: usize = 12;
const THROUGHPUT: usize = 12;
/// How many times the throughput of one job and of two is measured, in turn.
const ROUNDS: usize = 3;

fn launch(trial: u32, sockets: &std::path::Path) -> Launch {
    Launch {
        task_id: "bench".into(),
        trial,
        command: vec!["/clawtest-probe".into(), "exit".into(), "0".into()],
        prompt: "bench".into(),
        tools: "[]".into(),
        eval_tools: String::new(),
        skill: String::new(),
        mcp_config: "{}".into(),
        setup: Default::default(),
        files: Vec::new(),
        // The trial's folder, removed with the socket folder.
        folder: sockets.join("trial"),
        endpoints: Endpoints::Sockets {
            folder: sockets.to_path_buf(),
        },
        passthrough: Vec::new(),
        timeout: Duration::from_secs(60),
        max_turns: 1,
        limits: Default::default(),
        checks: Vec::new(),
    }
}

/// One trial of the probe: its folder made (lent by a worker when `reuse`), the trial run, the
/// folder removed (or given back, emptied).
async fn one_trial(sandbox: &DockerSandbox, trial: u32, reuse: bool) -> Duration {
    let interrupt = clawtest::interrupt::CancellationToken::new();
    let started = Instant::now();
    let finished = if reuse {
        let folder = sandbox.trial_folder(0).expect("a worker's folder");
        let mut launch = launch(trial, folder.sockets().expect("a worker's sockets"));
        launch.folder = folder.path().to_path_buf();
        let finished = sandbox.run(launch, interrupt).await;
        drop(folder);
        finished
    } else {
        let sockets = tempfile::tempdir().expect("socket folder");
        sandbox.run(launch(trial, sockets.path()), interrupt).await
    };
    let finished = finished.expect("the trial runs");
    assert_eq!(finished.exit.code, Some(0), "the probe exits 0");
    started.elapsed()
}

/// The median, least and most of `durations`, in seconds.
fn spread(mut durations: Vec<Duration>) -> (f64, f64, f64) {
    durations.sort();
    (
        durations[durations.len() / 2].as_secs_f64(),
        durations[0].as_secs_f64(),
        durations[durations.len() - 1].as_secs_f64(),
    )
}

/// The load averages (1, 5, 15 minutes), as `/proc/loadavg` says.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

fn measure(runtime: &tokio::runtime::Runtime, sandbox: &Arc<DockerSandbox>, reuse: bool) {
    let mode = if reuse {
        "worker containers ([docker] reuse = true)"
    } else {
        "a container per trial ([docker] reuse = false)"
    };
    println!("{mode}, load {} at the start:", load());
    // Warm-up: the first container pays for caches the rest do not (with reuse: the worker
    // container is made here).
    let first = runtime.block_on(one_trial(sandbox, 0, reuse));
    let durations: Vec<Duration> = (1..=SEQUENTIAL as u32)
        .map(|trial| runtime.block_on(one_trial(sandbox, trial, reuse)))
        .collect();
    let (median, least, most) = spread(durations);
    println!(
        "  per trial, {SEQUENTIAL} trials one after another: median {median:.3} s, min {least:.3} s, max {most:.3} s (the first, not counted: {:.3} s)",
        first.as_secs_f64()
    );
    // Two at once first: with reuse, the second worker container is made here, once a run.
    runtime.block_on(futures_util::future::join_all(
        (0..2).map(|job| one_trial(sandbox, 50 + job, reuse)),
    ));
    // A trial in a worker takes milliseconds: more of them, for a measure longer than noise.
    let throughput = if reuse { 50 * THROUGHPUT } else { THROUGHPUT };
    // Each job a task of its own, as the executor runs trials: jobs run on the runtime's
    // threads at once, not polled in turn on one.
    let rate = |jobs: usize| {
        let started = Instant::now();
        runtime.block_on(async {
            let running: Vec<_> = (0..jobs)
                .map(|job| {
                    let sandbox = Arc::clone(sandbox);
                    tokio::spawn(async move {
                        for round in 0..throughput / jobs {
                            one_trial(&sandbox, (100 + round * jobs + job) as u32, reuse).await;
                        }
                    })
                })
                .collect();
            for job in running {
                job.await.expect("a job's trials");
            }
        });
        throughput as f64 / started.elapsed().as_secs_f64()
    };
    // One job and two in turn, ROUNDS times: the machine's speed drifts from minute to minute,
    // and one pair of figures moves the ratio by a tenth.
    let mut ratios = Vec::with_capacity(ROUNDS);
    let mut singles = Vec::with_capacity(ROUNDS);
    // CPU seconds over every round, [this process, the containers], for 1 job and for 2.
    let mut spent = [[0.0; 2]; 2];
    // The machine's jiffies over every round, [busy, all], for 1 job and for 2.
    let mut machine = [[0; 2]; 2];
    for round in 1..=ROUNDS {
        let mut measured = [0.0; 2];
        for jobs in [1, 2] {
            let before = reuse.then(|| cpu(runtime, sandbox));
            let jiffies = machine_jiffies();
            measured[jobs - 1] = rate(jobs);
            let jiffies_after = machine_jiffies();
            for at in 0..2 {
                machine[jobs - 1][at] += jiffies_after[at] - jiffies[at];
            }
            if let Some(before) = before {
                let after = cpu(runtime, sandbox);
                for at in 0..2 {
                    spent[jobs - 1][at] += after[at] - before[at];
                }
            }
        }
        let [single, double] = measured;
        println!(
            "  round {round}, {throughput} trials: 1 job {single:.2} trials/s, 2 jobs {double:.2} trials/s = {:.2}× (load {} at the end)",
            double / single,
            load()
        );
        ratios.push(double / single);
        singles.push(single);
    }
    let median = |mut values: Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    let single = median(singles);
    println!(
        "  2 jobs against 1, the median of {ROUNDS} rounds: {:.2}×",
        median(ratios)
    );
    print_ceiling(machine);
    // A run's default is two jobs a core: a trial in a worker is a chain of hand-overs
    // (host, shim, harness, shim, host), each waking a thread, and with one job a core
    // both chains wait at once often enough to leave a core idle.
    let default_jobs = clawtest::run::settings::default_jobs();
    if default_jobs > 2 {
        runtime.block_on(futures_util::future::join_all(
            (0..default_jobs).map(|job| one_trial(sandbox, 60 + job as u32, reuse)),
        ));
        let default = rate(default_jobs);
        println!(
            "  the default {default_jobs} jobs (two a core): {default:.2} trials/s = {:.2}× one job's median (load {})",
            default / single,
            load()
        );
    }
    if reuse {
        for (jobs, [own, containers]) in [1, 2].into_iter().zip(spent) {
            let [own, containers] =
                [own, containers].map(|seconds| seconds / (ROUNDS * throughput) as f64 * 1e3);
            println!(
                "  CPU a trial ({jobs} job(s), every round): {:.2} ms = this process {own:.2} ms + the worker containers {containers:.2} ms",
                own + containers
            );
        }
    }
    runtime.block_on(sandbox.settle());
}

/// How busy the machine's cores were with 1 job and with 2 (`machine`: busy and all jiffies
/// over every round), and what that leaves two jobs: one job already keeping more than one
/// core busy (its hand-overs overlap: the host's threads, the shim, the harness, the engine's
/// storage driver), two jobs on two cores can reach at most the cores over one job's busy
/// cores, scaled by how much more CPU a trial costs with two.
fn print_ceiling(machine: [[u64; 2]; 2]) {
    let cores = std::thread::available_parallelism().map_or(1, usize::from) as f64;
    let busy = machine.map(|[busy, all]| busy as f64 / all.max(1) as f64 * cores);
    println!(
        "  the machine's cores busy (/proc/stat, every round): 1 job {:.2}, 2 jobs {:.2} of {cores}; with 1 job's CPU a trial two jobs could reach at most {:.2}× one job",
        busy[0],
        busy[1],
        cores / busy[0]
    );
}

/// The machine's CPU time so far in jiffies, [busy, all] (`/proc/stat`: all is busy, idle
/// and I/O wait).
fn machine_jiffies() -> [u64; 2] {
    let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let fields: Vec<u64> = text
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .skip(1)
        .filter_map(|field| field.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is already in user).
    let at = |index: usize| fields.get(index).copied().unwrap_or(0);
    let busy = at(0) + at(1) + at(2) + at(5) + at(6) + at(7);
    [busy, busy + at(3) + at(4)]
}

/// CPU seconds so far: this process's (every thread's, from `/proc/self/task/*/schedstat`) and
/// its run's containers' (the engine's statistics).
fn cpu(runtime: &tokio::runtime::Runtime, sandbox: &DockerSandbox) -> [f64; 2] {
    let own: u64 = std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|text| text.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    let containers: u64 = runtime.block_on(async {
        let engine = docker::connect().await.expect("engine");
        let label = format!("{}={}", docker::RUN_LABEL, sandbox.run_id());
        let mut total = 0;
        for id in docker::containers_labelled(&engine, &label)
            .await
            .unwrap_or_default()
        {
            let options = bollard::query_parameters::StatsOptionsBuilder::default()
                .stream(false)
                .one_shot(true)
                .build();
            let stats = futures_util::StreamExt::next(&mut engine.stats(&id, Some(options))).await;
            total += stats
                .and_then(Result::ok)
                .and_then(|stats| stats.cpu_stats?.cpu_usage?.total_usage)
                .unwrap_or(0);
        }
        total
    });
    [own as f64 / 1e9, containers as f64 / 1e9]
}

/// The docker demo (`examples/demo/clawtest.docker.toml`: 4 tasks × 3 trials of the static
/// reference agent with its services, replayed, faults on), run by the release
/// `cargo-clawtest` as a user runs it, with 1 and with 2 jobs in turn, [`DEMO_ROUNDS`] times.
/// Each run's time is split by the engine's events for its containers: the set-up (the
/// harness build, the image build, the static shim, the worker containers made: nothing more
/// jobs shorten), the trials (the first worker started to the last one stopped) and the end
/// (the workers removed, the reports written).
fn demo(runtime: &tokio::runtime::Runtime, engine: &bollard::Docker) {
    let clawtest = common::release_clawtest();
    // The first run builds what later runs find built (the agent, its image, the shim).
    demo_run(runtime, engine, &clawtest, 1);
    println!(
        "the docker demo (12 trials), 1 and 2 jobs in turn, load {}:",
        load()
    );
    let mut runs: [Vec<[f64; 4]>; 2] = [Vec::new(), Vec::new()];
    for _ in 0..DEMO_ROUNDS {
        for jobs in [1, 2] {
            runs[jobs - 1].push(demo_run(runtime, engine, &clawtest, jobs));
        }
    }
    let medians = runs.map(|mut runs| {
        runs.sort_by(|one, other| one[0].total_cmp(&other[0]));
        runs[runs.len() / 2]
    });
    for (jobs, [total, set_up, trials, end]) in [1, 2].into_iter().zip(medians) {
        println!(
            "  {jobs} job(s), the median of {DEMO_ROUNDS} runs: {total:.3} s = set-up {set_up:.3} s + trials {trials:.3} s + end {end:.3} s"
        );
    }
    println!(
        "  2 jobs against 1: the run {:.2}×, its trials {:.2}× (load {})",
        medians[0][0] / medians[1][0],
        medians[0][2] / medians[1][2],
        load()
    );
}

/// How many times the demo runs with each number of jobs.
const DEMO_ROUNDS: usize = 3;

/// One run of the docker demo with `jobs`: its wall time, set-up, trials and end, in seconds.
fn demo_run(
    runtime: &tokio::runtime::Runtime,
    engine: &bollard::Docker,
    clawtest: &std::path::Path,
    jobs: usize,
) -> [f64; 4] {
    let filters = std::collections::HashMap::from([
        ("type".to_string(), vec!["container".to_string()]),
        ("label".to_string(), vec![docker::RUN_LABEL.to_string()]),
    ]);
    let options = bollard::query_parameters::EventsOptionsBuilder::default()
        .filters(&filters)
        .build();
    let mut events = engine.events(Some(options));
    let (listening, listened) = tokio::sync::oneshot::channel();
    let (finish, finished) = tokio::sync::oneshot::channel::<()>();
    // Collects the events of the containers made from now on, until the run has ended and
    // each of them was removed (the engine's last events may come after the run's exit).
    let collected = runtime.spawn(async move {
        let mut seen: Vec<(i64, String)> = Vec::new();
        let _ = listening.send(());
        let mut finished = std::pin::pin!(finished);
        let mut ended = false;
        let count = |seen: &[(i64, String)], wanted: &str| {
            seen.iter().filter(|(_, action)| action == wanted).count()
        };
        while !(ended && count(&seen, "create") == count(&seen, "destroy")) {
            tokio::select! {
                event = futures_util::StreamExt::next(&mut events) => match event {
                    Some(Ok(event)) => {
                        if let (Some(nanos), Some(action)) = (event.time_nano, event.action) {
                            seen.push((nanos, action));
                        }
                    }
                    _ => break,
                },
                _ = &mut finished, if !ended => ended = true,
            }
        }
        seen
    });
    // Subscribed before the run starts: none of its events is missed.
    runtime.block_on(listened).expect("the event stream");
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos() as i64)
    };
    let started = now();
    let status = std::process::Command::new(clawtest)
        .args([
            "clawtest",
            "--config",
            "clawtest.docker.toml",
            "--jobs",
            &jobs.to_string(),
        ])
        .current_dir(common::workspace_root().join("examples/demo"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("cargo-clawtest runs");
    let ended = now();
    assert!(status.success(), "the docker demo passes");
    let _ = finish.send(());
    let seen = runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(30), collected).await })
        .expect("the run's containers were all removed")
        .expect("the event collector");
    let during = |action: &str| -> Vec<i64> {
        seen.iter()
            .filter(|(nanos, seen)| *nanos >= started && seen == action)
            .map(|(nanos, _)| *nanos)
            .collect()
    };
    // The trials end when the last worker is stopped: a worker whose job has no trial left
    // goes while the others' last trials run.
    let start = during("start").into_iter().min();
    let stop = (during("kill").into_iter().max()).or_else(|| during("die").into_iter().max());
    let (start, stop) = start
        .zip(stop)
        .expect("the run's containers started and stopped");
    [ended - started, start - started, stop - start, ended - stop].map(|nanos| nanos as f64 / 1e9)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let engine = match runtime.block_on(docker::connect()) {
        Ok(engine) => engine,
        Err(error) => {
            println!("SKIPPED: no Docker engine ({error})");
            return;
        }
    };
    let binaries = shim::build_static_optimized(&["clawtest-shim"])
        .expect("static build of the shim and probe");
    let probe = std::fs::read(binaries.join("clawtest-probe")).expect("the static probe");
    let context = vec![
        ContextFile {
            path: "Dockerfile".into(),
            contents: b"FROM scratch\nCOPY clawtest-probe /\n".to_vec(),
            mode: 0o644,
        },
        ContextFile {
            path: "clawtest-probe".into(),
            contents: probe,
            mode: 0o755,
        },
    ];
    runtime
        .block_on(docker::image::build(&engine, IMAGE, &context))
        .expect("the bench image builds");
    // A prebuilt shim, as a run takes it (`CLAWTEST_SHIM`), else the one just built.
    let shim = std::env::var_os(shim::SHIM_VARIABLE)
        .map_or_else(|| binaries.join("clawtest-shim"), std::path::PathBuf::from);
    println!("shim: {}", shim.display());
    let sandbox = Arc::new(
        runtime
            .block_on(DockerSandbox::new(
                engine.clone(),
                IMAGE,
                shim,
                ResourceLimits::default(),
            ))
            .expect("the docker sandbox"),
    );
    println!(
        "target: median ≤ 0.15 s a trial, ≥ 1.8× with two jobs ({} cores)",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    // `cargo bench` passes `--bench`; a word chooses one mode.
    let chosen: Vec<String> = std::env::args()
        .skip(1)
        .filter(|argument| !argument.starts_with("--"))
        .collect();
    for (reuse, name) in [(false, "one-shot"), (true, "worker")] {
        if chosen.is_empty() || chosen.iter().any(|word| word == name) {
            measure(&runtime, &sandbox, reuse);
        }
    }
    if chosen.is_empty() || chosen.iter().any(|word| word == "demo") {
        demo(&runtime, &engine);
    }
}
