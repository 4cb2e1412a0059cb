//! The command checks (`exit_code`, `pytest_pass`): which shell commands a task needs run in
//! its sandbox once the harness has ended (planned here, purely, so the executor runs exactly
//! what the grader will look for), and how their results score.

use crate::task::{Check, Task};
use crate::trajectory::{CommandRun, Trajectory};

/// How long an `exit_code` command may run (ClawEnvKit's limit).
pub(crate) const EXIT_CODE_TIMEOUT_SECONDS: u64 = 30;
/// How long a `pytest_pass` run may take (ClawEnvKit's limit).
pub(crate) const PYTEST_TIMEOUT_SECONDS: u64 = 60;

/// One command to run after the harness: the shell line and its time limit in seconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PlannedCommand {
    pub command: String,
    pub timeout_seconds: u64,
}

/// The shell line a command check runs.
pub(crate) fn command_of(check: &Check) -> Option<PlannedCommand> {
    match check {
        Check::ExitCode { cmd, .. } => Some(PlannedCommand {
            command: cmd.clone(),
            timeout_seconds: EXIT_CODE_TIMEOUT_SECONDS,
        }),
        Check::PytestPass {
            test_file,
            pytest_args,
        } => Some(PlannedCommand {
            command: format!("python3 -m pytest {test_file} {pytest_args}")
                .trim_end()
                .to_string(),
            timeout_seconds: PYTEST_TIMEOUT_SECONDS,
        }),
        _ => None,
    }
}

/// Every command the task's checks need, in task order, without repeats.
pub(crate) fn plan(task: &Task) -> Vec<PlannedCommand> {
    let mut planned: Vec<PlannedCommand> = Vec::new();
    for command in task
        .components
        .iter()
        .filter_map(|component| command_of(&component.check))
    {
        if !planned
            .iter()
            .any(|existing| existing.command == command.command)
        {
            planned.push(command);
        }
    }
    planned
}

fn run_of<'a>(trajectory: &'a Trajectory, command: &str) -> Option<&'a CommandRun> {
    trajectory
        .commands
        .iter()
        .find(|run| run.command == command)
}

fn outcome(run: &CommandRun) -> String {
    let tail: String = run
        .output_tail
        .lines()
        .rev()
        .take(3)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect::<Vec<_>>()
        .join(" | ");
    match (run.timed_out, run.exit_code) {
        (true, _) => "timed out".into(),
        (false, Some(code)) if tail.is_empty() => format!("exit {code}"),
        (false, Some(code)) => format!("exit {code}: {tail}"),
        (false, None) => format!("did not run: {tail}"),
    }
}

/// Scores a command check from the trajectory's command runs.
pub(crate) fn score(check: &Check, trajectory: &Trajectory) -> (f64, String) {
    let Some(planned) = command_of(check) else {
        return (0.0, "not a command check".into());
    };
    let Some(run) = run_of(trajectory, &planned.command) else {
        return (
            0.0,
            format!("`{}` was not run in the sandbox", planned.command),
        );
    };
    let expected = match check {
        Check::ExitCode { expected_exit, .. } => *expected_exit,
        _ => 0,
    };
    let passed = !run.timed_out && run.exit_code.map(i64::from) == Some(expected);
    let reason = format!(
        "`{}`: {} (wanted exit {expected})",
        planned.command,
        outcome(run)
    );
    (if passed { 1.0 } else { 0.0 }, reason)
}
