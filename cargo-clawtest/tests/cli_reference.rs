//! The command-line reference, `docs/cli.md`, is generated from the clap definition of the
//! command line (`cargo-clawtest/src/cli.rs`) and checked here, so the book cannot drift from
//! the tool: every command's and subcommand's `--help`, as a user sees it, in one Markdown
//! page. A difference fails the test; `CLAWTEST_UPDATE_DOCS=1` rewrites the page instead.

// The binary has no library target: its command-line definition is compiled in here as is.
#[allow(dead_code)]
#[path = "../src/cli.rs"]
mod cli;
mod markdown;

use std::path::{Path, PathBuf};

use clap::CommandFactory;

/// Set to `1` to rewrite `docs/cli.md` from the command line instead of comparing with it.
const UPDATE_VARIABLE: &str = "CLAWTEST_UPDATE_DOCS";

/// The help's width in columns, fixed so the page does not depend on the terminal.
const WIDTH: usize = 100;

fn reference_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/cli.md")
}

/// The names of every visible command under `command`, depth first, each as the words typed
/// after `cargo clawtest` (the root is the empty list). Hidden commands are internal.
fn command_paths(command: &clap::Command, prefix: &[String], paths: &mut Vec<Vec<String>>) {
    paths.push(prefix.to_vec());
    for subcommand in command.get_subcommands() {
        if subcommand.is_hide_set() {
            continue;
        }
        let mut path = prefix.to_vec();
        path.push(subcommand.get_name().to_owned());
        command_paths(subcommand, &path, paths);
    }
}

/// What `cargo clawtest <path…> --help` prints, through clap's own parsing (so global flags
/// and the usage line are as a user sees them), without colours or trailing spaces.
fn long_help(path: &[String]) -> String {
    let command = cli::Cli::command().term_width(WIDTH).max_term_width(WIDTH);
    let arguments = std::iter::once("cargo-clawtest".to_owned())
        .chain(path.iter().cloned())
        .chain(std::iter::once("--help".to_owned()));
    let error = match command.try_get_matches_from(arguments) {
        Ok(_) => panic!("`{} --help` did not print the help", path.join(" ")),
        Err(error) => error,
    };
    assert_eq!(
        error.kind(),
        clap::error::ErrorKind::DisplayHelp,
        "`{} --help` did not print the help",
        path.join(" ")
    );
    let text = error.render().to_string();
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    lines.join("\n").trim_end().to_owned()
}

/// The whole reference page.
fn render_reference() -> String {
    let mut paths = Vec::new();
    command_paths(&cli::Cli::command(), &[], &mut paths);
    let mut page = String::from(
        "# Command-line reference\n\n\
         <!-- Generated from cargo-clawtest/src/cli.rs by cargo-clawtest/tests/cli_reference.rs; \
         do not edit by hand. Update with:\n     \
         CLAWTEST_UPDATE_DOCS=1 cargo test -p cargo-clawtest --test cli_reference -->\n\n\
         Every command's `--help`, as `cargo clawtest` prints it. `cargo clawtest FILTER…` \
         without a command is `cargo clawtest run FILTER…`; `--config PATH` is accepted by \
         every command. The exit codes are in [the guide](guide.md#exit-codes).\n\n\
         Commands:\n\n",
    );
    for path in &paths {
        let name = command_name(path);
        page.push_str(&format!("- [`{name}`](#{})\n", markdown::anchor(&name)));
    }
    for path in &paths {
        let name = command_name(path);
        page.push_str(&format!(
            "\n## `{name}`\n\n```text\n{}\n```\n",
            long_help(path)
        ));
    }
    page
}

fn command_name(path: &[String]) -> String {
    std::iter::once("cargo clawtest")
        .chain(path.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn the_cli_reference_is_the_help_of_every_command() {
    let rendered = render_reference();
    let path = reference_path();
    if std::env::var(UPDATE_VARIABLE).is_ok_and(|value| value == "1") {
        std::fs::write(&path, &rendered).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != rendered {
        let first_difference = committed
            .lines()
            .zip(rendered.lines())
            .position(|(old, new)| old != new)
            .map_or_else(
                || committed.lines().count().min(rendered.lines().count()) + 1,
                |index| index + 1,
            );
        panic!(
            "docs/cli.md is not the help of the command line (first difference at line \
             {first_difference}).\nThe command line changed: regenerate the reference with\n\n    \
             {UPDATE_VARIABLE}=1 cargo test -p cargo-clawtest --test cli_reference\n\nand \
             commit docs/cli.md."
        );
    }
}

#[test]
fn every_visible_command_is_in_the_reference() {
    let mut paths = Vec::new();
    command_paths(&cli::Cli::command(), &[], &mut paths);
    let rendered = render_reference();
    for expected in ["run", "validate", "generate", "serve"] {
        assert!(
            paths.iter().any(|path| path == &[expected.to_owned()]),
            "`{expected}` is missing from the walk: {paths:?}"
        );
        assert!(rendered.contains(&format!("## `cargo clawtest {expected}`")));
    }
    assert!(
        !paths
            .iter()
            .any(|path| path == &["oracle-agent".to_owned()]),
        "a hidden command is documented"
    );
    // The flags a new user could not find in the old usage list.
    for flag in ["--config <PATH>", "--baseline-tolerance"] {
        assert!(rendered.contains(flag), "{flag} is not in the reference");
    }
}
