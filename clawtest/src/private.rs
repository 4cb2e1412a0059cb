//! What the macros of `clawtest-macros` and `clawtest::main!` expand to, reached as
//! `::clawtest::__private::…` so that expansions never depend on the caller's imports. Not a
//! public API: names here change without notice.

pub use crate::cargo_test::{Failure, SnapshotHook, run_task_file};
pub use crate::harness::{Env, RustHarness};
pub use crate::run::Verdict;

#[cfg(feature = "libtest")]
pub use crate::cargo_test::libtest::{MainOptions, main};

#[cfg(feature = "insta")]
pub use insta;

/// Checks, at compile time and at the harness function's definition, that it can be a harness.
pub fn assert_harness<F, Fut, E>(_function: &F)
where
    F: Fn(Env) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<String, E>> + Send + 'static,
    E: std::fmt::Display + 'static,
{
}
