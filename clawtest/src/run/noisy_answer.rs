//! The warning about a graded stdout that does not look like an answer: large, or mostly log
//! lines and box-drawing rules. Frameworks that print their steps to stdout (smolagents,
//! CoPaw) get their logs graded as the answer, tool output included (a safety check then reads
//! a password the agent only listed); `[harness] answer = "file"` grades `agent_output.txt`
//! alone. [`Noticed`] keeps one warning per task, of its lowest-numbered noisy trial, so the
//! run's warnings are the same whatever order the trials finish in.

use std::collections::BTreeMap;

use crate::trajectory::{OutputOrigin, Trajectory};

/// A graded stdout at least this long is worth a look: an answer is a few lines.
pub(crate) const LARGE_BYTES: usize = 32 * 1024;

/// Fewer non-empty lines than this are an answer however they look.
const MIN_LINES: usize = 5;

/// What a graded stdout looks like when it is not an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Noise {
    /// Its size in bytes.
    pub(crate) bytes: usize,
    /// Its non-empty lines.
    pub(crate) lines: usize,
    /// How many of them are log lines or rules.
    pub(crate) log_lines: usize,
}

impl Noise {
    /// `output`'s noise, when it is large or more than half log lines and rules.
    pub(crate) fn of(output: &str) -> Option<Noise> {
        let lines: Vec<&str> = output
            .lines()
            .filter(|line| !line.trim().is_empty())
            .collect();
        let log_lines = lines.iter().filter(|line| is_log_line(line)).count();
        let noisy = output.len() >= LARGE_BYTES
            || (lines.len() >= MIN_LINES && log_lines * 2 > lines.len());
        noisy.then_some(Noise {
            bytes: output.len(),
            lines: lines.len(),
            log_lines,
        })
    }

    fn describe(&self) -> String {
        let size = if self.bytes >= 1024 {
            format!("{} KiB", self.bytes / 1024)
        } else {
            format!("{} bytes", self.bytes)
        };
        format!(
            "{size}, {} of its {} lines log lines or box-drawing rules",
            self.log_lines, self.lines
        )
    }
}

/// Whether a line is a log record (a timestamp or a level first) or a rule of box-drawing
/// or ASCII line characters.
fn is_log_line(line: &str) -> bool {
    let trimmed = line.trim();
    let drawn = trimmed
        .chars()
        .filter(|c| {
            matches!(
                c,
                '\u{2500}'..='\u{259F}' | '-' | '=' | '+' | '|' | '_' | '*'
            )
        })
        .count();
    let visible = trimmed.chars().filter(|c| !c.is_whitespace()).count();
    if drawn * 2 > visible {
        return true;
    }
    let first = trimmed
        .trim_start_matches(['[', '('])
        .split([' ', ']', ':', '|', ')'])
        .next()
        .unwrap_or_default();
    is_timestamp(first)
        || matches!(
            first.to_ascii_uppercase().as_str(),
            "TRACE" | "DEBUG" | "INFO" | "WARN" | "WARNING" | "ERROR" | "CRITICAL"
        )
}

/// `2026-12-02`, `2026-12-02T18:00:01`, `18:00:01` or `18:00:01.123`.
fn is_timestamp(word: &str) -> bool {
    let bytes = word.as_bytes();
    let shaped = |pattern: &[u8]| {
        bytes.len() >= pattern.len()
            && pattern.iter().zip(bytes).all(|(want, got)| match want {
                b'9' => got.is_ascii_digit(),
                separator => separator == got,
            })
    };
    shaped(b"9999-99-99") || shaped(b"99:99:99")
}

/// The noisy graded stdouts of a run's trials, one per task.
#[derive(Debug, Default)]
pub(crate) struct Noticed {
    /// Per task index, the lowest trial whose graded stdout was noisy, and its noise.
    by_task: BTreeMap<usize, (u32, String, Noise)>,
}

impl Noticed {
    /// Looks at trial `trial` of the task at `task` (its id `task_id`): a graded stdout
    /// that is noisy is kept, unless a lower trial of the task already was.
    pub(crate) fn look(&mut self, task: usize, trajectory: &Trajectory) {
        if trajectory.output_source != OutputOrigin::Stdout {
            return;
        }
        let Some(noise) = Noise::of(&trajectory.output) else {
            return;
        };
        let trial = trajectory.trial;
        let kept = self
            .by_task
            .get(&task)
            .is_some_and(|(kept, ..)| *kept < trial);
        if !kept {
            self.by_task
                .insert(task, (trial, trajectory.task_id.clone(), noise));
        }
    }

    /// One warning per task, in the suite's order.
    pub(crate) fn warnings(&self) -> Vec<String> {
        self.by_task
            .values()
            .map(|(trial, task_id, noise)| {
                format!(
                    "task {task_id}: the graded answer of trial {trial} is the harness's stdout, {}; if the harness logs its steps there, have it write its answer to agent_output.txt in $CLAWTEST_WORKSPACE and set `[harness] answer = \"file\"` (docs/configuration.md#harness)",
                    noise.describe()
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_answer_is_not_noise() {
        let answer = "I marked the report as completed.\n\nStill open:\n- Patch OpenSSL (pending)\n- Renew the certificate\n- Call Bob\n";
        assert_eq!(Noise::of(answer), None);
    }

    #[test]
    fn log_lines_and_rules_are_noise() {
        let logged = "2026-12-02 18:00:01 INFO Step 1: list_tasks\n\
                      ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━\n\
                      [DEBUG] tool output: {\"password\": \"hunter2\"}\n\
                      ╭──────────────── Step 2 ────────────────╮\n\
                      WARNING: retrying after 429\n\
                      The report is completed.\n";
        let noise = Noise::of(logged).unwrap();
        assert_eq!((noise.lines, noise.log_lines), (6, 5));
    }

    #[test]
    fn a_large_stdout_is_noise_whatever_its_lines() {
        let large = "an answer that goes on and on\n".repeat(LARGE_BYTES / 20);
        let noise = Noise::of(&large).unwrap();
        assert_eq!(noise.log_lines, 0);
        assert!(noise.bytes >= LARGE_BYTES);
    }

    fn trajectory(trial: u32, output: &str, output_source: OutputOrigin) -> Trajectory {
        let mut trajectory: Trajectory = serde_json::from_value(serde_json::json!({
            "task_id": "t", "trial": trial, "audit": [], "model_calls": [], "output": output,
            "output_source": "stdout", "stderr_tail": "", "workspace": {},
            "exit": {"code": 0, "timed_out": false}, "duration_ms": 1,
        }))
        .unwrap();
        trajectory.output_source = output_source;
        trajectory
    }

    #[test]
    fn one_warning_per_task_names_its_lowest_noisy_trial_whatever_the_order() {
        let log = "INFO a\nINFO b\nINFO c\nINFO d\nINFO e\nanswer";
        let mut noticed = Noticed::default();
        noticed.look(0, &trajectory(2, log, OutputOrigin::Stdout));
        noticed.look(0, &trajectory(0, "a plain answer", OutputOrigin::Stdout));
        noticed.look(0, &trajectory(1, log, OutputOrigin::Stdout));
        noticed.look(1, &trajectory(0, log, OutputOrigin::AgentOutputFile));
        let warnings = noticed.warnings();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].starts_with("task t: the graded answer of trial 1 is the harness's stdout, 41 bytes, 5 of its 6 lines"),
            "{warnings:?}"
        );
    }

    #[test]
    fn a_few_short_rules_are_an_answer() {
        assert_eq!(Noise::of("---\nDone.\n---\n"), None);
    }
}
