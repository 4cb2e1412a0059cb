//! clawtest: agent-environment evaluation as an ordinary CI regression suite.
//!
//! The pipeline runs in one direction, with typed values between stages:
//! config + globs → discover → [`spec::Task`] → plan → execute (World + Sandbox + Gateway)
//! → Trajectory → grade → Grade → aggregate → Verdict → report.

pub mod services;
pub mod world;
