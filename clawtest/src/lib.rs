//! clawtest: agent-environment evaluation as an ordinary CI regression suite.
//!
//! The pipeline runs in one direction, with typed values between stages:
//!
//! ```text
//! clawtest.toml + globs ──discover──▶ [Task] ──plan──▶ tasks × trials ──execute──▶ [Trajectory]
//!    ──grade──▶ [Grade] ──aggregate──▶ [Verdict] ──summarize──▶ RunSummary ──publish──▶ files
//! ```
//!
//! [`discover`] finds the task files, [`task`] turns each into a [`task::Task`], [`run`] plans
//! and executes the trials (each in a [`world::World`] served by [`serve`], its harness in a
//! [`sandbox`], its model calls through [`llm`]'s gateway) into [`trajectory::Trajectory`]s,
//! [`grade`] grades each one purely, [`results`] aggregates them into verdicts and a
//! [`results::RunSummary`], and [`report`] writes what the user reads. Execution emits
//! [`report::events::Event`]s; reporters consume them. No stage reaches into another's state.
//!
//! Imports run one way. Each module imports only modules of the layers below its own
//! (checked by `tests/architecture.rs`; ARCHITECTURE.md has a paragraph per module):
//!
//! ```text
//! 11 __private                      what macro expansions call
//! 10 cargo_test  validate  generate
//! 9  run
//! 8  variants                       a task's variants, proven feasible by the oracle
//! 7  accept                         one pipeline for the tasks clawtest writes: new, feasible, written
//! 6  report  serve  oracle
//! 5  judge  results  surfaces  rust_harness
//! 4  grade  world  llm  sandbox
//! 3  trajectory                     leaf data: what happened
//! 2  task
//! 1  services
//! 0  config  http  discover  interrupt  init
//!    difficulty  method  fault  spelling  escape  persist   below them all: words config,
//!    pdf                            services and task all use; did-you-mean; escaping for each
//!                                   destination; writing a file whole; a PDF's text
//! ```
//!
//! The library prints nothing of its own: it returns values and errors, and emits events; the
//! `cargo-clawtest` binary prints and chooses exit codes. Two places pass output through on
//! purpose: a harness build's output as it happens, and `clawtest::main!`'s test binary, whose
//! `main` is [`cargo_test`]'s (behind the `libtest` feature).

pub mod accept;
pub mod cargo_test;
pub mod cassettes;
pub(crate) mod closed_loop;
pub mod config;
pub mod difficulty;
pub mod discover;
pub mod escape;
pub mod fault;
pub mod generate;
pub mod grade;
pub mod http;
pub mod init;
pub mod interrupt;
pub mod judge;
pub mod llm;
pub mod method;
pub mod oracle;
pub mod pdf;
pub mod persist;
pub mod report;
pub mod results;
pub mod run;
pub mod rust_harness;
pub mod sandbox;
pub mod serve;
pub mod services;
pub mod spelling;
pub mod surfaces;
pub mod task;
pub mod trajectory;
pub mod validate;
pub mod variants;
pub mod workspace_files;
pub mod world;

pub use clawtest_macros::{harness, main, suite};
pub use rust_harness::Env;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
