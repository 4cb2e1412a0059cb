//! Harness images built from a Dockerfile are built again only when what they are built from
//! changed (`docker::image::build_unless_unchanged`): the context's files, or the id of an
//! image the Dockerfile builds on. Each test's tags are its own (the process id and the
//! time), and removed at its end. Every command that builds the image runs `harness.build`
//! first, since the image is made of what it makes.

use clawtest::sandbox::docker::{self, image::Built, image::ContextFile};

use super::{clawtest, probe_suite_with, probe_task, ready, runtime};

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

#[test]
fn every_command_that_builds_the_image_runs_the_harness_build_first() {
    let Some(ready) = ready() else { return };
    let task = probe_task(
        "built-first",
        60,
        &["BUILT_FROM=dockerfile", "CLAWTEST_TRIAL=0"],
        &["nothing"],
    );
    let probe = ready.binaries.join("clawtest-probe");
    // The build puts the probe where the Dockerfile copies it from: without it first, the
    // image cannot be built.
    let build = format!(
        "build = [\"cp\", {:?}, \"image/clawtest-probe\"]",
        probe.display().to_string()
    );
    let suite = probe_suite_with(
        "dockerfile = \"image/Dockerfile\"",
        &["/clawtest-probe", "env"],
        &build,
        1,
        "built-first",
        &task,
    );
    let context = suite.path().join("image");
    std::fs::create_dir_all(&context).expect("context folder");
    std::fs::write(
        context.join("Dockerfile"),
        "FROM scratch\nCOPY clawtest-probe /\nENV BUILT_FROM=dockerfile\n",
    )
    .expect("Dockerfile");
    let tags = Tags(vec![docker::image::tag_for(&context.join("Dockerfile"))]);
    // `validate` finds the probe's task invalid (its keywords are nowhere an agent sees them,
    // exit 101) once the image is built; an image that cannot be built is exit 102.
    for (command, code) in [
        (&["cassettes", "--backend", "docker"][..], 0),
        (&["validate", "--feasibility", "--backend", "docker"], 101),
        (&["run", "--backend", "docker"], 0),
    ] {
        let _ = std::fs::remove_file(context.join("clawtest-probe"));
        let outcome = clawtest(ready, suite.path(), command, &[]);
        assert_eq!(outcome.code, code, "{command:?}: {}", outcome.stderr);
        assert!(
            outcome.stderr.contains(&format!("image {}", tags.0[0])),
            "{command:?}: {}",
            outcome.stderr
        );
    }
}
