//! The library's imports run one way: each top-level module imports only modules of the layers
//! below its own (ARCHITECTURE.md and the crate docs draw the same map). A `crate::…` path in a
//! module's code that points at its own layer or above fails here, naming the file and line, so a
//! cycle cannot come back unnoticed. Test code (`tests.rs` files and `#[cfg(test)] mod tests`
//! blocks) may reach anywhere.

use std::path::{Path, PathBuf};

/// Bottom first. A module may import the modules of the layers before its own.
const LAYERS: &[&[&str]] = &[
    &["config", "http", "discover", "interrupt", "init"],
    &["services"],
    &["task"],
    &["trajectory"],
    &["grade", "world", "llm", "sandbox"],
    &["judge", "results", "surfaces", "rust_harness"],
    &["report", "serve", "oracle", "closed_loop"],
    &["variants"],
    &["run"],
    &["cargo_test", "validate", "generate"],
    &["private"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

fn source_files(folder: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(folder).expect("readable source folder") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            source_files(&path, files);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            files.push(path);
        }
    }
}

/// The code of a file without its inline test module (`mod tests`, of any visibility, after
/// `#[cfg(test)]`) and comments, line by line (1-based).
fn code_lines(text: &str) -> Vec<(usize, &str)> {
    let lines: Vec<&str> = text.lines().collect();
    let end = lines
        .windows(2)
        .position(|pair| pair[0] == "#[cfg(test)]" && pair[1].ends_with("mod tests {"))
        .unwrap_or(lines.len());
    lines[..end]
        .iter()
        .enumerate()
        .map(|(index, line)| (index + 1, *line))
        .filter(|(_, line)| !line.trim_start().starts_with("//"))
        .collect()
}

/// Every `crate::module` a line names, those of a group (`crate::{run, report::x}`) included.
fn crate_paths(line: &str) -> Vec<&str> {
    let word_end = |text: &str| {
        text.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(text.len())
    };
    let mut modules = Vec::new();
    for (at, _) in line.match_indices("crate::") {
        // `$crate::` and `clawtest_macros::crate::` are not this crate's paths.
        if line[..at].ends_with(|c: char| c == '$' || c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &line[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for item in group.split(',') {
                let item = item.trim();
                modules.push(&item[..word_end(item)]);
            }
        } else {
            modules.push(&rest[..word_end(rest)]);
        }
    }
    modules
}

#[test]
fn every_module_imports_only_layers_below_its_own() {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    source_files(&source, &mut files);
    files.sort();
    let mut wrong = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&source).expect("under src");
        let top = relative
            .components()
            .next()
            .expect("a file")
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        if top == "lib" || relative.file_name().is_some_and(|name| name == "tests.rs") {
            continue;
        }
        let own = layer_of(&top).unwrap_or_else(|| {
            panic!("src/{top} is in no layer of tests/architecture.rs: add it where it belongs")
        });
        let text = std::fs::read_to_string(file).expect("readable source");
        for (line_number, line) in code_lines(&text) {
            for module in crate_paths(line) {
                if module == top || module.is_empty() || module == "self" {
                    continue;
                }
                match layer_of(module) {
                    Some(layer) if layer < own => {}
                    _ => wrong.push(format!(
                        "src/{}:{line_number}: `{top}` imports `crate::{module}`, which is not below it",
                        relative.display()
                    )),
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the direction:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_check_sees_an_import_against_the_direction() {
    // The reader itself: a path is found, a `$crate::` path is not, test modules are skipped.
    assert_eq!(crate_paths("use crate::world::World;"), ["world"]);
    assert_eq!(
        crate_paths("use crate::{run, report::events::Event};"),
        ["run", "report"]
    );
    assert!(crate_paths("$crate::__private::run()").is_empty());
    let lines =
        code_lines("use crate::task::Task;\n#[cfg(test)]\nmod tests {\nuse crate::run;\n}\n");
    assert_eq!(lines, [(1, "use crate::task::Task;")]);
    let shared =
        "use crate::task::Task;\n#[cfg(test)]\npub(crate) mod tests {\nuse crate::run;\n}\n";
    assert_eq!(code_lines(shared), [(1, "use crate::task::Task;")]);
    assert!(layer_of("run") > layer_of("task"));
}
