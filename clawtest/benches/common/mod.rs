//! What more than one bench needs of the workspace: its root, its target folder, cargo, and
//! the release `cargo-clawtest` built as a user installs it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the library sits in the workspace")
        .to_path_buf()
}

/// `CARGO_TARGET_DIR` (relative to the workspace root, where the benches run cargo), else the
/// workspace's `target`.
pub(crate) fn target_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").unwrap_or_else(|| "target".into());
    workspace_root().join(target)
}

/// The cargo that runs the bench.
pub(crate) fn cargo() -> OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// Builds the release `cargo-clawtest`, as a user would install it; its path.
pub(crate) fn release_clawtest() -> PathBuf {
    let status = Command::new(cargo())
        .current_dir(workspace_root())
        .args(["build", "--quiet", "--release", "-p", "cargo-clawtest"])
        .status()
        .expect("cargo runs");
    assert!(
        status.success(),
        "the release build of cargo-clawtest failed"
    );
    target_dir().join("release").join("cargo-clawtest")
}
