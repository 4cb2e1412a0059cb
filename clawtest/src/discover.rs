//! Finding the suite's task files: the configured globs, matched against paths relative to
//! the suite root, in a stable (sorted) order. Build output and hidden folders are skipped.

use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};

/// Folders never searched: build output and VCS or tool state.
const SKIPPED: [&str; 3] = ["target", "node_modules", "clawtest-results"];

/// Errors while searching for task files.
#[derive(Debug, thiserror::Error)]
pub enum DiscoverError {
    /// A configured pattern is not a glob.
    #[error("`{pattern}` is not a valid glob: {message}")]
    Glob {
        /// The pattern as configured (every pattern, comma-separated, when the set as a whole
        /// failed to build).
        pattern: String,
        /// globset's reason.
        message: String,
    },
    /// A folder on the way could not be listed.
    #[error("cannot read {}: {message}", path.display())]
    Unreadable {
        /// The folder under the suite root that could not be listed.
        path: PathBuf,
        /// The I/O error, in words.
        message: String,
    },
}

/// Every file under `root` whose root-relative path matches one of `patterns`, sorted.
pub(crate) fn task_files(root: &Path, patterns: &[String]) -> Result<Vec<PathBuf>, DiscoverError> {
    let set = glob_set(patterns)?;
    let mut found = Vec::new();
    walk(root, root, &set, &mut found)?;
    found.sort();
    Ok(found)
}

/// Resolves explicit paths given on the command line: files as they are, folders searched for
/// `*.yaml` / `*.yml` files.
pub(crate) fn explicit_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, DiscoverError> {
    let set = glob_set(&["**/*.yaml".into(), "**/*.yml".into()])?;
    let mut found = Vec::new();
    for path in paths {
        if path.is_dir() {
            let mut inside = Vec::new();
            walk(path, path, &set, &mut inside)?;
            inside.sort();
            found.extend(inside);
        } else {
            found.push(path.clone());
        }
    }
    Ok(found)
}

fn glob_set(patterns: &[String]) -> Result<GlobSet, DiscoverError> {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        let glob = Glob::new(pattern).map_err(|error| DiscoverError::Glob {
            pattern: pattern.clone(),
            message: error.to_string(),
        })?;
        builder.add(glob);
    }
    builder.build().map_err(|error| DiscoverError::Glob {
        pattern: patterns.join(", "),
        message: error.to_string(),
    })
}

fn walk(
    root: &Path,
    folder: &Path,
    set: &GlobSet,
    found: &mut Vec<PathBuf>,
) -> Result<(), DiscoverError> {
    let entries = std::fs::read_dir(folder).map_err(|error| DiscoverError::Unreadable {
        path: folder.to_path_buf(),
        message: error.to_string(),
    })?;
    for entry in entries {
        let entry = entry.map_err(|error| DiscoverError::Unreadable {
            path: folder.to_path_buf(),
            message: error.to_string(),
        })?;
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            if name.starts_with('.') || SKIPPED.contains(&name.as_ref()) {
                continue;
            }
            walk(root, &path, set, found)?;
        } else if let Ok(relative) = path.strip_prefix(root)
            && set.is_match(relative)
            && !is_sidecar(&name)
        {
            found.push(path);
        }
    }
    Ok(())
}

/// Files that sit beside a task but are not tasks: its intent atoms (`x.atoms.yaml`).
fn is_sidecar(name: &str) -> bool {
    name.ends_with(".atoms.yaml") || name.ends_with(".atoms.yml") || name.ends_with(".atoms.json")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_relative_paths_and_skip_build_output() {
        let root = tempfile::tempdir().unwrap();
        for file in [
            "tasks/b.yaml",
            "tasks/b.atoms.yaml",
            "tasks/a/one.yaml",
            "tasks/notes.md",
            "target/tasks/x.yaml",
            "other/c.yaml",
        ] {
            let path = root.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "").unwrap();
        }
        let found = task_files(root.path(), &["tasks/**/*.yaml".into()]).unwrap();
        let relative: Vec<String> = found
            .iter()
            .map(|path| {
                path.strip_prefix(root.path())
                    .unwrap()
                    .display()
                    .to_string()
            })
            .collect();
        assert_eq!(relative, ["tasks/a/one.yaml", "tasks/b.yaml"]);
    }
}
