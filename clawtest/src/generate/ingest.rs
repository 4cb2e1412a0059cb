//! Ingest: the Generator's answer → a [`Task`], or every problem with it located in the
//! answer's text. Code fences are stripped, then the text is loaded exactly as a task file is
//! (`task::parse`: the raw tree, ClawEnvKit's 12 structural checks, clawtest's own), so a
//! generated task fails with the very errors `cargo clawtest validate` would show.

use std::path::Path;

use serde::de::DeserializeOwned;

use crate::services::Catalogue;
use crate::task::{self, InvalidTask, Problem, Task};

/// The stack of the thread an answer's YAML is read on: the reader recurses once per nesting
/// level, up to `task::MAX_DEPTH`, which a runtime thread's 2 MiB may not hold in a debug build.
const READ_STACK: usize = 16 * 1024 * 1024;

/// What a model's answer holds for the reader, in the shapes real models answer in: a
/// reasoning model's `<think>…</think>` preamble dropped; then the first fenced block (```` ```yaml
/// … ``` ````), wherever it stands (models put prose before and after it; a block cut off by the
/// answer's end runs to the end, so a truncated answer fails at its last line, located); else
/// the whole text, trimmed.
pub fn strip_fences(answer: &str) -> &str {
    let text = without_thinking(answer).trim();
    first_fenced_block(text).unwrap_or(text)
}

/// The answer after a leading `<think>…</think>` block, or the answer.
fn without_thinking(answer: &str) -> &str {
    answer
        .trim_start()
        .strip_prefix("<think>")
        .and_then(|rest| rest.split_once("</think>"))
        .map_or(answer, |(_, after)| after)
}

/// The body of the first block whose opening line starts with ```` ``` ```` (its info string,
/// `yaml` or `json`, ends that line), up to the next line that starts with ```` ``` ```` or the
/// end of the text.
fn first_fenced_block(text: &str) -> Option<&str> {
    let opening = if text.starts_with("```") {
        0
    } else {
        text.find("\n```")? + 1
    };
    let after = &text[opening..];
    let body = after.split_once('\n').map_or("", |(_, body)| body);
    let body = if body.starts_with("```") {
        ""
    } else {
        body.split_once("\n```").map_or(body, |(inside, _)| inside)
    };
    Some(body.trim_matches('\n'))
}

/// Loads `answer` as the task file `path` (which need not exist: it names the answer in
/// messages and anchors `files:`), its services looked up in `catalogue`, with the task
/// loader's limits (size, depth, values).
pub fn ingest(answer: &str, path: &Path, catalogue: &Catalogue) -> Result<Task, InvalidTask> {
    task::load_bytes(path, strip_fences(answer).as_bytes().to_vec(), catalogue)
}

/// An answer that is not a task (the parser's, a service description) read raw: fences
/// stripped, then YAML or JSON within the task loader's limits (as a located tree, or a plain
/// value), a syntax error located.
pub(crate) fn read_value<T: DeserializeOwned + Send>(answer: &str) -> Result<T, Box<Problem>> {
    let text = strip_fences(answer);
    if text.len() as u64 > task::MAX_TASK_BYTES {
        return Err(Box::new(Problem::new(
            "(answer)",
            format!(
                "the answer is {} bytes; at most {} are read",
                text.len(),
                task::MAX_TASK_BYTES
            ),
            None,
        )));
    }
    std::thread::scope(|scope| {
        let reader = std::thread::Builder::new()
            .name("clawtest-answer".into())
            .stack_size(READ_STACK)
            .spawn_scoped(scope, || task::yaml::<T>(text));
        match reader {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(error) => Err(Box::new(Problem::new(
                "(answer)",
                format!("cannot start a thread to read the answer: {error}"),
                None,
            ))),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_are_stripped_with_their_info_string() {
        assert_eq!(strip_fences("```yaml\ntask_id: a\n```\n"), "task_id: a");
        assert_eq!(strip_fences("```\ntask_id: a\n```"), "task_id: a");
        assert_eq!(strip_fences("  task_id: a\n"), "task_id: a");
        // An unterminated fence keeps what follows it.
        assert_eq!(strip_fences("```yaml\ntask_id: a\n"), "task_id: a");
        // Prose around the block, a thinking preamble, an empty block.
        assert_eq!(
            strip_fences("Here is the task:\n\n```yaml\ntask_id: a\n```\nHope it helps!"),
            "task_id: a"
        );
        assert_eq!(
            strip_fences("<think>\nThe user wants ```x```.\n</think>\n```yaml\ntask_id: a\n```"),
            "task_id: a"
        );
        assert_eq!(
            strip_fences("<think>plan</think>\ntask_id: a"),
            "task_id: a"
        );
        assert_eq!(strip_fences("```yaml\n```"), "");
    }

    #[test]
    fn a_broken_answer_fails_with_the_located_errors_of_validate() {
        let path = Path::new("generated/t-001.yaml");
        let invalid = ingest(
            "```yaml\ntask_id: t\nprompt: [unclosed\n```",
            path,
            &Catalogue::builtin(),
        )
        .unwrap_err();
        let plain = invalid.plain();
        assert!(plain.starts_with("generated/t-001.yaml:"), "{plain}");
        assert!(invalid.problems[0].position.is_some(), "{plain}");
    }

    #[test]
    fn a_hostile_answer_is_a_problem_not_a_crash() {
        let deep = "[".repeat(200_000);
        let problem = read_value::<serde_json::Value>(&deep).unwrap_err();
        assert!(problem.message.contains("nest"), "{problem:?}");
        let huge = "a".repeat(task::MAX_TASK_BYTES as usize + 1);
        let problem = read_value::<serde_json::Value>(&huge).unwrap_err();
        assert!(problem.message.contains("at most"), "{problem:?}");
        let invalid = ingest(&deep, Path::new("t.yaml"), &Catalogue::builtin()).unwrap_err();
        assert!(!invalid.problems.is_empty());
    }
}
