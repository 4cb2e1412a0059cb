//! What the macros of `clawtest-macros` and `clawtest::main!` expand to, reached as
//! `::clawtest::__private::…` so that expansions never depend on the caller's imports. Not a
//! public API: names here change without notice.

pub use crate::cargo_test::{Failure, SnapshotHook, run_task_file};
pub use crate::report::snapshots::content as snapshot_content;
pub use crate::results::Verdict;
pub use crate::rust_harness::{Env, RustHarness};

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

/// Expanded by `clawtest::main!`: nothing with the `libtest` feature, a clear error without.
#[cfg(feature = "libtest")]
#[doc(hidden)]
#[macro_export]
macro_rules! __clawtest_require_libtest {
    () => {};
}

#[cfg(not(feature = "libtest"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __clawtest_require_libtest {
    () => {
        ::core::compile_error!(
            "clawtest::main! needs clawtest's `libtest` feature: `clawtest = { version = \"0.1\", features = [\"libtest\"] }` in [dev-dependencies]"
        );
    };
}

/// Expanded by `snapshots = true`: nothing with the `insta` feature, a clear error without.
#[cfg(feature = "insta")]
#[doc(hidden)]
#[macro_export]
macro_rules! __clawtest_require_insta {
    () => {};
}

#[cfg(not(feature = "insta"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __clawtest_require_insta {
    () => {
        ::core::compile_error!(
            "`snapshots = true` needs clawtest's `insta` feature: `features = [\"insta\"]` on the clawtest dependency"
        );
    };
}

pub use __clawtest_require_insta as require_insta;
pub use __clawtest_require_libtest as require_libtest;
