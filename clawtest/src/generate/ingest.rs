//! Ingest: the Generator's answer → a [`Task`], or every problem with it located in the
//! answer's text. Code fences are stripped, then the text is loaded exactly as a task file is
//! (`spec::parse`: the raw tree, ClawEnvKit's 12 structural checks, clawtest's own), so a
//! generated task fails with the very errors `cargo clawtest validate` would show.

use std::path::Path;

use crate::services::Catalogue;
use crate::spec::{self, InvalidTask, Task};

/// The text inside a code fence (```` ```yaml … ``` ````), or the whole text trimmed.
pub fn strip_fences(answer: &str) -> &str {
    let text = answer.trim();
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    // The fence's info string (`yaml`, `json`) ends its line.
    let body = rest.split_once('\n').map_or("", |(_, body)| body);
    body.trim_end()
        .strip_suffix("```")
        .unwrap_or(body)
        .trim_matches('\n')
}

/// Loads `answer` as the task file `path` (which need not exist: it names the answer in
/// messages and anchors `files:`), its services looked up in `catalogue`.
pub fn ingest(answer: &str, path: &Path, catalogue: &Catalogue) -> Result<Task, InvalidTask> {
    spec::parse(path, strip_fences(answer).to_owned(), catalogue)
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
}
