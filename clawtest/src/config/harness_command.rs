//! The harness commands as they are started: `harness.command` and `harness.build` with
//! `${CARGO_TARGET_DIR}` expanded and a relative program anchored at the suite root, or the
//! command as written for a program inside the docker image.

use std::path::{Path, PathBuf};

use super::sections::{CommandLine, HarnessKind};
use super::{Config, ConfigError, absolute};

impl Config {
    /// The harness command with `${CARGO_TARGET_DIR}` expanded and a relative program path
    /// (one containing a `/`) anchored at the suite root.
    pub fn harness_command(&self) -> Result<Vec<String>, ConfigError> {
        if self.harness.kind == HarnessKind::Rust {
            return Err(ConfigError::Value {
                origin: self.origin.clone(),
                field: "harness.kind".into(),
                message: "is \"rust\": the harness is a Rust function that runs inside the crate's tests; run them with `cargo test` (see `clawtest::main!`)".into(),
            });
        }
        let Some(command) = &self.harness.command else {
            return Err(ConfigError::Value {
                origin: self.origin.clone(),
                field: "harness.command".into(),
                message: "no harness command: say how to start your agent, e.g. `command = [\"./my-agent\"]`".into(),
            });
        };
        self.expand(command, "harness.command")
    }

    /// The harness command as the docker backend runs it: the words as written, a program
    /// inside the image (no host path anchoring or expansion).
    pub(crate) fn harness_command_in_image(&self) -> Result<Vec<String>, ConfigError> {
        let words = self
            .harness
            .command
            .as_ref()
            .map(CommandLine::words)
            .unwrap_or_default();
        if words.is_empty() {
            return Err(ConfigError::Value {
                origin: self.origin.clone(),
                field: "harness.command".into(),
                message: "no harness command: say how to start your agent inside the image, e.g. `command = [\"/usr/local/bin/my-agent\"]`".into(),
            });
        }
        Ok(words)
    }

    /// The optional build command, expanded like [`Config::harness_command`].
    pub(crate) fn harness_build(&self) -> Result<Option<Vec<String>>, ConfigError> {
        self.harness
            .build
            .as_ref()
            .map(|build| self.expand(build, "harness.build"))
            .transpose()
    }

    fn expand(&self, command: &CommandLine, field: &str) -> Result<Vec<String>, ConfigError> {
        let mut words = command.words();
        if words.is_empty() {
            return Err(ConfigError::Value {
                origin: self.origin.clone(),
                field: field.into(),
                message: "is empty".into(),
            });
        }
        if words
            .iter()
            .any(|word| word.contains("${CARGO_TARGET_DIR}"))
        {
            let target = self.cargo_target_dir()?;
            for word in &mut words {
                *word = word.replace("${CARGO_TARGET_DIR}", &target.display().to_string());
            }
        }
        let program = Path::new(&words[0]);
        if program.is_relative() && words[0].contains('/') {
            words[0] = self.root.join(program).display().to_string();
        }
        Ok(words)
    }

    fn cargo_target_dir(&self) -> Result<PathBuf, ConfigError> {
        if let Some(from_environment) = std::env::var_os("CARGO_TARGET_DIR") {
            return Ok(absolute(&self.root.join(from_environment)));
        }
        let metadata = cargo_metadata::MetadataCommand::new()
            .no_deps()
            .current_dir(&self.root)
            .exec()
            .map_err(|error| ConfigError::Value {
                origin: self.origin.clone(),
                field: "harness.command".into(),
                message: format!(
                    "uses ${{CARGO_TARGET_DIR}} but `cargo metadata` failed in {}: {error}",
                    self.root.display()
                ),
            })?;
        Ok(metadata.target_directory.into_std_path_buf())
    }
}
