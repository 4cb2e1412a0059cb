//! Docker sandbox overhead: how long one trial's container takes from create to remove with a
//! trivial harness (target: median ≤ 0.5 s), and the trial throughput of 2 parallel jobs
//! against 1 (target: ≥ 1.6×). Run with `cargo bench -p clawtest --bench docker`; it builds
//! its FROM scratch image locally, prints its figures and asserts nothing. Without a Docker
//! engine it says so and stops.

// A benchmark is a binary that prints its figures: the library's no-printing lints are not for it.
#![allow(clippy::print_stdout, clippy::print_stderr)]

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

async fn one_trial(sandbox: &DockerSandbox, trial: u32) -> Duration {
    let sockets = tempfile::tempdir().expect("socket folder");
    let interrupt = clawtest::interrupt::CancellationToken::new();
    let started = Instant::now();
    let finished = sandbox
        .run(launch(trial, sockets.path()), interrupt)
        .await
        .expect("the trial runs");
    assert_eq!(finished.exit.code, Some(0), "the probe exits 0");
    started.elapsed()
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
    let binaries =
        shim::build_static(&["clawtest-shim"]).expect("static build of the shim and probe");
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
    let sandbox = runtime
        .block_on(DockerSandbox::new(
            engine,
            IMAGE,
            binaries.join("clawtest-shim"),
            ResourceLimits::default(),
        ))
        .expect("the docker sandbox");

    // Warm-up: the first container pays for caches the rest do not.
    runtime.block_on(one_trial(&sandbox, 0));
    let mut durations: Vec<Duration> = (1..=SEQUENTIAL as u32)
        .map(|trial| runtime.block_on(one_trial(&sandbox, trial)))
        .collect();
    durations.sort();
    let median = durations[durations.len() / 2];
    println!(
        "per-trial overhead (create, start, harness exits 0, stop, remove), {SEQUENTIAL} trials: median {:.3} s, min {:.3} s, max {:.3} s (target: median ≤ 0.5 s)",
        median.as_secs_f64(),
        durations[0].as_secs_f64(),
        durations[durations.len() - 1].as_secs_f64()
    );

    let rate = |jobs: usize| {
        let started = Instant::now();
        runtime.block_on(async {
            for round in 0..THROUGHPUT / jobs {
                let trials: Vec<_> = (0..jobs)
                    .map(|job| one_trial(&sandbox, (100 + round * jobs + job) as u32))
                    .collect();
                futures_util::future::join_all(trials).await;
            }
        });
        THROUGHPUT as f64 / started.elapsed().as_secs_f64()
    };
    let single = rate(1);
    let double = rate(2);
    println!(
        "throughput, {THROUGHPUT} trials: 1 job {single:.2} trials/s, 2 jobs {double:.2} trials/s = {:.2}× (target ≥ 1.6×)",
        double / single
    );
}
