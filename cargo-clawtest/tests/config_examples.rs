//! Every `clawtest.toml` example of the README and the book (each ```toml block, but for a
//! `Cargo.toml`) is read by the configuration loader without an error, so the documented keys
//! cannot drift from `clawtest/src/config/`.

use std::path::{Path, PathBuf};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The `toml` code blocks of a Markdown text, each with the line its text starts at.
fn toml_blocks(markdown: &str) -> Vec<(usize, String)> {
    let mut blocks = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (index, line) in markdown.lines().enumerate() {
        match &mut current {
            None if line.trim_start() == "```toml" => current = Some((index + 2, String::new())),
            Some(_) if line.trim_start() == "```" => blocks.extend(current.take()),
            Some((_, text)) => {
                text.push_str(line);
                text.push('\n');
            }
            None => {}
        }
    }
    blocks
}

#[test]
fn every_configuration_example_loads() {
    let root = repository();
    let mut files = vec![root.join("README.md")];
    let mut chapters: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "md"))
        .collect();
    chapters.sort();
    files.extend(chapters);
    let mut checked = 0;
    let mut failures = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (line, example) in toml_blocks(&text) {
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
