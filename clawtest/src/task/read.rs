//! From a path to YAML values, with every hostile or broken input ending in one located problem
//! within bounded time and memory: a file too large is refused before it is read, bytes that
//! are not UTF-8 are pointed at, and the YAML parser runs under a budget (nesting depth, node
//! count, alias expansion) and refuses duplicate keys. Its errors are reworded for people who
//! write task files, not for people who configure parsers.

use std::io::Read;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde_saphyr::{Budget, DuplicateKeyPolicy, Options};

use super::error::{Position, Problem, line_around};

/// The largest task file read. A task with inline fixtures is kilobytes, a generated one stays
/// far under a megabyte; data that is really large belongs in `files:`.
pub const MAX_TASK_BYTES: u64 = 8 * 1024 * 1024;

/// How deeply maps and lists may nest. ClawEnvKit's deepest (fixtures of nested records) is
/// under ten levels.
pub const MAX_DEPTH: usize = 64;

/// How many values a document may hold, aliases expanded: bounds an alias bomb's time and memory.
pub const MAX_NODES: usize = 100_000;

/// Opens a file of a task's folder (the task, its atoms) for reading: a regular file only. A
/// FIFO, a device or a socket (or a link to one, `/dev/stdin`, `/dev/zero`) is refused: the
/// open does not wait for a FIFO's writer (`O_NONBLOCK`), and the type is that of the file
/// opened, so nothing is swapped in between.
pub(crate) fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::CLOEXEC;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file (a FIFO, a device or a socket, or a link to one)",
        ));
    }
    Ok(file)
}

/// The bytes of the regular file at `path` ([`open_regular`]), refused past `cap` bytes
/// (read up to one byte past it, so a larger file or a device is never read whole).
pub(crate) fn read_regular(path: &Path, cap: u64) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open_regular(path)?
        .take(cap.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {cap} bytes, the most read from it"),
        ));
    }
    Ok(bytes)
}

/// Reads a task file's bytes: at most one past [`MAX_TASK_BYTES`], which is enough to tell
/// that it is too large without reading the rest; a regular file only ([`open_regular`]).
pub(crate) fn read_bytes(path: &Path) -> Result<Vec<u8>, Box<Problem>> {
    let file = open_regular(path).map_err(|error| {
        Box::new(
            Problem::new("(file)", format!("cannot read the file: {error}"), None).with_help(
                "a task file is a regular file: check the path and its permissions, or remove what is not one",
            ),
        )
    })?;
    let mut bytes = Vec::new();
    file.take(MAX_TASK_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| {
            Box::new(Problem::new(
                "(file)",
                format!("cannot read the file: {error}"),
                None,
            ))
        })?;
    Ok(bytes)
}

/// A task file's bytes as text: at most [`MAX_TASK_BYTES`], and UTF-8. A problem comes with
/// the text read so far (lossy), for the excerpt.
pub(crate) fn text(bytes: Vec<u8>) -> Result<String, (Box<Problem>, String)> {
    if bytes.len() as u64 > MAX_TASK_BYTES {
        return Err((Box::new(too_large()), String::new()));
    }
    decode(bytes)
}

fn too_large() -> Problem {
    Problem::new(
        "(file)",
        format!(
            "the file is larger than {} MiB; a task file is not read past that",
            MAX_TASK_BYTES / (1024 * 1024)
        ),
        Some(Position::START),
    )
    .with_help("keep large data in files next to the task and copy them in with `files:`")
}

/// The bytes as text, or a problem at the first byte that is not UTF-8.
fn decode(bytes: Vec<u8>) -> Result<String, (Box<Problem>, String)> {
    match String::from_utf8(bytes) {
        Ok(text) => Ok(text),
        Err(error) => {
            let offset = error.utf8_error().valid_up_to();
            let bytes = error.into_bytes();
            let before = &bytes[..offset];
            let line = before.iter().filter(|byte| **byte == b'\n').count() as u64 + 1;
            let line_start = line_around(&bytes, offset).start;
            // Columns count characters, and everything before `offset` is valid UTF-8.
            let column = String::from_utf8_lossy(&before[line_start..])
                .chars()
                .count() as u64
                + 1;
            // The lossy text has the same bytes up to `offset`, so the span still points there.
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let problem = Problem::new(
                "(file)",
                format!(
                    "byte 0x{:02X} is not UTF-8 text (a task file must be UTF-8)",
                    bytes[offset]
                ),
                Some(Position {
                    line,
                    column,
                    span: Some((offset, 1)),
                }),
            )
            .with_help("save the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8`)");
            Err((Box::new(problem), text))
        }
    }
}

/// Refuses text longer than [`MAX_TASK_BYTES`] handed to the loader directly (not from a file).
pub(crate) fn check_size(text: &str) -> Result<(), Box<Problem>> {
    if text.len() as u64 > MAX_TASK_BYTES {
        return Err(Box::new(too_large()));
    }
    Ok(())
}

/// The options every task document is parsed with.
pub(super) fn options() -> Options {
    // Both are non-exhaustive: set the fields on the defaults.
    let mut budget = Budget::default();
    budget.max_depth = MAX_DEPTH;
    budget.max_nodes = MAX_NODES;
    budget.flow_nesting_limit = MAX_DEPTH;
    let mut options = Options::default();
    options.budget = Some(budget);
    options.duplicate_keys = DuplicateKeyPolicy::Error;
    options
}

/// Parses `text` as `T`, or one located problem in a task writer's words.
pub(crate) fn yaml<T: DeserializeOwned>(text: &str) -> Result<T, Box<Problem>> {
    serde_saphyr::from_str_with_options(text, options()).map_err(|error| Box::new(problem(&error)))
}

fn problem(error: &serde_saphyr::Error) -> Problem {
    use serde_saphyr::Error;
    use serde_saphyr::budget::BudgetBreach;

    // The error that says what happened, without the wrappers that add excerpts or the alias
    // through which it was reached.
    // Located where the outermost error says: where an alias was used, not where it points.
    let position = error.location().and_then(Position::from_location);
    let mut error = error;
    while let Error::WithSnippet { error: inner, .. } | Error::AliasError { error: inner, .. } =
        error
    {
        error = inner;
    }
    let (message, help) = match error {
        Error::DuplicateMappingKey { key, .. } => (
            match key {
                Some(key) => format!("`{key}` is written twice in the same map"),
                None => "a key is written twice in the same map".to_string(),
            },
            "keep one of them: YAML does not allow a key twice, and which one a reader keeps differs between tools".to_string(),
        ),
        Error::Budget { breach, .. } => match breach {
            BudgetBreach::Depth { .. } => (
                format!("maps and lists nest more than {MAX_DEPTH} levels deep"),
                "a task file nests a few levels; check the indentation or the brackets here"
                    .to_string(),
            ),
            BudgetBreach::Nodes { .. } => (
                format!(
                    "the document holds more than {MAX_NODES} values (aliases `*name` counted as often as they are used)"
                ),
                "remove repeated aliases, or keep large data in files copied in with `files:`"
                    .to_string(),
            ),
            BudgetBreach::Aliases { .. }
            | BudgetBreach::AliasAnchorRatio { .. }
            | BudgetBreach::Anchors { .. } => (
                "the document uses too many aliases (`*name`)".to_string(),
                "write the values out; task files need no anchors or aliases".to_string(),
            ),
            other => (
                format!("the document is too large to read ({})", breach_name(other)),
                "keep large data in files copied in with `files:`".to_string(),
            ),
        },
        // The parser's own guard on flow nesting (`[[[[…`) has no location and no variant.
        other if reword(other) == "recursion limit exceeded" => (
            format!("maps and lists nest more than {MAX_DEPTH} levels deep"),
            "a task file nests a few levels; check the brackets".to_string(),
        ),
        other => {
            let message = reword(other);
            let help = syntax_help(&message);
            (message, help.to_string())
        }
    };
    Problem::new("(document)", message, position).with_help(help)
}

fn breach_name(breach: &serde_saphyr::budget::BudgetBreach) -> String {
    let text = format!("{breach:?}");
    text.split([' ', '{', '('])
        .next()
        .unwrap_or("limit")
        .to_string()
}

/// The parser's first line without the location it repeats (shown by the diagnostic already).
fn reword(error: &serde_saphyr::Error) -> String {
    let text = error.to_string();
    let mut first = text.lines().next().unwrap_or("invalid YAML").trim();
    first = first.strip_prefix("error: ").unwrap_or(first);
    if let Some(rest) = first.strip_prefix("line ")
        && let Some((_, message)) = rest.split_once(": ")
    {
        first = message;
    }
    match first.rfind(" at line ") {
        Some(index) => first[..index].to_string(),
        None => first.to_string(),
    }
}

/// What to look at for a YAML syntax error, by what the parser says.
fn syntax_help(message: &str) -> &'static str {
    if message.contains("tab") {
        "indent with spaces: YAML does not allow tabs in indentation"
    } else if message.contains("flow") || message.contains("bracket") {
        "close every `[` and `{` on this line, and quote text that holds `: `, `,`, `[`, `]`, `{`, `}` or `#`"
    } else if message.contains("indent") || message.contains("mapping values") {
        "check the indentation here and on the line above; quote text that holds `: `"
    } else if message.contains("quoted") || message.contains("quote") {
        "close the quote; inside double quotes write `\\\"` for a quote"
    } else {
        "a task file is a YAML map with task_id, task_name, prompt, scoring_components and safety_checks"
    }
}
