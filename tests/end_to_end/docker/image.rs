//! Harness images built from a Dockerfile are built again only when what they are built from
//! changed (`docker::image::build_unless_unchanged`): the context's files, or the id of an
//! image the Dockerfile builds on. Each test's tags are its own (the process id and the
//! time), and removed at its end.

use clawtest::sandbox::docker::{self, image::Built, image::ContextFile};

use super::{ready, runtime};

/// A tag no other test run uses.
fn own_tag(what: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|since| since.as_nanos())
        .unwrap_or_default();
    format!("clawtest-test-{what}-{}-{nanos}:latest", std::process::id())
}

fn file(path: &str, contents: &str) -> ContextFile {
    ContextFile {
        path: path.into(),
        contents: contents.as_bytes().to_vec(),
        mode: 0o644,
    }
}

/// Removes the tags when the test ends, passed or not.
struct Tags(Vec<String>);

impl Drop for Tags {
    fn drop(&mut self) {
        runtime().block_on(async {
            let engine = docker::connect().await.expect("engine");
            for tag in &self.0 {
                let _ = engine
                    .remove_image(
                        tag,
                        None::<bollard::query_parameters::RemoveImageOptions>,
                        None,
                    )
                    .await;
            }
        });
    }
}

#[test]
fn an_image_is_built_again_only_when_its_files_or_its_base_change() {
    let Some(_) = ready() else { return };
    let tags = Tags(vec![
        own_tag("base"),
        own_tag("derived"),
        own_tag("argument"),
    ]);
    let [base, derived, argument] = [&tags.0[0], &tags.0[1], &tags.0[2]];
    runtime().block_on(async {
        let engine = docker::connect().await.expect("engine");
        let build = |tag: &str, files: Vec<ContextFile>| {
            let engine = engine.clone();
            let tag = tag.to_string();
            async move {
                docker::image::build_unless_unchanged(&engine, &tag, &files)
                    .await
                    .expect("built")
            }
        };
        let base_files = |note: &str| {
            vec![
                file("Dockerfile", "FROM scratch\nCOPY note /\n"),
                file("note", note),
            ]
        };
        let derived_files = |note: &str| {
            vec![
                file("Dockerfile", &format!("FROM {base}\nCOPY extra /\n")),
                file("extra", note),
            ]
        };
        assert_eq!(build(base, base_files("one")).await, Built::Built);
        assert_eq!(build(base, base_files("one")).await, Built::Unchanged);
        assert_eq!(build(derived, derived_files("a")).await, Built::Built);
        let label = docker::image::label_of(&engine, derived)
            .await
            .expect("inspected");
        assert!(label.is_some_and(|digest| digest.len() == 64));
        assert_eq!(build(derived, derived_files("a")).await, Built::Unchanged);
        // A file of the context changed.
        assert_eq!(build(derived, derived_files("b")).await, Built::Built);
        assert_eq!(build(derived, derived_files("b")).await, Built::Unchanged);
        // The base image under the same tag is another image now.
        assert_eq!(build(base, base_files("two")).await, Built::Built);
        assert_eq!(build(derived, derived_files("b")).await, Built::Built);
        assert_eq!(build(derived, derived_files("b")).await, Built::Unchanged);
        // A base named through a build argument: built every time.
        let through_argument = || {
            vec![file(
                "Dockerfile",
                &format!("ARG BASE={base}\nFROM ${{BASE}}\n"),
            )]
        };
        assert_eq!(build(argument, through_argument()).await, Built::Built);
        assert_eq!(build(argument, through_argument()).await, Built::Built);
        assert_eq!(
            docker::image::label_of(&engine, argument)
                .await
                .expect("inspected"),
            None
        );
    });
}
