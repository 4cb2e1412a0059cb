//! Harness images: checks that a named image is present (nothing is ever pulled: the engine
//! may have no registry), and builds images through the engine's build API from a tar
//! context, either a folder with a Dockerfile (`harness.dockerfile`) or files given in memory
//! (the tests' FROM scratch images). [`build_unless_unchanged`] leaves an image alone when
//! what it was built from has not changed since (`source`).

use std::path::{Path, PathBuf};

use bollard::Docker;
use bollard::query_parameters::BuildImageOptionsBuilder;
use futures_util::StreamExt;
use hyper::body::Bytes;

use super::DockerError;
use super::source;
pub use super::source::ContextFile;

/// The label on an image clawtest builds, holding the digest of what it was built from.
pub const SOURCE_LABEL: &str = "clawtest.source";

/// What [`build_unless_unchanged`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Built {
    /// The engine built the image (its cache may have answered some steps or all).
    Built,
    /// The image under the tag was built from the same files on the same base images: it
    /// was left as it was, and nothing was sent to the engine.
    Unchanged,
}

/// Folders never sent as build context: they are large and never what an image needs.
const SKIPPED_FOLDERS: &[&str] = &[".git", "target"];

/// Fails with [`DockerError::ImageMissing`] unless `image` is present in the engine.
pub(crate) async fn require(docker: &Docker, image: &str) -> Result<(), DockerError> {
    match inspect(docker, image).await? {
        Some(_) => Ok(()),
        None => Err(DockerError::ImageMissing {
            image: image.to_string(),
        }),
    }
}

/// Builds `tag` from `files` (which must include a `Dockerfile`).
pub async fn build(docker: &Docker, tag: &str, files: &[ContextFile]) -> Result<(), DockerError> {
    build_labelled(docker, tag, files, None).await
}

/// Builds `tag` from `files` unless the image under `tag` carries the digest of these files
/// and of the images its Dockerfile builds on ([`SOURCE_LABEL`]); a build labels the image
/// with it. A Dockerfile that has no digest (`source`), or whose base images are not in the
/// engine, is built every time.
pub async fn build_unless_unchanged(
    docker: &Docker,
    tag: &str,
    files: &[ContextFile],
) -> Result<Built, DockerError> {
    let digest = source_digest(docker, files).await?;
    if let Some(digest) = &digest
        && label_of(docker, tag).await?.as_ref() == Some(digest)
    {
        return Ok(Built::Unchanged);
    }
    build_labelled(docker, tag, files, digest).await?;
    Ok(Built::Built)
}

/// The digest of a build from `files` (`source::digest`), with the engine's id of each base
/// image; `None` when there is none to take (see `source`).
async fn source_digest(
    docker: &Docker,
    files: &[ContextFile],
) -> Result<Option<String>, DockerError> {
    let Some(dockerfile) = files.iter().find(|file| file.path == "Dockerfile") else {
        return Ok(None);
    };
    let Some(names) = source::bases(&String::from_utf8_lossy(&dockerfile.contents)) else {
        return Ok(None);
    };
    let mut bases = Vec::with_capacity(names.len());
    for name in names {
        match image_id(docker, &name).await? {
            Some(id) => bases.push((name, id)),
            // The build says what is wrong with a base the engine does not have.
            None => return Ok(None),
        }
    }
    Ok(Some(source::digest(files, &bases)))
}

/// The engine's id for image `name`; `None` when it has no such image.
async fn image_id(docker: &Docker, name: &str) -> Result<Option<String>, DockerError> {
    Ok(inspect(docker, name)
        .await?
        .map(|image| image.id.unwrap_or_default()))
}

/// The [`SOURCE_LABEL`] of image `tag`; `None` when there is no such image, or it was built
/// without a digest.
pub async fn label_of(docker: &Docker, tag: &str) -> Result<Option<String>, DockerError> {
    Ok(inspect(docker, tag)
        .await?
        .and_then(|image| image.config)
        .and_then(|config| config.labels)
        .and_then(|mut labels| labels.remove(SOURCE_LABEL))
        .filter(|digest| !digest.is_empty()))
}

async fn inspect(
    docker: &Docker,
    name: &str,
) -> Result<Option<bollard::models::ImageInspect>, DockerError> {
    match docker.inspect_image(name).await {
        Ok(image) => Ok(Some(image)),
        Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 404, ..
        }) => Ok(None),
        Err(error) => Err(DockerError::Engine(format!(
            "inspecting image {name}: {error}"
        ))),
    }
}

/// Builds `tag` from `files`, with `digest` as its [`SOURCE_LABEL`] when there is one.
async fn build_labelled(
    docker: &Docker,
    tag: &str,
    files: &[ContextFile],
    digest: Option<String>,
) -> Result<(), DockerError> {
    let archive = archive(files)
        .map_err(|error| DockerError::Build(format!("packing the build context: {error}")))?;
    // Set even without a digest: an image inherits its base's labels, and a digest that is
    // not this image's must not be read as one.
    let labels: std::collections::HashMap<&str, String> =
        std::iter::once((SOURCE_LABEL, digest.unwrap_or_default())).collect();
    let options = BuildImageOptionsBuilder::default()
        .dockerfile("Dockerfile")
        .t(tag)
        .rm(true)
        .forcerm(true)
        .labels(&labels)
        .build();
    let mut progress = docker.build_image(
        options,
        None,
        Some(bollard::body_full(Bytes::from(archive))),
    );
    let mut log = String::new();
    while let Some(step) = progress.next().await {
        match step {
            Ok(info) => {
                if let Some(detail) = info.error_detail.and_then(|detail| detail.message) {
                    return Err(DockerError::Build(format!("{log}{detail}")));
                }
                if let Some(text) = info.stream {
                    log.push_str(&text);
                }
            }
            Err(error) => return Err(DockerError::Build(format!("{log}{error}"))),
        }
    }
    Ok(())
}

/// The build context of `folder` with `dockerfile` sent as `Dockerfile`.
pub(crate) fn context_from_folder(
    folder: &Path,
    dockerfile: &Path,
) -> Result<Vec<ContextFile>, DockerError> {
    let read_error = |path: &Path, error: std::io::Error| {
        DockerError::Build(format!("{}: {error}", path.display()))
    };
    let mut files = vec![ContextFile {
        path: "Dockerfile".into(),
        contents: std::fs::read(dockerfile).map_err(|error| read_error(dockerfile, error))?,
        mode: 0o644,
    }];
    let mut pending: Vec<PathBuf> = vec![folder.to_path_buf()];
    while let Some(current) = pending.pop() {
        let entries = std::fs::read_dir(&current).map_err(|error| read_error(&current, error))?;
        for entry in entries {
            let entry = entry.map_err(|error| read_error(&current, error))?;
            let path = entry.path();
            let kind = entry
                .file_type()
                .map_err(|error| read_error(&path, error))?;
            let name = entry.file_name();
            if kind.is_dir() {
                if !SKIPPED_FOLDERS.iter().any(|skipped| name == *skipped) {
                    pending.push(path);
                }
            } else if kind.is_file() {
                let relative = path
                    .strip_prefix(folder)
                    .unwrap_or(&path)
                    .to_string_lossy()
                    .replace('\\', "/");
                if relative == "Dockerfile" {
                    continue;
                }
                let metadata = entry.metadata().map_err(|error| read_error(&path, error))?;
                files.push(ContextFile {
                    path: relative,
                    contents: std::fs::read(&path).map_err(|error| read_error(&path, error))?,
                    mode: std::os::unix::fs::PermissionsExt::mode(&metadata.permissions()),
                });
            }
        }
    }
    Ok(files)
}

fn archive(files: &[ContextFile]) -> std::io::Result<Vec<u8>> {
    let mut builder = tar::Builder::new(Vec::new());
    for file in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(file.contents.len() as u64);
        header.set_mode(file.mode);
        header.set_entry_type(tar::EntryType::Regular);
        builder.append_data(&mut header, &file.path, file.contents.as_slice())?;
    }
    builder.into_inner()
}

/// The tag clawtest gives an image it builds from `dockerfile`: stable per suite, so a
/// rebuild replaces the previous one (the engine's cache keeps rebuilds quick).
pub fn tag_for(dockerfile: &Path) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(dockerfile.to_string_lossy().as_bytes());
    let short: String = digest
        .iter()
        .take(6)
        .map(|byte| format!("{byte:02x}"))
        .collect();
    format!("clawtest-harness:{short}")
}
