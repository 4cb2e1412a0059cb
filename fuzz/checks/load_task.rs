//! The fuzz check of the task loader: any bytes, as the contents of a task file, go through
//! what `cargo clawtest validate` does with a file (size limit, UTF-8, the YAML budget, the
//! tree, the typed form, validation) and then through what it does with the outcome.
//!
//! Beyond "never panics, never hangs, never exhausts memory", two properties are checked:
//! every rejected file renders as a diagnostic and as JSON (a span past the text would panic
//! in the renderer), and every accepted task written back with `task::write` loads again and
//! writes the same text (the writer is a fixed point), so the writer cannot produce a file
//! the loader refuses.
//!
//! The check, shared by the fuzz target (`fuzz/fuzz_targets/load_task.rs`) and by
//! `clawtest/tests/fuzz_seeds.rs`, which runs every committed seed through it on each test run.

use std::path::Path;
use std::sync::LazyLock;

use clawtest::services::Catalogue;
use clawtest::task;
use clawtest::validate::{FileOutcome, Report};

static CATALOGUE: LazyLock<Catalogue> = LazyLock::new(Catalogue::builtin);

/// Panics when `data` breaks a property above; returns quietly otherwise.
pub(crate) fn check(data: &[u8]) {
    let path = Path::new("fuzz/task.yaml");
    match task::load_bytes(path, data.to_vec(), &CATALOGUE) {
        Err(invalid) => {
            let report = Report {
                files: vec![FileOutcome::invalid(invalid)],
            };
            assert!(!report.is_valid());
            let human = report.render_human(false);
            assert!(human.contains("invalid"), "{human}");
            let json = report.to_json();
            assert!(json.contains("\"valid\": false"), "{json}");
        }
        Ok(task) => {
            let Ok(written) = task::write::to_yaml(&task) else {
                return;
            };
            let again = task::load_bytes(path, written.clone().into_bytes(), &CATALOGUE)
                .unwrap_or_else(|invalid| {
                    panic!(
                        "an accepted task, written back, does not load:\n{}\n{written}",
                        invalid.plain()
                    )
                });
            let rewritten = task::write::to_yaml(&again).expect("a loaded task can be written");
            assert_eq!(rewritten, written, "the writer is not a fixed point");
        }
    }
}
