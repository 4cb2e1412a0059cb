//! The workspace file tools as the MCP server runs them: `read_file`, `write_file` and
//! `list_dir` in the trial's workspace, done by clawtest itself, on the host, for a harness
//! that reaches its tools over MCP only. (`shell` is not among them: over MCP it would run the
//! model's command in clawtest's own process, which on the process backend is the host.)
//!
//! The workspace is the harness's to write: on the docker backend a container, on the process
//! backend the agent, may have put links in it by the time a call comes. So every path is
//! opened with `openat2` under the workspace's folder (`RESOLVE_BENEATH`: no `..`, absolute
//! path or link leads out of it, and the kernel checks it at the moment of opening, with no
//! window between a check and the use), the last part of a path written is never followed,
//! only regular files are read (a FIFO would hang the server) and what a read hands back is
//! capped.

use std::io::{Read as _, Write as _};
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};

/// The tools served, by the names the tools file gives them.
pub(crate) const SERVED: [&str; 3] = ["read_file", "write_file", "list_dir"];

/// What one read hands the model (as the reference agent's `read_file`): more would not fit
/// its context, and the answer is held in memory.
const READ_LIMIT: usize = 64 * 1024;

/// The most entries one `list_dir` lists.
const LIST_LIMIT: usize = 10_000;

/// The trial's workspace folder, as the MCP server's file tools reach it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WorkspaceFiles {
    root: PathBuf,
}

impl WorkspaceFiles {
    /// The file tools of the workspace at `root` (on the host).
    pub(crate) fn new(root: PathBuf) -> WorkspaceFiles {
        WorkspaceFiles { root }
    }

    /// Runs the tool `name`: its text answer, or the error to show the model.
    pub(crate) fn call(&self, name: &str, arguments: &serde_json::Value) -> Result<String, String> {
        let text = |key: &str| {
            arguments
                .get(key)
                .and_then(serde_json::Value::as_str)
                .unwrap_or("")
        };
        match name {
            "read_file" => self.read_file(text("path")),
            "write_file" => match arguments.get("content") {
                Some(serde_json::Value::String(content)) => self.write_file(text("path"), content),
                _ => Err("`content` (a string) is required".to_owned()),
            },
            "list_dir" => self.list_dir(text("path")),
            other => Err(format!("`{other}` is not a workspace tool")),
        }
    }

    fn read_file(&self, path: &str) -> Result<String, String> {
        let relative = inside(path)?;
        let root = self.open_root(path)?;
        let fd = beneath(&root, &relative, OFlags::RDONLY | OFlags::NONBLOCK)
            .map_err(|error| failure(path, error))?;
        regular(&fd, path)?;
        let mut bytes = Vec::new();
        std::fs::File::from(fd)
            .take(READ_LIMIT as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|error| format!("`{path}`: {error}"))?;
        let cut = bytes.len() > READ_LIMIT;
        bytes.truncate(READ_LIMIT);
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        if cut {
            text.push_str("\n[... cut: the file is longer]");
        }
        Ok(text)
    }

    fn write_file(&self, path: &str, content: &str) -> Result<String, String> {
        let relative = inside(path)?;
        let Some(name) = relative.file_name().filter(|_| relative != Path::new(".")) else {
            return Err(format!("`{path}` names no file"));
        };
        let mut folder = self.open_root(path)?;
        // Each folder on the way made if missing and opened without following a link.
        for part in relative.parent().into_iter().flat_map(Path::components) {
            let Component::Normal(part) = part else {
                continue;
            };
            match rustix::fs::mkdirat(&folder, part, Mode::from_raw_mode(0o755)) {
                Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                Err(error) => return Err(failure(path, error)),
            }
            folder = rustix::fs::openat2(
                &folder,
                part,
                OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
                ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS,
            )
            .map_err(|error| failure(path, error))?;
        }
        // A link planted where the file goes is replaced, never written through.
        if rustix::fs::statat(&folder, name, AtFlags::SYMLINK_NOFOLLOW)
            .is_ok_and(|stat| FileType::from_raw_mode(stat.st_mode) == FileType::Symlink)
        {
            rustix::fs::unlinkat(&folder, name, AtFlags::empty())
                .map_err(|error| failure(path, error))?;
        }
        let fd = rustix::fs::openat2(
            &folder,
            name,
            OFlags::WRONLY
                | OFlags::CREATE
                | OFlags::TRUNC
                | OFlags::NOFOLLOW
                | OFlags::NONBLOCK
                | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS,
        )
        .map_err(|error| failure(path, error))?;
        regular(&fd, path)?;
        std::fs::File::from(fd)
            .write_all(content.as_bytes())
            .map_err(|error| format!("`{path}`: {error}"))?;
        Ok(format!("wrote {} bytes to {path}", content.len()))
    }

    fn list_dir(&self, path: &str) -> Result<String, String> {
        let path = if path.is_empty() { "." } else { path };
        let relative = inside(path)?;
        let root = self.open_root(path)?;
        let fd = beneath(&root, &relative, OFlags::RDONLY | OFlags::DIRECTORY)
            .map_err(|error| failure(path, error))?;
        let mut entries = Vec::new();
        for entry in rustix::fs::Dir::new(fd)
            .map_err(|error| failure(path, error))?
            .take(LIST_LIMIT + 2)
        {
            let entry = entry.map_err(|error| failure(path, error))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == "." || name == ".." {
                continue;
            }
            entries.push(match entry.file_type() {
                FileType::Directory => format!("{name}/"),
                _ => name,
            });
        }
        entries.sort();
        entries.truncate(LIST_LIMIT);
        Ok(if entries.is_empty() {
            "(empty)".to_owned()
        } else {
            entries.join("\n")
        })
    }

    fn open_root(&self, path: &str) -> Result<OwnedFd, String> {
        rustix::fs::open(
            &self.root,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|error| format!("`{path}`: the workspace cannot be opened: {error}"))
    }
}

/// `path` relative to the workspace: `/workspace/` and `./` dropped; another absolute path or a
/// `..` refused with the reason (the kernel would refuse them too, less clearly).
fn inside(path: &str) -> Result<PathBuf, String> {
    let relative = path
        .strip_prefix("/workspace/")
        .or_else(|| (path == "/workspace" || path.is_empty()).then_some("."))
        .unwrap_or(path);
    let relative = Path::new(relative);
    if relative.is_absolute()
        || relative
            .components()
            .any(|part| matches!(part, Component::ParentDir))
    {
        return Err(format!(
            "`{path}` is outside the workspace (give a path under /workspace)"
        ));
    }
    Ok(relative.to_path_buf())
}

/// Refuses an opened `fd` that is not a regular file (a FIFO, a device, a folder).
fn regular(fd: &OwnedFd, path: &str) -> Result<(), String> {
    let stat = rustix::fs::fstat(fd).map_err(|error| failure(path, error))?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(format!("`{path}` is not a file"));
    }
    Ok(())
}

/// `relative` opened under `root`, never leaving it (links inside it are followed).
fn beneath(root: &OwnedFd, relative: &Path, flags: OFlags) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat2(
        root,
        relative,
        flags | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
    )
}

/// An error of the system in words for the model, naming the path it asked for.
fn failure(path: &str, error: rustix::io::Errno) -> String {
    let reason = match error {
        rustix::io::Errno::XDEV | rustix::io::Errno::LOOP => {
            "it leads outside the workspace (or through a link where a folder or file is written)"
                .to_owned()
        }
        rustix::io::Errno::NOENT => "no such file or folder".to_owned(),
        rustix::io::Errno::NOTDIR => "not a folder".to_owned(),
        rustix::io::Errno::NOSYS => {
            "this system's kernel has no openat2 (Linux 5.6 or later is needed)".to_owned()
        }
        other => std::io::Error::from(other).to_string(),
    };
    format!("`{path}`: {reason}")
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use serde_json::json;

    use super::WorkspaceFiles;

    fn files() -> (tempfile::TempDir, tempfile::TempDir, WorkspaceFiles) {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "host secret").unwrap();
        let workspace = tempfile::tempdir().unwrap();
        let files = WorkspaceFiles::new(workspace.path().to_path_buf());
        (outside, workspace, files)
    }

    #[test]
    fn reads_writes_and_lists_under_the_workspace() {
        let (_outside, workspace, files) = files();
        std::fs::write(workspace.path().join("data.csv"), "a,b\n").unwrap();
        assert_eq!(
            files.call("read_file", &json!({"path": "/workspace/data.csv"})),
            Ok("a,b\n".to_owned())
        );
        assert_eq!(
            files.call(
                "write_file",
                &json!({"path": "out/report.md", "content": "Total: 3\n"})
            ),
            Ok("wrote 9 bytes to out/report.md".to_owned())
        );
        assert_eq!(
            std::fs::read_to_string(workspace.path().join("out/report.md")).unwrap(),
            "Total: 3\n"
        );
        assert_eq!(
            files.call("list_dir", &json!({})),
            Ok("data.csv\nout/".to_owned())
        );
        let long = "x".repeat(super::READ_LIMIT + 10);
        std::fs::write(workspace.path().join("long.txt"), &long).unwrap();
        let read = files
            .call("read_file", &json!({"path": "long.txt"}))
            .unwrap();
        assert!(read.ends_with("[... cut: the file is longer]"), "{read}");
    }

    /// Links the harness planted lead nowhere outside: reading through one, writing through
    /// one (at the file or at a folder on the way) and `..` are all refused or kept inside.
    #[test]
    fn links_and_dot_dots_never_reach_outside_the_workspace() {
        let (outside, workspace, files) = files();
        let root = workspace.path();
        symlink(outside.path().join("secret.txt"), root.join("secret.txt")).unwrap();
        symlink(outside.path(), root.join("elsewhere")).unwrap();
        symlink("/proc/self/environ", root.join("environ")).unwrap();
        for path in [
            "secret.txt",
            "elsewhere/secret.txt",
            "environ",
            "../x",
            "/etc/passwd",
        ] {
            let read = files.call("read_file", &json!({"path": path}));
            assert!(read.is_err(), "{path}: {read:?}");
        }
        assert!(
            files
                .call("list_dir", &json!({"path": "elsewhere"}))
                .is_err()
        );
        // Writing where a link stands replaces the link; the file it named is untouched.
        files
            .call(
                "write_file",
                &json!({"path": "secret.txt", "content": "mine"}),
            )
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
            "host secret"
        );
        assert_eq!(
            std::fs::read_to_string(root.join("secret.txt")).unwrap(),
            "mine"
        );
        let through = files.call(
            "write_file",
            &json!({"path": "elsewhere/new.txt", "content": "x"}),
        );
        assert!(through.is_err(), "{through:?}");
        assert!(!outside.path().join("new.txt").exists());
        assert!(
            files
                .call("write_file", &json!({"path": "/workspace", "content": "x"}))
                .is_err()
        );
        assert!(files.call("shell", &json!({"command": "id"})).is_err());
    }
}
