//! Reading scripts from files: one script file, or a folder of them (one per task), each
//! error naming the file and, for a script that does not parse, its line.

use std::path::{Path, PathBuf};

use super::{Script, ScriptedModel};

/// Why the scripts cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The file or folder cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file or folder.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A file is not a script (`turns:` of `tool_calls:` or `text:`).
    #[error("{}: {message}", path.display())]
    Invalid {
        /// The script file.
        path: PathBuf,
        /// The reader's message, with the line and column.
        message: String,
    },
    /// The folder holds no `*.yaml` or `*.yml` file.
    #[error("{}: no *.yaml script in the folder", path.display())]
    Empty {
        /// The folder.
        path: PathBuf,
    },
    /// Two scripts of a folder answer any conversation.
    #[error("{}: {} have no `prompt_contains`, so a request could not tell them apart", path.display(), names.join(" and "))]
    Ambiguous {
        /// The folder.
        path: PathBuf,
        /// The scripts without `prompt_contains`.
        names: Vec<String>,
    },
}

impl ScriptError {
    /// What to do about it.
    pub fn advice(&self) -> &'static str {
        match self {
            ScriptError::Read { .. } => {
                "pass a script file or a folder of them: `cargo clawtest model --script model-scripts`"
            }
            ScriptError::Invalid { .. } => {
                "a script is `turns:`, each `- tool_calls: [{name: TOOL, arguments: {…}}]` or `- text: FINAL ANSWER` (docs/cassettes.md#the-scripted-model)"
            }
            ScriptError::Empty { .. } => {
                "write one script per task in the folder (`NAME.yaml`, with `prompt_contains:` and `turns:`)"
            }
            ScriptError::Ambiguous { .. } => {
                "give each script a `prompt_contains:` phrase of its task's prompt (one script may go without)"
            }
        }
    }
}

impl ScriptedModel {
    /// A server for a script file, or for every `*.yaml`/`*.yml` script of a folder.
    pub fn load(path: &Path) -> Result<ScriptedModel, ScriptError> {
        if !path.is_dir() {
            return Ok(ScriptedModel::new(read(path)?));
        }
        let entries = std::fs::read_dir(path).map_err(|source| ScriptError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let mut files = Vec::new();
        for entry in entries {
            let file = entry
                .map_err(|source| ScriptError::Read {
                    path: path.to_path_buf(),
                    source,
                })?
                .path();
            if matches!(
                file.extension().and_then(|e| e.to_str()),
                Some("yaml" | "yml")
            ) {
                files.push(file);
            }
        }
        // Read in name order, so the first bad file named is the same on every machine.
        files.sort();
        let mut scripts = Vec::new();
        for file in files {
            let name = file
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            scripts.push((name, read(&file)?));
        }
        if scripts.is_empty() {
            return Err(ScriptError::Empty {
                path: path.to_path_buf(),
            });
        }
        let unclaimed: Vec<String> = scripts
            .iter()
            .filter(|(_, script)| script.prompt_contains.is_none())
            .map(|(name, _)| name.clone())
            .collect();
        if unclaimed.len() > 1 {
            return Err(ScriptError::Ambiguous {
                path: path.to_path_buf(),
                names: unclaimed,
            });
        }
        Ok(ScriptedModel::with_scripts(scripts))
    }
}

/// One script file, read and parsed.
fn read(path: &Path) -> Result<Script, ScriptError> {
    let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    Script::parse(&text).map_err(|message| ScriptError::Invalid {
        path: path.to_path_buf(),
        message,
    })
}
