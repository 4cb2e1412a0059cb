//! The README, ARCHITECTURE.md and the book in `docs/` link to each other and into the
//! repository: every relative link must name a file that exists and, with a `#fragment` into a
//! Markdown file, a heading of that file; and every chapter of `docs/` is in the book's
//! table of contents, `docs/SUMMARY.md`. Plain std: no part of the library is needed.

mod markdown;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use markdown::repository;

/// The Markdown files whose links are checked.
fn documents() -> Vec<PathBuf> {
    let root = repository();
    let mut files = vec![
        root.join("README.md"),
        root.join("ARCHITECTURE.md"),
        root.join("templates/README.md"),
    ];
    files.extend(markdown::chapters());
    files
}

/// The lines of a Markdown text outside fenced code blocks, with their 1-based numbers.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            lines.push((index + 1, line));
        }
    }
    lines
}

/// The targets of the inline links and images of a line, `[text](target)`, outside inline
/// code spans.
fn link_targets(line: &str) -> Vec<String> {
    let mut outside_code = String::new();
    for (index, part) in line.split('`').enumerate() {
        if index % 2 == 0 {
            outside_code.push_str(part);
        } else {
            outside_code.push_str("code");
        }
    }
    let mut targets = Vec::new();
    let mut rest = outside_code.as_str();
    while let Some(start) = rest.find("](") {
        let after = &rest[start + 2..];
        let Some(end) = after.find(')') else { break };
        let target = after[..end].split_whitespace().next().unwrap_or("");
        targets.push(target.to_owned());
        rest = &after[end..];
    }
    targets
}

/// GitHub's heading anchors of a Markdown text: lowercase, spaces to `-`, punctuation other
/// than `-` and `_` dropped, a repeated heading numbered `-1`, `-2`, ….
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let Some(heading) = line.strip_prefix('#') else {
            continue;
        };
        let heading = heading.trim_start_matches('#');
        if !heading.starts_with(' ') {
            continue;
        }
        let base = markdown::anchor(heading);
        let mut anchor = base.clone();
        let mut number = 0;
        while seen.contains(&anchor) {
            number += 1;
            anchor = format!("{base}-{number}");
        }
        seen.insert(anchor);
    }
    seen
}

fn is_external(target: &str) -> bool {
    target.starts_with("http://") || target.starts_with("https://") || target.starts_with("mailto:")
}

/// Every broken link of `file`, as `file:line: target: why`.
fn broken_links(file: &Path) -> Vec<String> {
    let root = repository();
    let text = std::fs::read_to_string(file).unwrap();
    let shown = file
        .strip_prefix(&root)
        .unwrap_or(file)
        .display()
        .to_string();
    let mut broken = Vec::new();
    for (number, line) in prose_lines(&text) {
        for target in link_targets(line) {
            if target.is_empty() || is_external(&target) {
                continue;
            }
            let (path, fragment) = match target.split_once('#') {
                Some((path, fragment)) => (path, Some(fragment)),
                None => (target.as_str(), None),
            };
            let linked = if path.is_empty() {
                file.to_path_buf()
            } else {
                file.parent().unwrap().join(path)
            };
            if !linked.exists() {
                broken.push(format!("{shown}:{number}: {target}: no such file"));
                continue;
            }
            let Some(fragment) = fragment else { continue };
            if linked
                .extension()
                .is_some_and(|extension| extension == "md")
            {
                let headings = anchors(&std::fs::read_to_string(&linked).unwrap());
                if !headings.contains(fragment) {
                    broken.push(format!(
                        "{shown}:{number}: {target}: no heading `#{fragment}` there"
                    ));
                }
            }
        }
    }
    broken
}

#[test]
fn every_relative_link_of_the_documentation_resolves() {
    let broken: Vec<String> = documents()
        .iter()
        .flat_map(|file| broken_links(file))
        .collect();
    assert!(
        broken.is_empty(),
        "broken links (a path relative to the file that links, or a heading that does not exist):\n{}",
        broken.join("\n")
    );
}

#[test]
fn every_chapter_is_in_the_table_of_contents() {
    let root = repository();
    let summary = std::fs::read_to_string(root.join("docs/SUMMARY.md")).unwrap();
    let listed: BTreeSet<String> = prose_lines(&summary)
        .into_iter()
        .flat_map(|(_, line)| link_targets(line))
        .collect();
    for file in documents() {
        if file.parent() != Some(root.join("docs").as_path()) {
            continue;
        }
        let name = file.file_name().unwrap().to_str().unwrap().to_owned();
        if name != "SUMMARY.md" {
            assert!(
                listed.contains(&name),
                "docs/{name} is not in docs/SUMMARY.md: add it to the book's table of contents"
            );
        }
    }
}

#[test]
fn the_checker_finds_a_broken_link_and_a_missing_heading() {
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("page.md");
    std::fs::write(
        &file,
        "# Title\n\n[ok](#title) [gone](missing.md) [anchor](page.md#nowhere)\n\n```\n[in code](nope.md)\n```\n",
    )
    .unwrap();
    let broken = broken_links(&file);
    assert_eq!(broken.len(), 2, "{broken:?}");
    assert!(broken[0].contains("missing.md: no such file"));
    assert!(broken[1].contains("no heading `#nowhere`"));
}

/// The README's CI snippet is a short form of the workflow `init` writes: each command it runs
/// is one the template runs, so copying either gives the same job.
#[test]
fn the_readme_ci_snippet_runs_what_the_workflow_template_runs() {
    let root = repository();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let template = std::fs::read_to_string(root.join("templates/github-workflow.yml")).unwrap();
    let template_commands: BTreeSet<&str> = template
        .lines()
        .filter_map(|line| line.trim().strip_prefix("run: "))
        .collect();
    let snippet_commands: Vec<&str> = readme
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- run: "))
        .collect();
    assert!(
        snippet_commands.len() >= 3,
        "the README has no CI snippet with its `- run:` steps"
    );
    for command in snippet_commands {
        assert!(
            template_commands.contains(command),
            "README.md's CI snippet runs `{command}`, which templates/github-workflow.yml does not"
        );
    }
}
