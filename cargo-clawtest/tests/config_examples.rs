//! Every `clawtest.toml` example of the README and the book (each ```toml block, but for a
//! `Cargo.toml`) is read by the configuration loader without an error, so the documented keys
//! cannot drift from `clawtest/src/config/`.

mod markdown;

use std::path::Path;

use markdown::repository;

#[test]
fn every_configuration_example_loads() {
    let root = repository();
    let mut files = vec![root.join("README.md")];
    files.extend(markdown::chapters());
    let mut checked = 0;
    let mut failures = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (line, example) in markdown::code_blocks(&text, "toml") {
            if example.contains("Cargo.toml") {
                continue;
            }
            checked += 1;
            let shown = format!("{}:{line}", file.strip_prefix(&root).unwrap().display());
            if let Err(error) = clawtest::config::Config::from_text(
                &example,
                Path::new("clawtest.toml"),
                root.clone(),
            ) {
                failures.push(format!("{shown}: {error:?}"));
            }
        }
    }
    assert!(
        checked >= 8,
        "only {checked} configuration examples were found"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn a_misspelt_key_is_refused() {
    let result = clawtest::config::Config::from_text(
        "[run]\ntrails = 3\n",
        Path::new("clawtest.toml"),
        repository(),
    );
    assert!(result.is_err(), "an unknown key was accepted");
}
