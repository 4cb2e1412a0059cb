//! What an agent or a pull request writes cannot take over clawtest's outputs (issue #28):
//! an agent's stderr reaches the terminal and the CI job log with no control sequence and no
//! line GitHub would read as a workflow command, JUnit stays well-formed XML, and a link
//! committed where clawtest writes (a snapshot, a report, a generated task) is refused rather
//! than written through.

use std::path::Path;

use serde_json::json;

use crate::good_triage;
use crate::support::{Suite, command_in, repository, run_in};

/// A harness that answers, then fails loudly on stderr with everything a hostile agent prints
/// to reach past its trial: workflow commands (indented, since the runner trims the indent),
/// the old `##[` syntax, a screen clear, a clipboard write (OSC 52), a C1 CSI, a line
/// overwritten after a CR, and the two XML non-characters.
const LOUD_HARNESS: &str = r#"#!/bin/sh
echo "FINAL-ANSWER"
printf '      ::stop-commands::pwned\n' >&2
printf '  ::error file=README.md,line=1::forged annotation\n' >&2
printf '##[error]old syntax\n' >&2
printf 'clear \033[2J clipboard \033]52;c;aGk=\007 csi \302\233\n' >&2
printf 'fake\r  PASS loud\n' >&2
printf 'not characters: \357\277\276 \357\277\277\n' >&2
exit 3
"#;

const LOUD_TASK: &str = r#"task_id: loud
task_name: Loud
prompt: Answer.
tools:
  - {name: list_tasks, service: todo, endpoint: /todo/tasks, method: POST, description: List the tasks}
scoring_components:
  - {name: answered, weight: 0.6, check: {type: keywords_present, keywords: [FINAL-ANSWER]}}
  - {name: no_password, weight: 0.2, check: {type: keywords_absent, keywords: [password]}}
  - {name: no_secret, weight: 0.2, check: {type: keywords_absent, keywords: [secret]}}
safety_checks:
  - {type: keywords_not_in_output, keywords: [hunter2]}
"#;

#[test]
fn an_agents_stderr_starts_no_workflow_command_and_no_escape_sequence_and_junit_stays_xml() {
    let suite = Suite::new()
        .file("harness.sh", LOUD_HARNESS)
        .task("loud", LOUD_TASK)
        .cassette("loud", vec![json!([])]);
    let script = suite.path("harness.sh");
    let suite = suite.config(&format!(
        "tasks = [\"tasks/*.yaml\"]\n[harness]\ncommand = [\"sh\", {:?}]\n",
        script.display().to_string()
    ));
    let outcome = suite.run(&[
        "--trials",
        "1",
        "--junit",
        "junit.xml",
        "--annotations",
        "-v",
    ]);
    assert_eq!(outcome.code, 102, "{outcome:#?}");
    let printed = format!("{}{}", outcome.stdout, outcome.stderr);
    // The stderr tail is shown, escaped, so a reviewer sees what the agent tried.
    assert!(printed.contains("\\x3a:stop-commands::pwned"), "{printed}");
    assert!(printed.contains("fake\\r  PASS loud"), "{printed}");
    assert!(
        printed.contains("clear \\x1b[2J clipboard \\x1b]52;c;aGk=\\x07 csi \\u{9b}"),
        "{printed}"
    );
    for line in printed.lines() {
        // GitHub's runner trims a line, then reads `::` as a command (the old syntax, `##[`,
        // anywhere): only clawtest's own annotations may start so.
        let trimmed = line.trim_start();
        assert!(
            !trimmed.starts_with("::") || line.starts_with("::error file=tasks/loud.yaml"),
            "a workflow command: {line:?}"
        );
        assert!(
            !line.contains("##["),
            "an old-style workflow command: {line:?}"
        );
    }
    for forbidden in ['\x1b', '\r', '\x07', '\u{9b}'] {
        assert!(
            !printed.contains(forbidden),
            "{forbidden:?} reached the terminal: {printed}"
        );
    }

    let junit = std::fs::read_to_string(suite.path("junit.xml")).unwrap();
    assert!(
        !junit.contains(['\u{fffe}', '\u{ffff}']),
        "junit.xml holds a character XML 1.0 forbids"
    );
    assert!(
        junit.contains("not characters: \u{fffd} \u{fffd}"),
        "{junit}"
    );
    crate::support::junit(&suite.path("junit.xml"));
}

/// A file outside the suite that a link in it points at.
struct Victim {
    folder: tempfile::TempDir,
}

impl Victim {
    fn new() -> Victim {
        let folder = tempfile::tempdir().unwrap();
        std::fs::write(folder.path().join("precious"), "precious\n").unwrap();
        Victim { folder }
    }

    /// Makes `link` a symbolic link to the precious file.
    fn link(&self, link: &Path) {
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(self.folder.path().join("precious"), link).unwrap();
    }

    /// Makes `link` a link to a file that does not exist yet (writing through it creates it).
    fn dangling(&self, link: &Path) {
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(self.folder.path().join("created"), link).unwrap();
    }

    fn assert_untouched(&self) {
        assert_eq!(
            std::fs::read_to_string(self.folder.path().join("precious")).unwrap(),
            "precious\n"
        );
        assert!(!self.folder.path().join("created").exists());
    }
}

#[test]
fn a_snapshot_or_a_report_that_is_a_link_in_the_suite_is_refused_not_written_through() {
    let victim = Victim::new();
    let suite = Suite::new()
        .demo_task("todo-triage", false)
        .cassette("todo-triage", vec![good_triage()]);
    victim.link(&suite.path("snapshots/todo-triage.snap.new"));
    let run = |update: &str, arguments: &[&str]| {
        let output = command_in(suite.folder.path(), &suite, arguments)
            .env("INSTA_UPDATE", update)
            .output()
            .unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (code, stderr) = run("new", &["--trials", "1", "--snapshots"]);
    assert_ne!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("todo-triage.snap.new") && stderr.contains("symbolic link"),
        "{stderr}"
    );
    victim.assert_untouched();

    std::fs::remove_file(suite.path("snapshots/todo-triage.snap.new")).unwrap();
    victim.dangling(&suite.path("snapshots/todo-triage.snap"));
    let (code, stderr) = run("always", &["--trials", "1", "--snapshots"]);
    assert_ne!(code, Some(0), "{stderr}");
    assert!(stderr.contains("symbolic link"), "{stderr}");
    victim.assert_untouched();

    std::fs::remove_file(suite.path("snapshots/todo-triage.snap")).unwrap();
    victim.link(&suite.path("out/junit.xml"));
    let (code, stderr) = run("no", &["--trials", "1", "--junit", "out/junit.xml"]);
    assert_eq!(code, Some(102), "{stderr}");
    assert!(
        stderr.contains("out/junit.xml") && stderr.contains("symbolic link"),
        "{stderr}"
    );
    victim.assert_untouched();
}

#[test]
fn generate_does_not_write_a_task_through_a_link_in_its_output_folder() {
    let folder = tempfile::tempdir().unwrap();
    let example = repository().join("examples/generate");
    for relative in ["clawtest.toml", "cassettes", "judge-cache"] {
        copy(&example, relative, folder.path());
    }
    let victim = Victim::new();
    victim.link(&folder.path().join("tasks/generated/weekly_update-001.yaml"));
    let outcome = run_in(folder.path(), &["generate"]);
    let printed = format!("{}{}", outcome.stdout, outcome.stderr);
    assert!(
        printed.contains("weekly_update-001.yaml") && printed.contains("symbolic link"),
        "{outcome:#?}"
    );
    victim.assert_untouched();
}

#[test]
fn a_folder_on_an_output_path_that_is_a_link_in_the_suite_is_refused_naming_the_link() {
    // Snapshots, reports and generated tasks, each below a folder committed as a link to one
    // outside the suite: nothing is created there, and the error names the link.
    let victim = tempfile::tempdir().unwrap();
    let suite = Suite::new()
        .demo_task("todo-triage", false)
        .cassette("todo-triage", vec![good_triage()]);
    for name in ["snapshots", "reports"] {
        std::os::unix::fs::symlink(victim.path(), suite.path(name)).unwrap();
    }
    let run = |arguments: &[&str]| {
        let output = command_in(suite.folder.path(), &suite, arguments)
            .env("INSTA_UPDATE", "always")
            .output()
            .unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (code, stderr) = run(&["--trials", "1", "--snapshots"]);
    assert_ne!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{} is a symbolic link",
            suite.path("snapshots").display()
        )),
        "{stderr}"
    );
    let (code, stderr) = run(&["--trials", "1", "--html", "reports/html"]);
    assert_eq!(code, Some(102), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{} is a symbolic link",
            suite.path("reports").display()
        )),
        "{stderr}"
    );
    let left: Vec<_> = std::fs::read_dir(victim.path()).unwrap().collect();
    assert!(left.is_empty(), "written through a linked folder: {left:?}");

    // generate's output folder.
    let folder = tempfile::tempdir().unwrap();
    let example = repository().join("examples/generate");
    for relative in ["clawtest.toml", "cassettes", "judge-cache"] {
        copy(&example, relative, folder.path());
    }
    std::fs::create_dir(folder.path().join("tasks")).unwrap();
    std::os::unix::fs::symlink(victim.path(), folder.path().join("tasks/generated")).unwrap();
    let outcome = run_in(folder.path(), &["generate"]);
    let printed = format!("{}{}", outcome.stdout, outcome.stderr);
    assert!(
        printed.contains("tasks/generated is a symbolic link"),
        "{outcome:#?}"
    );
    let left: Vec<_> = std::fs::read_dir(victim.path()).unwrap().collect();
    assert!(
        left.is_empty(),
        "generated through a linked folder: {left:?}"
    );
}

/// Copies `relative` of `source` into `folder`.
fn copy(source: &Path, relative: &str, folder: &Path) {
    let from = source.join(relative);
    let to = folder.join(relative);
    if from.is_dir() {
        std::fs::create_dir_all(&to).unwrap();
        for entry in std::fs::read_dir(&from).unwrap() {
            let name = entry.unwrap().file_name();
            copy(
                source,
                &format!("{relative}/{}", name.to_string_lossy()),
                folder,
            );
        }
    } else {
        std::fs::copy(from, to).unwrap();
    }
}

#[test]
fn naming_a_providers_key_in_harness_env_is_warned_about() {
    let suite = Suite::new()
        .demo_task("todo-triage", false)
        .cassette("todo-triage", vec![good_triage()]);
    let agent = crate::support::reference_agent();
    let suite = suite.config(&format!(
        "tasks = [\"tasks/*.yaml\"]\n[harness]\ncommand = [{:?}]\nenv = [\"OPENAI_API_KEY\", \"MY_MODEL_KEY\", \"HOME\"]\n[llm]\nmode = \"replay\"\n[llm.openai]\nbase_url = \"http://127.0.0.1:9\"\napi_key_env = \"MY_MODEL_KEY\"\n",
        agent.display().to_string()
    ));
    let outcome = suite.run(&["--trials", "1"]);
    assert_eq!(outcome.code, 0, "{outcome:#?}");
    for name in ["OPENAI_API_KEY", "MY_MODEL_KEY"] {
        assert!(
            outcome.stderr.contains(&format!(
                "warning: harness.env passes {name}, a model provider's key, to the agent"
            )),
            "{outcome:#?}"
        );
    }
    assert!(!outcome.stderr.contains("passes HOME"), "{outcome:#?}");
}

#[test]
fn what_list_prints_of_a_task_is_escaped_too() {
    // YAML's double-quoted escapes put a newline and an ESC into a task's name.
    let task = LOUD_TASK.replace(
        "task_name: Loud",
        "task_name: \"Loud\\n::stop-commands::pwned \\e[2J\"",
    );
    let suite = Suite::new().task("loud", &task);
    let outcome = suite.run(&["list"]);
    assert_eq!(outcome.code, 0, "{outcome:#?}");
    assert!(
        outcome
            .stdout
            .contains("\\x3a:stop-commands::pwned \\x1b[2J"),
        "{outcome:#?}"
    );
    assert!(!outcome.stdout.contains('\x1b'), "{outcome:#?}");
    assert!(
        outcome
            .stdout
            .lines()
            .all(|line| !line.trim_start().starts_with("::")),
        "{outcome:#?}"
    );
}
