//! Harness images: checks that a named image is present (nothing is ever pulled: the engine
//! may have no registry), and builds images through the engine's build API from a tar
//! context, either a folder with a Dockerfile (`harness.dockerfile`) or files given in memory
//! (the tests' FROM scratch images).

use std::path::{Path, PathBuf};

use bollard::Docker;
use bollard::query_parameters::BuildImageOptionsBuilder;
use futures_util::StreamExt;
use hyper::body::Bytes;

use super::DockerError;

/// One file of a build context.
#[derive(Debug, Clone)]
pub struct ContextFile {
    /// Path inside the context, with `/` separators.
    pub path: String,
    /// The file's bytes.
    pub contents: Vec<u8>,
    /// Its Unix permission bits, e.g. `0o644`.
    pub mode: u32,
}

/// Folders never sent as build context: they are large and never what an image needs.
const SKIPPED_FOLDERS: &[&str] = &[".git", "target"];

/// Fails with [`DockerError::ImageMissing`] unless `image` is present in the engine.
pub(crate) async fn require(docker: &Docker, image: &str) -> Result<(), DockerError> {
    match docker.inspect_image(image).await {
        Ok(_) => Ok(()),
        Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 404, ..
        }) => Err(DockerError::ImageMissing {
            image: image.to_string(),
        }),
        Err(error) => Err(DockerError::Engine(format!(
            "inspecting image {image}: {error}"
        ))),
    }
}

/// Builds `tag` from `files` (which must include a `Dockerfile`).
pub async fn build(docker: &Docker, tag: &str, files: &[ContextFile]) -> Result<(), DockerError> {
    let archive = archive(files)
        .map_err(|error| DockerError::Build(format!("packing the build context: {error}")))?;
    let options = BuildImageOptionsBuilder::default()
        .dockerfile("Dockerfile")
        .t(tag)
        .rm(true)
        .forcerm(true)
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
