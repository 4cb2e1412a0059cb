//! The Docker engine: connecting to it (the one place that finds it: `DOCKER_HOST`, else
//! the local socket) and why the docker backend cannot be used, with what to do about it.

use std::time::Duration;

use bollard::Docker;

use super::shim;

/// Why the docker backend cannot be used.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum DockerError {
    /// No engine answers at `DOCKER_HOST` or the local socket; holds the connection error.
    #[error("the Docker engine does not answer: {0}")]
    Unreachable(String),
    /// `harness.image` names an image the engine does not have.
    #[error("the harness image `{image}` is not in the local Docker engine")]
    ImageMissing {
        /// The image's name, as configured.
        image: String,
    },
    /// The configuration names no image to run the harness in.
    #[error("no harness image: clawtest.toml sets neither harness.image nor harness.dockerfile")]
    NoImage,
    /// Building `harness.dockerfile` failed; holds the build's error.
    #[error("building the harness image failed: {0}")]
    Build(String),
    /// The engine refused an operation; holds its error.
    #[error("the Docker engine refused: {0}")]
    Engine(String),
    /// No static shim to mount into the containers.
    #[error(transparent)]
    Shim(#[from] shim::ShimError),
}

impl DockerError {
    /// What the user can do about it.
    pub fn advice(&self) -> &'static str {
        match self {
            DockerError::Unreachable(_) => {
                "start the Docker engine (check `docker info`, or DOCKER_HOST), or run with --backend process"
            }
            DockerError::ImageMissing { .. } => {
                "build it (`docker build -t IMAGE .`, or set harness.dockerfile so clawtest builds it), pull it, or run with --backend process"
            }
            DockerError::NoImage => {
                "add `dockerfile = \"Dockerfile.clawtest\"` (init wrote one: edit it) or `image = \"NAME\"` under [harness] in clawtest.toml, or run with `cargo clawtest --backend process`"
            }
            DockerError::Build(_) => "fix the Dockerfile, or run with --backend process",
            DockerError::Engine(_) => "check the engine with `docker info`",
            DockerError::Shim(_) => {
                "build the static shim (see docs/sandbox.md: the docker backend)"
            }
        }
    }
}

/// Connects to the engine (`DOCKER_HOST`, else the local socket), agreeing on an API version
/// both sides speak, and checks that it answers.
pub async fn connect() -> Result<Docker, DockerError> {
    let docker = Docker::connect_with_defaults()
        .map_err(|error| DockerError::Unreachable(error.to_string()))?;
    let answer = tokio::time::timeout(Duration::from_secs(5), async {
        let docker = docker.negotiate_version().await?;
        docker.ping().await?;
        Ok::<_, bollard::errors::Error>(docker)
    })
    .await;
    match answer {
        Ok(Ok(docker)) => Ok(docker),
        Ok(Err(error)) => Err(DockerError::Unreachable(error.to_string())),
        Err(_) => Err(DockerError::Unreachable("no answer within 5 s".into())),
    }
}
