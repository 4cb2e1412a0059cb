//! Running a suite, top-down: `settings` (one `settings::RunSettings::resolve` for `cargo
//! clawtest run`, `run --oracle` and a `cargo test` task test) → `plan` (a
//! `plan::TrialPlan` per task: the catalogue with its own services, its tools, its commands,
//! where its model answers come from) → `executor` (schedules every (task, trial), at most
//! `jobs` at a time, aggregates each task's k trials into a verdict, summarizes, and reports
//! as [`crate::report::events::Event`]s) → `trial/` (one trial: folder, endpoints, launch,
//! harness, grade). `session` is a whole run as the CLI asks for it; `suite` loads the
//! tasks, `partition` shards them, `regrade` grades saved trajectories again, `build` runs
//! `[harness] build`, `cells` splits a matrix into one run per cell and combines them, `dispatch` starts units of work in order, at most `jobs` at a time.

pub(crate) mod build;
pub mod cells;
mod dispatch;
pub(crate) mod executor;
mod noisy_answer;
pub mod partition;
pub(crate) mod plan;
pub mod regrade;
pub mod session;
pub mod settings;
pub(crate) mod suite;
pub(crate) mod trial;

pub use suite::Suite;
