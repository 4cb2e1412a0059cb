//! The tasks as a `harness = false` test target: `cargo test`, `cargo test -- --list`,
//! `cargo test -- todo-triage` and `cargo nextest run` all work on it, one test per task named
//! `tasks::<task_id>`. Grade breakdowns are snapshots in ../snapshots (`cargo insta review`).

#[cfg(not(feature = "broken"))]
clawtest::main!(
    harness = rust_agent::agent,
    suite = "tasks",
    snapshots = true
);

#[cfg(feature = "broken")]
clawtest::main!(harness = rust_agent::careless_agent, suite = "tasks");
