//! Choosing the sandbox of a run: `--backend` / `run.backend` (`auto`, `process`, `docker`).
//! `auto` takes docker when the configuration names a harness image (or Dockerfile) and the
//! engine answers, else the process backend; the choice comes back with a line saying why.

use std::sync::Arc;

use super::Sandbox;
use super::docker::image::Built;
use super::docker::shim::Locating;
use super::docker::{self, DockerError, DockerSandbox, ResourceLimits};
use super::process::ProcessSandbox;
use crate::config::{BackendChoice, Config};

/// The sandbox a run uses.
pub struct Chosen {
    /// The backend the run's trials go to.
    pub sandbox: Arc<dyn Sandbox>,
    /// One line for the user: which backend, and why.
    pub note: String,
}

/// Why the chosen backend cannot run (exit 102: the environment, not the suite, is wrong).
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("docker backend: {error}")]
#[diagnostic(help("{}", error.advice()))]
pub struct BackendError {
    /// What the docker engine (or the image build) said.
    pub error: DockerError,
}

/// The static shim, its locating started now when `choice` (the command line's, else the
/// config's) may take the docker backend: a run calls it before building its harness, so
/// that the two overlap (see `docker::shim`), and gives it to [`choose`].
pub fn locate_shim_ahead(config: &Config, choice: Option<BackendChoice>) -> Option<Locating> {
    may_use_docker(config, choice).then(Locating::start)
}

/// Whether `choice` (the command line's, else the config's) may take the docker backend: it
/// is not `process`, and the configuration names an image or a Dockerfile.
pub fn may_use_docker(config: &Config, choice: Option<BackendChoice>) -> bool {
    match choice.unwrap_or(config.run.backend) {
        BackendChoice::Process => false,
        BackendChoice::Auto | BackendChoice::Docker => names_image(config),
    }
}

/// Whether the configuration names a harness image or a Dockerfile to build one from.
fn names_image(config: &Config) -> bool {
    config.harness.image.is_some() || config.harness.dockerfile.is_some()
}

/// Picks and prepares the sandbox for `choice` (the command line's, else the config's), with
/// the static shim of [`locate_shim_ahead`] if it was started (else it is located here).
pub async fn choose(
    config: &Config,
    choice: Option<BackendChoice>,
    shim: Option<Locating>,
) -> Result<Chosen, BackendError> {
    let choice = choice.unwrap_or(config.run.backend);
    let names_image = names_image(config);
    let process = |why: String| Chosen {
        sandbox: Arc::new(ProcessSandbox::default()),
        note: format!("backend: process ({why})"),
    };
    match choice {
        BackendChoice::Process => Ok(process("chosen".into())),
        BackendChoice::Auto if !names_image => Ok(process(
            "auto: no harness.image or harness.dockerfile in the configuration".into(),
        )),
        BackendChoice::Auto => match docker::connect().await {
            Ok(engine) => {
                docker_backend(config, engine, "auto: the Docker engine answers", shim).await
            }
            Err(error) => Ok(process(format!("auto: {error}"))),
        },
        // Nothing to run in: said before the engine is asked, whether it answers or not.
        BackendChoice::Docker if !names_image => Err(BackendError {
            error: DockerError::NoImage,
        }),
        BackendChoice::Docker => {
            let engine = docker::connect()
                .await
                .map_err(|error| BackendError { error })?;
            docker_backend(config, engine, "chosen", shim).await
        }
    }
}

async fn docker_backend(
    config: &Config,
    engine: bollard::Docker,
    why: &str,
    shim: Option<Locating>,
) -> Result<Chosen, BackendError> {
    let failed = |error: DockerError| BackendError { error };
    // Building the static shim runs cargo: on a thread of its own, started before the harness
    // build when the run could (`locate_shim_ahead`), else now, while the engine builds the
    // image (each takes a tenth of a second or more of every run's start, a time more jobs do
    // not shorten).
    let shim = shim.unwrap_or_else(Locating::start);
    let (image, built) = match (&config.harness.image, &config.harness.dockerfile) {
        (Some(image), _) => (image.clone(), None),
        (None, Some(dockerfile)) => {
            let dockerfile = config.root.join(dockerfile);
            let context = match &config.harness.context {
                Some(context) => config.root.join(context),
                None => dockerfile
                    .parent()
                    .map(std::path::Path::to_path_buf)
                    .unwrap_or_else(|| config.root.clone()),
            };
            let tag = docker::image::tag_for(&dockerfile);
            let files =
                docker::image::context_from_folder(&context, &dockerfile).map_err(failed)?;
            let built = docker::image::build_unless_unchanged(&engine, &tag, &files)
                .await
                .map_err(failed)?;
            (tag, Some(built))
        }
        (None, None) => return Err(failed(DockerError::NoImage)),
    };
    let shim = shim.wait().await.map_err(|error| failed(error.into()))?;
    let limits = ResourceLimits {
        memory_mb: config.docker.memory_mb,
        cpus: config.docker.cpus,
        pids: config.docker.pids,
    };
    let sandbox = DockerSandbox::new(engine, &image, shim, limits)
        .await
        .map_err(failed)?
        .reusing(config.docker.reuse);
    let built = match built {
        Some(Built::Built) => " (built)",
        Some(Built::Unchanged) => " (unchanged since built)",
        None => "",
    };
    let note = format!(
        "backend: docker ({why}; image {image}{built}, run {})",
        sandbox.run_id()
    );
    Ok(Chosen {
        sandbox: Arc::new(sandbox),
        note,
    })
}
