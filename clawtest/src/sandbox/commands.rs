//! Where a task's commands (`exit_code`, `pytest_pass`) run outside a trial's own harness
//! run: the feasibility proof of `validate --feasibility`, `vary`, `run --variants` and
//! `generate`, and the checks of `run --oracle`. The rule is decided here and nowhere else:
//! **a task's commands run in the trial's sandbox.**
//!
//! - On the docker backend they run in a fresh container of the harness image (no network,
//!   no capabilities, the trial's limits), never on the host, whoever wrote them.
//! - On the process backend a command a person wrote in a task file runs on the host, as the
//!   checks of a `run` do; one that comes from a variant runs only when the user passed
//!   `--allow-host-commands`; one a model wrote never runs on the host at all.
//!
//! A [`CommandRule`] (the backend's [`CommandPlace`] and the user's permission) answers
//! [`CommandRule::for_origin`] with [`Commands`], the only way to run them ([`Commands::run`]):
//! a refusal is a value the caller reports, with what to do, never a silent skip.

use std::path::Path;

use tokio_util::sync::CancellationToken;

use super::contain::{Containment, Mechanism};
use super::docker::ContainerCommands;
use super::{CheckCommand, CheckOutcome, SandboxError};

/// Who wrote a task's commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A person, in a task file of the suite.
    Person,
    /// clawtest, as a variant of a person's task (`vary`, `run --variants`).
    Variant,
    /// A model (`generate --request`).
    Model,
}

/// Where a backend runs a task's commands.
#[derive(Debug, Clone, PartialEq)]
pub enum CommandPlace {
    /// On this host, in a scratch workspace (the process backend).
    Host,
    /// In a fresh container of the harness image (the docker backend).
    Container(ContainerCommands),
}

/// The rule of one command: the backend's place, and whether the user allowed the host for
/// commands clawtest wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandRule {
    place: CommandPlace,
    allow_host_commands: bool,
}

/// Why a task's commands are not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// A variant's commands, on the host, without `--allow-host-commands`.
    #[error("not run: the commands of a variant run on the host only with --allow-host-commands")]
    Variant,
    /// A model's commands, on the host.
    #[error("not run: clawtest never runs a command a model wrote on the host")]
    Model,
}

impl Refusal {
    /// What the user can do about it.
    pub fn advice(&self) -> &'static str {
        match self {
            Refusal::Variant => {
                "run with --backend docker to run them in a container of the harness image, or pass --allow-host-commands if you trust them"
            }
            Refusal::Model => {
                "run with --backend docker to prove it in a container of the harness image, or write a check that needs no command"
            }
        }
    }
}

/// How the commands of tasks of one origin run: somewhere, or not at all.
#[derive(Debug, Clone, PartialEq)]
pub struct Commands(Result<CommandPlace, Refusal>);

impl CommandRule {
    /// The rule on a backend whose commands run at `place`; `allow_host_commands` is the
    /// user's `--allow-host-commands`.
    pub fn new(place: CommandPlace, allow_host_commands: bool) -> CommandRule {
        CommandRule {
            place,
            allow_host_commands,
        }
    }

    /// The process backend's rule without `--allow-host-commands`.
    pub fn host() -> CommandRule {
        CommandRule::new(CommandPlace::Host, false)
    }

    /// Where the commands of a task written by `origin` run.
    pub fn for_origin(&self, origin: Origin) -> Commands {
        Commands(match (&self.place, origin) {
            (CommandPlace::Container(_), _) | (CommandPlace::Host, Origin::Person) => {
                Ok(self.place.clone())
            }
            (CommandPlace::Host, Origin::Variant) if self.allow_host_commands => {
                Ok(CommandPlace::Host)
            }
            (CommandPlace::Host, Origin::Variant) => Err(Refusal::Variant),
            (CommandPlace::Host, Origin::Model) => Err(Refusal::Model),
        })
    }

    /// Where the backend runs commands.
    pub fn place(&self) -> &CommandPlace {
        &self.place
    }
}

impl Commands {
    /// Why they are not run, if they are not.
    pub fn refusal(&self) -> Option<&Refusal> {
        self.0.as_ref().err()
    }

    /// Runs `checks` in order, in the workspace `folder/workspace` (laid out by the caller),
    /// each killed at its time limit; their output capped at `output_bytes` each. The
    /// workspace is the one seen inside the sandbox (`/workspace` in a container). A refusal
    /// runs nothing.
    pub async fn run(
        &self,
        task_id: &str,
        folder: &Path,
        checks: &[CheckCommand],
        output_bytes: usize,
        interrupt: &CancellationToken,
    ) -> Result<Vec<CheckOutcome>, CommandsError> {
        match &self.0 {
            Err(refusal) => Err(CommandsError::Refused(refusal.clone())),
            Ok(CommandPlace::Host) => {
                let workspace = folder.join("workspace");
                let environment = host_environment(&workspace);
                // What a check leaves running (`setsid` or not) ends with it.
                let containment = Containment::new(Mechanism::default());
                let mut outcomes = Vec::with_capacity(checks.len());
                for check in checks {
                    let outcome = super::process::run_check(
                        check,
                        &workspace,
                        &environment,
                        output_bytes,
                        interrupt,
                        &containment,
                    )
                    .await;
                    containment.kill();
                    outcomes.push(outcome?);
                }
                containment.release().await;
                Ok(outcomes)
            }
            Ok(CommandPlace::Container(container)) => container
                .run(task_id, folder, checks, output_bytes, interrupt)
                .await
                .map_err(|error| match error {
                    super::docker::ContainerError::Docker(error) => {
                        CommandsError::Docker(error.to_string())
                    }
                    super::docker::ContainerError::Sandbox(error) => CommandsError::Sandbox(error),
                }),
        }
    }
}

/// Why a task's commands did not run (not: why they failed).
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum CommandsError {
    /// The rule does not let them run here.
    #[error("{0}")]
    Refused(Refusal),
    /// The docker engine or the image cannot be used.
    #[error("the docker backend cannot run them: {0}")]
    Docker(String),
    /// The runner failed.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
}

/// What a command on the host sees: PATH, a HOME and the workspace, nothing else of
/// clawtest's environment (no key).
fn host_environment(workspace: &Path) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    [
        ("PATH", std::env::var_os("PATH").unwrap_or_default()),
        ("HOME", workspace.as_os_str().to_owned()),
        ("LANG", "C.UTF-8".into()),
        ("CLAWTEST_WORKSPACE", workspace.as_os_str().to_owned()),
    ]
    .into_iter()
    .map(|(name, value)| (name.into(), value))
    .collect()
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::sandbox::docker::ResourceLimits;

    fn container() -> CommandPlace {
        CommandPlace::Container(ContainerCommands {
            image: "image".into(),
            shim: PathBuf::from("/shim"),
            limits: ResourceLimits::default(),
        })
    }

    #[test]
    fn in_a_container_every_origins_commands_run_there() {
        for allow in [false, true] {
            let rule = CommandRule::new(container(), allow);
            for origin in [Origin::Person, Origin::Variant, Origin::Model] {
                assert_eq!(rule.for_origin(origin), Commands(Ok(container())));
            }
        }
    }

    #[test]
    fn on_the_host_only_a_persons_commands_run_unless_variants_are_allowed() {
        let rule = CommandRule::host();
        assert_eq!(
            rule.for_origin(Origin::Person),
            Commands(Ok(CommandPlace::Host))
        );
        assert_eq!(
            rule.for_origin(Origin::Variant).refusal(),
            Some(&Refusal::Variant)
        );
        assert_eq!(
            rule.for_origin(Origin::Model).refusal(),
            Some(&Refusal::Model)
        );
        let allowed = CommandRule::new(CommandPlace::Host, true);
        assert_eq!(
            allowed.for_origin(Origin::Variant),
            Commands(Ok(CommandPlace::Host))
        );
        assert_eq!(
            allowed.for_origin(Origin::Model).refusal(),
            Some(&Refusal::Model),
            "a model's commands never run on the host"
        );
    }

    #[tokio::test]
    async fn a_refused_command_does_not_run() {
        let folder = tempfile::tempdir().unwrap();
        std::fs::create_dir(folder.path().join("workspace")).unwrap();
        let marker = folder.path().join("ran");
        let check = CheckCommand {
            command: vec![
                "sh".into(),
                "-c".into(),
                format!("touch {}", marker.display()),
            ],
            timeout: std::time::Duration::from_secs(10),
        };
        let interrupt = CancellationToken::new();
        let refused = CommandRule::host().for_origin(Origin::Model);
        let outcome = refused
            .run(
                "t",
                folder.path(),
                std::slice::from_ref(&check),
                1024,
                &interrupt,
            )
            .await;
        assert_eq!(outcome, Err(CommandsError::Refused(Refusal::Model)));
        assert!(!marker.exists());
        let person = CommandRule::host().for_origin(Origin::Person);
        let ran = person
            .run("t", folder.path(), &[check], 1024, &interrupt)
            .await
            .unwrap();
        assert_eq!(ran[0].exit_code, Some(0));
        assert!(marker.exists());
    }
}
