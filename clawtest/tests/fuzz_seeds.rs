//! The fuzz targets' committed seeds, run through the targets' own checks (`fuzz/checks/`) on
//! every test run: the regression half of fuzzing, at the cost of a test. Searching for new
//! inputs needs libFuzzer and minutes; `.ci/run` does it when `CLAWTEST_FUZZ_SECONDS` is set,
//! and the weekly `fuzz` workflow does it at length.

use std::path::{Path, PathBuf};

#[path = "../../fuzz/checks/load_task.rs"]
mod load_task;
#[path = "../../fuzz/checks/pdf_text.rs"]
mod pdf_text;
#[path = "../../fuzz/checks/service_request.rs"]
mod service_request;
#[path = "../../fuzz/checks/typed_from_tree.rs"]
mod typed_from_tree;

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every file under the folders (relative to the repository), in a stable order.
fn seeds(folders: &[&str]) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for folder in folders {
        let mut pending = vec![repository().join(folder)];
        while let Some(folder) = pending.pop() {
            for entry in std::fs::read_dir(&folder).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    pending.push(path);
                } else {
                    files.push(path);
                }
            }
        }
    }
    files.sort();
    files
}

/// The seeds `.ci/run` gives the loader's targets.
const TASK_SEEDS: [&str; 4] = [
    "clawtest/tests/fixtures/valid",
    "clawtest/tests/fixtures/invalid",
    "clawtest/tests/fixtures/warnings",
    "examples/demo/tasks",
];

#[test]
fn every_task_seed_passes_the_loaders_two_fuzz_checks() {
    let files = seeds(&TASK_SEEDS);
    assert!(files.len() > 20, "{files:?}");
    for file in files {
        let data = std::fs::read(&file).unwrap();
        load_task::check(&data);
        typed_from_tree::check(&data);
    }
}

#[test]
fn every_service_request_seed_passes_its_fuzz_check() {
    let files = seeds(&["fuzz/seeds/service_request"]);
    assert!(!files.is_empty());
    for file in files {
        service_request::check(&std::fs::read(&file).unwrap());
    }
}

#[test]
fn every_pdf_seed_passes_its_fuzz_check() {
    let files = seeds(&["tests/fixtures/pdf"]);
    assert!(
        files
            .iter()
            .filter(|file| file.extension().is_some_and(|e| e == "pdf"))
            .count()
            >= 5
    );
    for file in files {
        pdf_text::check(&std::fs::read(&file).unwrap());
    }
}
