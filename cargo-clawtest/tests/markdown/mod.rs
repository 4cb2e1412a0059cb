//! What the documentation tests share: where the repository is, the book's chapters, a
//! Markdown text's code blocks of one language, and GitHub's heading anchor. Each test binary
//! uses part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The repository's root folder.
pub fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap()
}

/// The book's chapters, `docs/*.md`, sorted.
pub fn chapters() -> Vec<PathBuf> {
    let mut chapters: Vec<PathBuf> = std::fs::read_dir(repository().join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "md"))
        .collect();
    chapters.sort();
    chapters
}

/// The code blocks of `language` (```` ```toml ````) in a Markdown text, each with the
/// 1-based line its text starts at.
pub fn code_blocks(markdown: &str, language: &str) -> Vec<(usize, String)> {
    let opening = format!("```{language}");
    let mut blocks = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (index, line) in markdown.lines().enumerate() {
        match &mut current {
            None if line.trim_start() == opening => current = Some((index + 2, String::new())),
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

/// GitHub's (and mdBook's) anchor of a heading: lowercase, spaces to `-`, punctuation other
/// than `-` and `_` dropped.
pub fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|character| match character {
            ' ' => Some('-'),
            '-' | '_' => Some(character),
            _ if character.is_alphanumeric() => Some(character),
            _ => None,
        })
        .collect()
}
