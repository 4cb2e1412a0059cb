//! The `clawtest` crate as the macros' compile-fail tests see it: the macros, [`Env`], and the
//! library's own `__private` module (the same file, so that the bounds and the `compile_error!`s
//! the expected `.stderr` files quote are the library's), over stand-ins for the library types
//! that module re-exports. Each stand-in has the signature of the type it stands for, so that an
//! expansion that compiles against the library compiles here too; none of them does anything,
//! since no UI test runs what it compiles.

pub use clawtest_macros::{harness, main, suite};
pub use rust_harness::Env;

#[doc(hidden)]
#[path = "../../../../clawtest/src/private.rs"]
pub mod __private;

/// Stand-ins for `clawtest::cargo_test`.
pub mod cargo_test {
    use crate::results::Verdict;
    use crate::rust_harness::RustHarness;

    /// Stands for `clawtest::cargo_test::Failure`.
    #[derive(Debug)]
    pub struct Failure(pub String);

    /// Stands for `clawtest::cargo_test::SnapshotHook`.
    pub type SnapshotHook = fn(&Verdict);

    /// Stands for `clawtest::cargo_test::run_task_file`.
    pub fn run_task_file(
        _manifest_dir: &str,
        _path: &str,
        _harness: Option<RustHarness>,
        _trials: Option<u32>,
        _snapshot: Option<SnapshotHook>,
    ) -> Result<(), Failure> {
        unimplemented!("the UI tests only compile")
    }
}

/// Stand-ins for `clawtest::report::snapshots`.
pub mod report {
    /// Stand-ins for `clawtest::report::snapshots`.
    pub mod snapshots {
        use crate::results::Verdict;

        /// Stands for `clawtest::report::snapshots::content`.
        pub fn content(_verdict: &Verdict) -> String {
            unimplemented!("the UI tests only compile")
        }
    }
}

/// Stand-ins for `clawtest::results`.
pub mod results {
    /// Stands for `clawtest::results::Verdict` (the one field an expansion reads).
    pub struct Verdict {
        /// The task's `task_id`.
        pub task_id: String,
    }
}

/// Stand-ins for `clawtest::rust_harness`.
pub mod rust_harness {
    use std::fmt::Display;
    use std::future::Future;

    /// Stands for `clawtest::Env`.
    #[derive(Debug, Clone)]
    pub struct Env {
        prompt: String,
    }

    impl Env {
        /// Stands for `clawtest::Env::prompt`.
        pub fn prompt(&self) -> &str {
            &self.prompt
        }
    }

    /// Stands for `clawtest::rust_harness::RustHarness`.
    pub struct RustHarness;

    impl RustHarness {
        /// Stands for `clawtest::rust_harness::RustHarness::new`, with its bounds.
        pub fn new<F, Fut, E>(_name: &'static str, _function: F) -> RustHarness
        where
            F: Fn(Env) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = Result<String, E>> + Send + 'static,
            E: Display + 'static,
        {
            RustHarness
        }
    }
}
