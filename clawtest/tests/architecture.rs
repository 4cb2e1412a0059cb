//! The library's imports run one way: each top-level module imports only modules of the layers
//! below its own (ARCHITECTURE.md and the crate docs draw the same map). A `crate::…` path in a
//! module's code that points at its own layer or above fails here, naming the file and line, so a
//! cycle cannot come back unnoticed. Test code (`tests.rs` files and `#[cfg(test)] mod tests`
//! blocks) may reach anywhere. Inside a module, its files import one another without a circle.

use std::path::{Path, PathBuf};

/// Bottom first. A module may import the modules of the layers before its own.
const LAYERS: &[&[&str]] = &[
    &[
        "difficulty",
        "method",
        "fault",
        "spelling",
        "escape",
        "persist",
        "pdf",
    ],
    &[
        "config",
        "http",
        "discover",
        "interrupt",
        "init",
        "workspace_files",
    ],
    &["services"],
    &["task"],
    &["trajectory"],
    &["grade", "world", "llm", "sandbox"],
    &["judge", "results", "surfaces", "rust_harness"],
    &["report", "serve", "oracle", "closed_loop", "cassettes"],
    &["accept"],
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

// ---------------------------------------------------------------------------------------------
// No circles between the files of one module.
//
// Inside a module (a folder), its files are the nodes: `run/plan.rs`, `run/executor.rs`, a
// sub-folder (`llm/gateway/`) as one node. A file that names a sibling (by `super::x`,
// `self::x` in a `mod.rs`, or `crate::module::x`, in a `use` or in the body) depends on it; a
// file deeper down counts as its ancestor among the siblings. The module's own `mod.rs` is its
// face (it declares and re-exports its files) and no node. A circle of any length fails.

/// A module's path (`["run", "trial"]`) for a source file, `None` for the crate root.
fn module_path(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .components()
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_string());
    }
    parts
}

/// Test code: `tests.rs` files and everything under a `tests` folder.
fn is_test_file(relative: &Path) -> bool {
    relative
        .components()
        .any(|part| part.as_os_str() == "tests" || part.as_os_str() == "tests.rs")
}

/// Every path a text names from `crate::`, `super::` or `self::`, a group's items each as a
/// path of its own: `use super::{a::B, c};` gives `super::a::B` and `super::c`. Segments come
/// back as written, the first one being `crate`, `super` or `self`.
fn module_paths(code: &str) -> Vec<Vec<String>> {
    let bytes = code.as_bytes();
    let is_word = |byte: u8| byte.is_ascii_alphanumeric() || byte == b'_';
    let mut paths = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let rest = &code[at..];
        let starts = ["crate::", "super::", "self::"]
            .iter()
            .any(|start| rest.starts_with(start));
        let after_word = at > 0 && (is_word(bytes[at - 1]) || bytes[at - 1] == b'$');
        let after_path = code[..at].trim_end().ends_with("::");
        if starts && !after_word && !after_path {
            let (tree, used) = path_tree(rest);
            paths.extend(tree);
            at += used.max(1);
        } else {
            at += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
    paths
}

/// Reads one path (with nested `{…}` groups) from the start of `text`: its paths, flattened,
/// and how many bytes it took.
fn path_tree(text: &str) -> (Vec<Vec<String>>, usize) {
    let mut prefix = Vec::new();
    let mut at = 0;
    loop {
        at += text[at..].len() - text[at..].trim_start().len();
        let rest = &text[at..];
        if rest.starts_with('{') {
            at += 1;
            let mut paths = Vec::new();
            loop {
                at += text[at..].len() - text[at..].trim_start().len();
                if text[at..].starts_with('}') {
                    at += 1;
                    break;
                }
                if text[at..].is_empty() {
                    break;
                }
                let (items, used) = path_tree(&text[at..]);
                for item in items {
                    let mut path = prefix.clone();
                    // `{self, …}` is the prefix itself.
                    path.extend(item.into_iter().filter(|segment| segment != "self"));
                    paths.push(path);
                }
                at += used;
                at += text[at..].len() - text[at..].trim_start().len();
                if text[at..].starts_with(',') {
                    at += 1;
                } else if !text[at..].starts_with('}') {
                    break;
                }
            }
            return (paths, at);
        }
        let word = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if word == 0 {
            return (vec![prefix], at);
        }
        prefix.push(rest[..word].to_string());
        at += word;
        match text[at..].strip_prefix("::") {
            Some(_) => at += 2,
            None => return (vec![prefix], at),
        }
    }
}

/// The module a path names in a file of module `own`: its longest prefix that is a module.
fn resolve(own: &[String], path: &[String], modules: &[Vec<String>]) -> Option<Vec<String>> {
    let mut segments = path.iter().peekable();
    let mut current: Vec<String> = match segments.next()?.as_str() {
        "crate" => Vec::new(),
        "self" => own.to_vec(),
        "super" => own[..own.len().checked_sub(1)?].to_vec(),
        _ => return None,
    };
    while segments.peek().is_some_and(|segment| *segment == "super") {
        segments.next();
        current.pop()?;
    }
    for segment in segments {
        let mut next = current.clone();
        next.push(segment.clone());
        if !modules.contains(&next) {
            break;
        }
        current = next;
    }
    Some(current)
}

/// The dependency between two siblings that `from` naming `to` makes: their ancestors just
/// below the deepest module holding both, when neither is that module and it is not the crate
/// root (the layers above judge top-level modules).
fn sibling_edge(from: &[String], to: &[String]) -> Option<(Vec<String>, Vec<String>)> {
    let common = from
        .iter()
        .zip(to)
        .take_while(|(left, right)| left == right)
        .count();
    if common == 0 || common >= from.len() || common >= to.len() {
        return None;
    }
    Some((from[..=common].to_vec(), to[..=common].to_vec()))
}

/// The circles of a graph: each strongly connected part with more than one node, its nodes
/// sorted, the parts sorted (Tarjan's algorithm).
fn circles<N: Ord + Clone>(edges: &[(N, N)]) -> Vec<Vec<N>> {
    use std::collections::BTreeMap;
    let mut next: BTreeMap<N, Vec<N>> = BTreeMap::new();
    for (from, to) in edges {
        next.entry(from.clone()).or_default().push(to.clone());
        next.entry(to.clone()).or_default();
    }
    struct Search<N> {
        index: BTreeMap<N, usize>,
        low: BTreeMap<N, usize>,
        stack: Vec<N>,
        parts: Vec<Vec<N>>,
    }
    fn visit<N: Ord + Clone>(node: &N, next: &BTreeMap<N, Vec<N>>, search: &mut Search<N>) {
        let number = search.index.len();
        search.index.insert(node.clone(), number);
        search.low.insert(node.clone(), number);
        search.stack.push(node.clone());
        for target in &next[node] {
            if !search.index.contains_key(target) {
                visit(target, next, search);
                let low = search.low[node].min(search.low[target]);
                search.low.insert(node.clone(), low);
            } else if search.stack.contains(target) {
                let low = search.low[node].min(search.index[target]);
                search.low.insert(node.clone(), low);
            }
        }
        if search.low[node] == search.index[node] {
            let mut part = Vec::new();
            while let Some(member) = search.stack.pop() {
                let done = &member == node;
                part.push(member);
                if done {
                    break;
                }
            }
            if part.len() > 1 {
                part.sort();
                search.parts.push(part);
            }
        }
    }
    let mut search = Search {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        parts: Vec::new(),
    };
    for node in next.keys() {
        if !search.index.contains_key(node) {
            visit(node, &next, &mut search);
        }
    }
    search.parts.sort();
    search.parts
}

/// One shortest way round a circle, from its first node back to it: `a → b → a`.
fn way_round<N: Ord + Clone + std::fmt::Display>(part: &[N], edges: &[(N, N)]) -> String {
    let start = &part[0];
    let mut came_from: std::collections::BTreeMap<&N, &N> = std::collections::BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    let mut end = None;
    while let Some(node) = queue.pop_front() {
        for (from, to) in edges {
            if from != node || !part.contains(to) {
                continue;
            }
            if to == start {
                end = Some(node);
                queue.clear();
                break;
            }
            if !came_from.contains_key(to) {
                came_from.insert(to, node);
                queue.push_back(to);
            }
        }
    }
    let mut way = vec![start.to_string()];
    let mut node = end;
    while let Some(current) = node.filter(|current| *current != start) {
        way.push(current.to_string());
        node = came_from.get(current).copied();
    }
    way.push(start.to_string());
    let last = way.len() - 1;
    way[1..last].reverse();
    way.join(" → ")
}

/// The file of each module (`run/trial.rs`, `gateway/scripted/mod.rs`) and the dependencies
/// between siblings, as files, from the library's code without its tests.
fn sibling_dependencies() -> Vec<(String, String)> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    source_files(&source, &mut files);
    files.sort();
    let relatives: Vec<PathBuf> = files
        .iter()
        .map(|file| file.strip_prefix(&source).expect("under src").to_path_buf())
        .collect();
    let modules: Vec<Vec<String>> = relatives.iter().map(|file| module_path(file)).collect();
    let file_of = |module: &[String]| {
        let index = modules.iter().position(|known| known == module)?;
        Some(relatives[index].display().to_string())
    };
    let mut edges = Vec::new();
    for (file, relative) in files.iter().zip(&relatives) {
        if is_test_file(relative) {
            continue;
        }
        let own = module_path(relative);
        let text = std::fs::read_to_string(file).expect("readable source");
        let code: Vec<&str> = code_lines(&text)
            .into_iter()
            .map(|(_, line)| line)
            .collect();
        for path in module_paths(&code.join("\n")) {
            let Some(target) = resolve(&own, &path, &modules) else {
                continue;
            };
            if let Some((from, to)) = sibling_edge(&own, &target)
                && let (Some(from), Some(to)) = (file_of(&from), file_of(&to))
                && !edges.contains(&(from.clone(), to.clone()))
            {
                edges.push((from, to));
            }
        }
    }
    edges.sort();
    edges
}

#[test]
fn no_circle_between_the_files_of_one_module() {
    let edges = sibling_dependencies();
    // A reader that found no import would find no circle either.
    assert!(edges.len() > 50, "only {} dependencies found", edges.len());
    let found = circles(&edges);
    let found: Vec<String> = found
        .iter()
        .map(|part| format!("src/{}", way_round(part, &edges).replace(" → ", " → src/")))
        .collect();
    assert!(
        found.is_empty(),
        "files of one module import each other in a circle (each file imports the next):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_circle_finder_finds_circles_of_two_and_three_and_no_other() {
    let edge = |from: &str, to: &str| (from.to_string(), to.to_string());
    let edges = [
        edge("a", "b"),
        edge("b", "a"),
        edge("c", "d"),
        edge("d", "e"),
        edge("e", "c"),
        // A chain and a diamond are no circles.
        edge("f", "g"),
        edge("g", "h"),
        edge("i", "j"),
        edge("i", "k"),
        edge("j", "l"),
        edge("k", "l"),
        edge("b", "c"),
    ];
    assert_eq!(circles(&edges), [vec!["a", "b"], vec!["c", "d", "e"]]);
    let part = ["c", "d", "e"].map(String::from);
    assert_eq!(way_round(&part, &edges), "c → d → e → c");
    assert!(circles(&edges[5..11]).is_empty());
}

#[test]
fn the_reader_finds_sibling_paths_in_uses_and_bodies() {
    let paths = module_paths(
        "use super::{\n    harness_run::{self, Launch},\n    RunOptions,\n};\nlet x = crate::run::trial::go();\n$crate::run::x; other::super::y;",
    );
    let text: Vec<String> = paths.iter().map(|path| path.join("::")).collect();
    assert_eq!(
        text,
        [
            "super::harness_run",
            "super::harness_run::Launch",
            "super::RunOptions",
            "crate::run::trial::go"
        ]
    );
    let module = |text: &str| -> Vec<String> { text.split('/').map(String::from).collect() };
    let modules = [
        module("run"),
        module("run/trial"),
        module("run/harness_run"),
    ];
    let own = module("run/trial");
    let target = resolve(&own, &paths[1], &modules).unwrap();
    assert_eq!(target, module("run/harness_run"));
    assert_eq!(
        sibling_edge(&own, &target),
        Some((module("run/trial"), module("run/harness_run")))
    );
    // The module's own face and the crate root make no sibling edge.
    assert_eq!(sibling_edge(&own, &module("run")), None);
    assert_eq!(sibling_edge(&module("run"), &module("grade")), None);
    assert_eq!(
        module_path(Path::new("gateway/scripted/mod.rs")),
        module("gateway/scripted")
    );
}
