//! Where the docker backend gets the static `clawtest-shim` it bind-mounts into every
//! container. `CLAWTEST_SHIM` names a prebuilt one; otherwise the shim is built from this
//! source tree with `cargo build --release --target <host triple>` and `-C
//! target-feature=+crt-static` into the usual target folder (the `--target` subfolder keeps
//! these artifacts apart from the ordinary build, so neither invalidates the other). Cargo
//! makes the build a no-op once it is up to date. Optimized: in a worker container the shim
//! resets the container after every trial, a part of each trial's cost (std only, so the
//! release build takes seconds). A run starts locating it ([`Locating::start`]) before it
//! builds its harness, on a thread of its own: even a no-op `cargo build` is a tenth of a
//! second of every docker run's start, which the harness build's time can hide.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The variable naming a prebuilt static shim.
pub const SHIM_VARIABLE: &str = "CLAWTEST_SHIM";

/// Why no static shim could be had.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ShimError {
    /// `CLAWTEST_SHIM` names no file; holds the path it names.
    #[error("{SHIM_VARIABLE}={} does not name a file", .0.display())]
    Missing(PathBuf),
    /// The source tree to build the shim from is not there; holds where it was expected.
    #[error(
        "the clawtest source tree ({}) is not here to build the static shim from; build it with `RUSTFLAGS='-C target-feature=+crt-static' cargo build --release --target {} -p clawtest-shim` and set {SHIM_VARIABLE} to the binary",
        .0.display(), host_triple()
    )]
    NoSource(PathBuf),
    /// `cargo build` of the static shim failed; holds what went wrong.
    #[error("building the static binaries failed: {0}")]
    Build(String),
}

/// The host's target triple for the static build.
pub(crate) fn host_triple() -> String {
    format!("{}-unknown-linux-gnu", std::env::consts::ARCH)
}

/// The clawtest workspace this library was compiled from.
fn source_workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// The static shim being located on a thread of its own, from [`Locating::start`] until
/// [`Locating::wait`] takes it.
#[derive(Debug)]
pub struct Locating {
    answer: Option<tokio::sync::oneshot::Receiver<Result<PathBuf, ShimError>>>,
}

impl Locating {
    /// Starts locating the shim ([`locate`]); where no thread can be started, [`wait`]
    /// locates it instead.
    ///
    /// [`wait`]: Locating::wait
    pub fn start() -> Locating {
        let (sender, receiver) = tokio::sync::oneshot::channel();
        let started = std::thread::Builder::new()
            .name("clawtest-shim-build".into())
            .spawn(move || {
                let _ = sender.send(locate());
            });
        Locating {
            answer: started.ok().map(|_| receiver),
        }
    }

    /// The shim's path, once located.
    pub async fn wait(self) -> Result<PathBuf, ShimError> {
        match self.answer {
            Some(answer) => answer.await.unwrap_or_else(|_| {
                Err(ShimError::Build(
                    "the thread locating the static shim ended without an answer".into(),
                ))
            }),
            None => tokio::task::spawn_blocking(locate)
                .await
                .unwrap_or_else(|error| Err(ShimError::Build(error.to_string()))),
        }
    }
}

/// The static shim: `CLAWTEST_SHIM`, else built from source (see the module comment).
pub(crate) fn locate() -> Result<PathBuf, ShimError> {
    if let Some(path) = std::env::var_os(SHIM_VARIABLE) {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(ShimError::Missing(path))
        };
    }
    Ok(build_static_optimized(&["clawtest-shim"])?.join("clawtest-shim"))
}

/// Builds `packages` of the clawtest workspace as static binaries for the host triple and
/// returns the folder holding them (tests also use it for the reference agent and the probe).
pub fn build_static(packages: &[&str]) -> Result<PathBuf, ShimError> {
    build(packages, false)
}

/// [`build_static`] with the release profile (what a run mounts, and the benchmark).
pub fn build_static_optimized(packages: &[&str]) -> Result<PathBuf, ShimError> {
    build(packages, true)
}

fn build(packages: &[&str], release: bool) -> Result<PathBuf, ShimError> {
    let workspace = source_workspace();
    if !workspace.join("clawtest-shim").join("Cargo.toml").is_file() {
        return Err(ShimError::NoSource(workspace));
    }
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(folder) => workspace.join(folder),
        None => workspace.join("target"),
    };
    let triple = host_triple();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(&workspace)
        .args(["build", "--quiet", "--target", &triple])
        .args(release.then_some("--release"))
        .arg("--target-dir")
        .arg(&target)
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env("RUSTFLAGS", "-C target-feature=+crt-static");
    for package in packages {
        command.args(["-p", package]);
    }
    let output = command
        .output()
        .map_err(|error| ShimError::Build(format!("cannot run cargo: {error}")))?;
    if !output.status.success() {
        return Err(ShimError::Build(
            String::from_utf8_lossy(&output.stderr).trim().to_string(),
        ));
    }
    Ok(target
        .join(triple)
        .join(if release { "release" } else { "debug" }))
}
