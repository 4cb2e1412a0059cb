//! The harness commands as they are started: `harness.command` and `harness.build` with
//! `${CARGO_TARGET_DIR}` and `${SUITE_DIR}` expanded, a relative program anchored at the suite
//! root, and each other argument that names an existing path of the suite folder made absolute
//! (docs/configuration.md#harness); or the command as written for a program inside the docker
//! image.

use std::path::{Path, PathBuf};

use super::sections::{CommandLine, HarnessKind};
use super::{Config, ConfigError, absolute};

impl Config {
    /// The harness command with `${CARGO_TARGET_DIR}` and `${SUITE_DIR}` expanded, a relative
    /// program path (one containing a `/`) anchored at the suite root, and every other
    /// argument that names an existing path relative to the suite root made absolute.
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
        if words.iter().any(|word| word.contains(SUITE_DIR)) {
            let root = self.root.display().to_string();
            for word in &mut words {
                *word = word.replace(SUITE_DIR, &root);
            }
        }
        let program = Path::new(&words[0]);
        if program.is_relative() && words[0].contains('/') {
            words[0] = self.root.join(program).display().to_string();
        }
        for word in words.iter_mut().skip(1) {
            if let Some(resolved) = suite_path(&self.root, word) {
                *word = resolved;
            }
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

/// The placeholder for the suite's folder (where clawtest.toml is) in a harness command.
const SUITE_DIR: &str = "${SUITE_DIR}";

/// An argument that names an existing file or folder relative to the suite folder, as an
/// absolute path: the harness runs in the trial's workspace, where `agent.py` of
/// `[".venv/bin/python", "agent.py"]` is not. Options (`-…`), `.` and paths through `..` are
/// left as written: they mean something in the workspace, or nothing the suite owns.
fn suite_path(root: &Path, word: &str) -> Option<String> {
    use std::path::Component;
    let path = Path::new(word);
    if word.is_empty() || word.starts_with('-') || path.is_absolute() {
        return None;
    }
    let mut named = false;
    for part in path.components() {
        match part {
            Component::Normal(_) => named = true,
            Component::CurDir => {}
            _ => return None,
        }
    }
    let anchored = root.join(path);
    // `exists` follows links: a dangling one is no path the agent could open either.
    (named && anchored.exists()).then(|| anchored.display().to_string())
}
