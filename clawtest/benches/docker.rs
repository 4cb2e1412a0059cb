//! Docker sandbox overhead: how long one trial takes with a trivial harness (a static probe
//! that exits 0) from its folder made to its folder removed or given back, and the trial
//! throughput of 2 parallel jobs against 1, in both modes: a container of its own per trial
//! (`[docker] reuse = false`: create, start, harness exits, stop, remove) and worker
//! containers kept for the run (a trial is the shim's child; the container is reset between
//! trials), and then of the default jobs (two a core) against 1. The targets: a
//! median ≤ 0.15 s a trial and ≥ 1.8× with two jobs. With workers it also prints the CPU a
//! trial costs (this process's, and the worker containers' from the engine's statistics),
//! which other work on the machine does not move as it moves wall times. Run with `cargo
//! bench -p clawtest --bench docker` (`-- worker` or `-- one-shot` for one mode); it builds
//! its FROM scratch image locally, prints its figures with the machine's load and asserts
//! nothing. Without a Docker engine it says so and stops.

// A benchmark is a binary that prints its figures: the library's no-printing lints are not for it.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use clawtest::sandbox::docker::{self, DockerSandbox, ResourceLimits, image::ContextFile, shim};
use clawtest::sandbox::{Endpoints, Launch, Sandbox};

const IMAGE: &str = "clawtest-bench-harness:latest";
const SEQUENTIAL: usize = 12;
const THROUGHPUT: usize = 12;

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
    let cpu_start = cpu(runtime, sandbox);
    let single = rate(1);
    let cpu_single = cpu(runtime, sandbox);
    let double = rate(2);
    let cpu_double = cpu(runtime, sandbox);
    println!(
        "  throughput, {throughput} trials: 1 job {single:.2} trials/s, 2 jobs {double:.2} trials/s = {:.2}× (load {} at the end)",
        double / single,
        load()
    );
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
            "  the default {default_jobs} jobs (two a core): {default:.2} trials/s = {:.2}× one job (load {})",
            default / single,
            load()
        );
    }
    if reuse {
        for (jobs, before, after) in [(1, cpu_start, cpu_single), (2, cpu_single, cpu_double)] {
            let [own, containers] =
                [0, 1].map(|at| (after[at] - before[at]) / throughput as f64 * 1e3);
            println!(
                "  CPU a trial ({jobs} job(s)): {:.2} ms = this process {own:.2} ms + the worker containers {containers:.2} ms",
                own + containers
            );
        }
    }
    runtime.block_on(sandbox.settle());
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
                engine,
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
}
