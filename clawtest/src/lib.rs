//! clawtest: agent-environment evaluation as an ordinary CI regression suite.
//!
//! The pipeline runs in one direction, with typed values between stages:
//!
//! ```text
//! config + globs ──discover──▶ [Task] ──plan──▶ [TrialPlan] ──execute──▶ [Trajectory]
//!    ──grade──▶ [Grade] ──aggregate──▶ [Verdict] ──report──▶ files + exit code
//! ```
//!
//! Execution emits [`report::events::Event`]s; reporters consume them. No stage reaches into another's
//! state.

pub mod cargo_test;
pub mod config;
pub mod discover;
pub mod gateway;
pub mod grade;
pub mod harness;
pub mod http;
pub mod init;
pub mod interrupt;
pub mod judge;
pub mod report;
pub mod results;
pub mod run;
pub mod sandbox;
pub mod serve;
pub mod services;
pub mod spec;
pub mod surfaces;
pub mod trajectory;
pub mod validate;
pub mod world;

pub use clawtest_macros::{harness, main, suite};
pub use harness::Env;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
