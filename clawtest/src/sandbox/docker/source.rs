//! What a harness image is built from, as one digest: every file of its build context and
//! the engine's id of each image its Dockerfile builds on (`FROM`, `COPY --from`). clawtest
//! labels each image it builds with that digest (`image::SOURCE_LABEL`) and does not build
//! again an image whose label matches. A build the engine's cache answers whole still takes
//! the whole context sent, unpacked and checksummed on every run: a tenth of a second for the
//! demo's 9 MB, seconds for a large context.
//!
//! A Dockerfile that may build something else with all of that unchanged has no digest
//! ([`bases`] gives `None`) and is built every run, the engine's cache deciding what runs
//! again: a base or stage named through a variable (`FROM $BASE`, `COPY --from=${STAGE}`),
//! an `ADD` of a URL or a git repository (fetched again by each build), or an `escape`
//! directive (which changes how lines continue).

use sha2::{Digest, Sha256};

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

/// Which build of the format below a digest is; a change of it rebuilds every image once.
const FORMAT: &[u8] = b"clawtest image source 1\n";

/// The images `dockerfile` builds on, as it names them (a tag or an id), in order and each
/// once: `FROM` images other than `scratch` and the file's own stages, and `COPY --from` /
/// `ADD --from` images. `None` when the file's result is not fixed by its context and
/// these images (see the module documentation).
pub(super) fn bases(dockerfile: &str) -> Option<Vec<String>> {
    let mut stages: Vec<String> = Vec::new();
    let mut images: Vec<String> = Vec::new();
    let mut add = |image: &str, stages: &[String]| {
        let known = image.eq_ignore_ascii_case("scratch")
            || image.parse::<usize>().is_ok()
            || stages.iter().any(|stage| stage.eq_ignore_ascii_case(image));
        if !known && !images.iter().any(|seen| seen == image) {
            images.push(image.to_string());
        }
    };
    for instruction in instructions(dockerfile)? {
        let mut words = instruction.split_whitespace();
        let Some(keyword) = words.next() else {
            continue;
        };
        let words: Vec<&str> = words.collect();
        if keyword.eq_ignore_ascii_case("FROM") {
            let mut operands = words.iter().filter(|word| !word.starts_with("--"));
            let image = operands.next()?;
            if image.contains('$') {
                return None;
            }
            add(image, &stages);
            if let (Some(as_word), Some(stage)) = (operands.next(), operands.next())
                && as_word.eq_ignore_ascii_case("AS")
            {
                stages.push(stage.to_string());
            }
        } else if keyword.eq_ignore_ascii_case("COPY") || keyword.eq_ignore_ascii_case("ADD") {
            for word in &words {
                if let Some(image) = word.strip_prefix("--from=") {
                    if image.contains('$') {
                        return None;
                    }
                    add(image, &stages);
                }
            }
            let fetches = words.iter().any(|word| {
                !word.starts_with("--") && (word.contains("://") || word.starts_with("git@"))
            });
            if keyword.eq_ignore_ascii_case("ADD") && fetches {
                return None;
            }
        }
    }
    Some(images)
}

/// The Dockerfile's instructions, each on one line (continued lines joined, comments and
/// blank lines left out); `None` when an `escape` parser directive changes the line
/// continuation this reads.
fn instructions(dockerfile: &str) -> Option<Vec<String>> {
    let mut instructions = Vec::new();
    let mut current = String::new();
    let mut directives = true;
    for line in dockerfile.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') {
            // Parser directives (`# escape=…`) may only come before anything else.
            let directive = trimmed.trim_start_matches('#').trim_start();
            if directives && directive.to_ascii_lowercase().starts_with("escape") {
                return None;
            }
            continue;
        }
        directives = false;
        if trimmed.is_empty() {
            continue;
        }
        match trimmed.strip_suffix('\\') {
            Some(part) => {
                current.push_str(part);
                current.push(' ');
            }
            None => {
                current.push_str(trimmed);
                instructions.push(std::mem::take(&mut current));
            }
        }
    }
    if !current.trim().is_empty() {
        instructions.push(current);
    }
    Some(instructions)
}

/// The digest of a build from `files` on `bases` (each image as named and the engine's id
/// for it): lower-case hex SHA-256, the same for the same files, modes and base ids in any
/// order of `files`.
pub(super) fn digest(files: &[ContextFile], bases: &[(String, String)]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(FORMAT);
    let mut framed = |part: &[u8]| {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    };
    for (name, id) in bases {
        framed(name.as_bytes());
        framed(id.as_bytes());
    }
    let mut sorted: Vec<&ContextFile> = files.iter().collect();
    sorted.sort_by(|one, other| one.path.cmp(&other.path));
    for file in sorted {
        framed(file.path.as_bytes());
        framed(&file.mode.to_le_bytes());
        framed(&file.contents);
    }
    hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_scratch_builds_on_nothing() {
        assert_eq!(bases("FROM scratch\nCOPY agent /agent\n"), Some(Vec::new()));
    }

    #[test]
    fn stages_are_not_images_but_their_bases_are() {
        let dockerfile = "# a comment\n\
            FROM --platform=linux/amd64 rust:1.95 AS build\n\
            RUN cargo build --release\n\
            from debian:bookworm-slim as runtime\n\
            COPY --from=build /app /app\n\
            COPY --from=busybox:stable /bin/busybox /bin/\n\
            COPY --from=0 /x /y\n\
            FROM runtime\n";
        assert_eq!(
            bases(dockerfile),
            Some(vec![
                "rust:1.95".to_string(),
                "debian:bookworm-slim".to_string(),
                "busybox:stable".to_string(),
            ])
        );
    }

    #[test]
    fn continued_lines_are_read_as_one_instruction() {
        assert_eq!(
            bases("FROM \\\n  # between\n  alpine:3 \\\n  AS base\nFROM base\n"),
            Some(vec!["alpine:3".to_string()])
        );
    }

    #[test]
    fn a_base_named_through_a_variable_has_no_digest() {
        assert_eq!(bases("ARG BASE=alpine\nFROM $BASE\n"), None);
        assert_eq!(bases("ARG TAG=3\nFROM alpine:${TAG}\n"), None);
        assert_eq!(bases("FROM scratch\nCOPY --from=${STAGE} /a /a\n"), None);
    }

    #[test]
    fn variables_elsewhere_keep_the_digest() {
        assert_eq!(
            bases("FROM --platform=$BUILDPLATFORM scratch\nENV PATH=$PATH:/bin\nCOPY $FILE /\n"),
            Some(Vec::new())
        );
    }

    #[test]
    fn fetching_adds_and_escape_directives_have_no_digest() {
        assert_eq!(
            bases("FROM scratch\nADD https://example.com/a.tar /\n"),
            None
        );
        assert_eq!(
            bases("FROM scratch\nADD git@example.com:a/b.git /src\n"),
            None
        );
        assert_eq!(bases("# escape=`\nFROM scratch\n"), None);
        // A local ADD is part of the context.
        assert_eq!(bases("FROM scratch\nADD a.tar /\n"), Some(Vec::new()));
    }

    fn file(path: &str, contents: &[u8], mode: u32) -> ContextFile {
        ContextFile {
            path: path.into(),
            contents: contents.to_vec(),
            mode,
        }
    }

    #[test]
    fn the_digest_follows_contents_modes_paths_and_bases_not_order() {
        let files = [
            file("Dockerfile", b"FROM scratch\n", 0o644),
            file("agent", b"binary", 0o755),
        ];
        let reference = digest(&files, &[]);
        let reversed = [files[1].clone(), files[0].clone()];
        assert_eq!(digest(&reversed, &[]), reference);
        let changes = [
            [files[0].clone(), file("agent", b"binarY", 0o755)],
            [files[0].clone(), file("agent", b"binary", 0o644)],
            [files[0].clone(), file("agent2", b"binary", 0o755)],
            // The same bytes framed otherwise: a path's end moved into the contents.
            [files[0].clone(), file("agentb", b"inary", 0o755)],
        ];
        for changed in changes {
            assert_ne!(digest(&changed, &[]), reference);
        }
        let on_base = digest(&files, &[("alpine:3".into(), "sha256:1".into())]);
        assert_ne!(on_base, reference);
        assert_ne!(
            digest(&files, &[("alpine:3".into(), "sha256:2".into())]),
            on_base
        );
    }
}
