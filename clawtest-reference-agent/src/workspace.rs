//! The tools that act on the trial's workspace rather than on a service: `read_file`,
//! `write_file`, `list_dir` and `shell`, as ClawEnvKit's agent-loop baseline has them. A
//! tools file offers them with `"workspace": true` in place of an endpoint (clawtest does for
//! a task with files or command checks), and the agent runs them itself, where it runs.
//!
//! Every path stays inside the workspace: `/workspace/x` and `x` both name `x` under it,
//! `..` cannot climb out, and a link that leads out is refused, so a model (or a replayed
//! cassette) cannot read or write the host's files through the agent. `shell` runs a command
//! the *model* wrote, so it is off unless the person who configured the harness turned it on
//! with [`SHELL_VARIABLE`] — meant for a container sandbox, where the command cannot reach the
//! host.

use std::io::Read as _;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::image::{IMAGE_LIMIT, Image, media_type};

/// The names of the workspace tools.
pub const NAMES: [&str; 4] = ["read_file", "write_file", "list_dir", "shell"];

/// `on` lets `shell` run the model's commands (in the workspace, with [`SHELL_TIMEOUT`]).
pub const SHELL_VARIABLE: &str = "AGENT_SHELL";

/// The longest a `shell` command may run; the trial's own deadline is usually shorter.
pub const SHELL_TIMEOUT: Duration = Duration::from_secs(60);

/// What a read or a command's output may hand the model: more would not fit its context.
const OUTPUT_LIMIT: usize = 64 * 1024;

/// Where the workspace tools act, and whether `shell` may run.
#[derive(Debug, Clone)]
pub struct Workspace {
    pub root: PathBuf,
    pub shell: bool,
}

impl Workspace {
    /// Runs the workspace tool `name` with `arguments`; the text is the tool result.
    pub fn call(&self, name: &str, arguments: &Value) -> String {
        let text = |key: &str| arguments.get(key).and_then(Value::as_str).unwrap_or("");
        let result = match name {
            "read_file" => self.read_file(text("path")),
            "write_file" => self.write_file(text("path"), text("content")),
            "list_dir" => self.list_dir(match text("path") {
                "" => ".",
                path => path,
            }),
            "shell" => self.shell(text("command")),
            other => Err(format!("{other:?} is not a workspace tool")),
        };
        result.unwrap_or_else(|error| format!("error: {error}"))
    }

    /// `path` under the root: `/workspace/` and `./` prefixes dropped, `..` refused.
    fn inside(&self, path: &str) -> Result<PathBuf, String> {
        let relative = path
            .strip_prefix("/workspace/")
            .or_else(|| (path == "/workspace").then_some("."))
            .unwrap_or(path);
        let relative = Path::new(relative);
        if relative.is_absolute()
            || relative
                .components()
                .any(|part| matches!(part, Component::ParentDir))
        {
            return Err(format!(
                "{path:?} is outside the workspace (give a path under /workspace)"
            ));
        }
        Ok(self.root.join(relative))
    }

    /// `path` resolved through links, refused when it leads out of the workspace.
    fn resolved(&self, path: &str) -> Result<PathBuf, String> {
        let joined = self.inside(path)?;
        let root = self
            .root
            .canonicalize()
            .map_err(|error| format!("the workspace cannot be read: {error}"))?;
        let real = joined
            .canonicalize()
            .map_err(|error| format!("{path:?}: {error}"))?;
        if !real.starts_with(&root) {
            return Err(format!("{path:?} leads outside the workspace"));
        }
        Ok(real)
    }

    /// The image `path` names, when it is a workspace file that starts as a PNG, JPEG, GIF or
    /// WebP (`None` for any other file, or one that cannot be read: `read_file` says why).
    pub fn image(&self, path: &str) -> Option<Result<Image, String>> {
        let real = self.resolved(path).ok().filter(|real| real.is_file())?;
        let mut bytes = Vec::new();
        std::fs::File::open(&real)
            .and_then(|file| file.take(IMAGE_LIMIT as u64 + 1).read_to_end(&mut bytes))
            .ok()?;
        let media_type = media_type(&bytes)?;
        if bytes.len() > IMAGE_LIMIT {
            return Some(Err(format!(
                "{path:?} is an image over {} MiB: too large to show",
                IMAGE_LIMIT / (1024 * 1024)
            )));
        }
        Some(Ok(Image {
            path: path.to_owned(),
            media_type,
            bytes,
        }))
    }

    fn read_file(&self, path: &str) -> Result<String, String> {
        let real = self.resolved(path)?;
        if !real.is_file() {
            return Err(format!("{path:?} is not a file"));
        }
        let mut bytes = Vec::new();
        std::fs::File::open(&real)
            .and_then(|file| file.take(OUTPUT_LIMIT as u64 + 1).read_to_end(&mut bytes))
            .map_err(|error| format!("{path:?}: {error}"))?;
        let cut = bytes.len() > OUTPUT_LIMIT;
        bytes.truncate(OUTPUT_LIMIT);
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        if cut {
            text.push_str("\n[... cut: the file is longer]");
        }
        Ok(text)
    }

    fn write_file(&self, path: &str, content: &str) -> Result<String, String> {
        let target = self.inside(path)?;
        let parent = target
            .parent()
            .ok_or_else(|| format!("{path:?} names no file"))?;
        std::fs::create_dir_all(parent).map_err(|error| format!("{path:?}: {error}"))?;
        // The folder (links resolved) must be inside, and the file itself is not followed if
        // it is a link: a link planted in the workspace cannot redirect the write.
        let real_parent = parent
            .canonicalize()
            .map_err(|error| format!("{path:?}: {error}"))?;
        let root = self
            .root
            .canonicalize()
            .map_err(|error| format!("the workspace cannot be read: {error}"))?;
        if !real_parent.starts_with(&root) {
            return Err(format!("{path:?} leads outside the workspace"));
        }
        let name = target
            .file_name()
            .ok_or_else(|| format!("{path:?} names no file"))?;
        let destination = real_parent.join(name);
        if destination
            .symlink_metadata()
            .is_ok_and(|metadata| metadata.file_type().is_symlink())
        {
            std::fs::remove_file(&destination).map_err(|error| format!("{path:?}: {error}"))?;
        }
        std::fs::write(&destination, content).map_err(|error| format!("{path:?}: {error}"))?;
        Ok(format!("wrote {} bytes to {path}", content.len()))
    }

    fn list_dir(&self, path: &str) -> Result<String, String> {
        let real = self.resolved(path)?;
        let mut entries: Vec<String> = std::fs::read_dir(&real)
            .map_err(|error| format!("{path:?}: {error}"))?
            .filter_map(Result::ok)
            .take(10_000)
            .map(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                match entry.file_type() {
                    Ok(kind) if kind.is_dir() => format!("{name}/"),
                    _ => name,
                }
            })
            .collect();
        entries.sort();
        Ok(entries.join("\n"))
    }

    fn shell(&self, command: &str) -> Result<String, String> {
        if !self.shell {
            return Err(format!(
                "the shell tool is off: the agent runs model-written commands only when its \
                 harness sets {SHELL_VARIABLE}=on (meant for a container sandbox)"
            ));
        }
        if command.trim().is_empty() {
            return Err("no command given".to_owned());
        }
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(command)
            .current_dir(&self.root)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| format!("cannot start sh: {error}"))?;
        let stdout = child.stdout.take().map(read_capped);
        let stderr = child.stderr.take().map(read_capped);
        let started = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if started.elapsed() >= SHELL_TIMEOUT => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Err(error) => return Err(format!("waiting for the command: {error}")),
            }
        };
        let output = |reader: Option<std::thread::JoinHandle<String>>| {
            reader
                .and_then(|reader| reader.join().ok())
                .unwrap_or_default()
        };
        let (stdout, stderr) = (output(stdout), output(stderr));
        let code = match status {
            Some(status) => status
                .code()
                .map_or_else(|| "killed by a signal".to_owned(), |code| code.to_string()),
            None => format!("timed out after {} s", SHELL_TIMEOUT.as_secs()),
        };
        Ok(json!({"exit_code": code, "stdout": stdout, "stderr": stderr}).to_string())
    }
}

/// Reads a pipe to its end on a thread of its own, keeping the first [`OUTPUT_LIMIT`] bytes
/// (reading on so the command never blocks on a full pipe).
fn read_capped(mut pipe: impl std::io::Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut buffer = [0u8; 8192];
        while let Ok(read) = pipe.read(&mut buffer) {
            if read == 0 {
                break;
            }
            let room = OUTPUT_LIMIT.saturating_sub(kept.len());
            kept.extend_from_slice(&buffer[..read.min(room)]);
        }
        String::from_utf8_lossy(&kept).into_owned()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace(shell: bool) -> (tempfile::TempDir, Workspace) {
        let folder = tempfile::tempdir().unwrap();
        let root = folder.path().join("workspace");
        std::fs::create_dir(&root).unwrap();
        (folder, Workspace { root, shell })
    }

    /// An image is known by its bytes whatever its name, read whole up to the cap; a text file
    /// or a link out of the workspace is no image.
    #[test]
    fn images_are_read_whole_by_their_bytes_and_only_inside() {
        let (folder, workspace) = workspace(false);
        let png = b"\x89PNG\r\n\x1a\nrest".to_vec();
        std::fs::write(workspace.root.join("label.dat"), &png).unwrap();
        std::fs::write(workspace.root.join("notes.png"), "not an image").unwrap();
        let image = workspace.image("/workspace/label.dat").unwrap().unwrap();
        assert_eq!(
            (image.media_type, image.bytes, image.path.as_str()),
            ("image/png", png.clone(), "/workspace/label.dat")
        );
        assert!(workspace.image("notes.png").is_none());
        std::fs::write(folder.path().join("outside.png"), &png).unwrap();
        std::os::unix::fs::symlink(
            folder.path().join("outside.png"),
            workspace.root.join("link.png"),
        )
        .unwrap();
        assert!(workspace.image("link.png").is_none());
        let mut large = png;
        large.resize(IMAGE_LIMIT + 1, 0);
        std::fs::write(workspace.root.join("large.png"), &large).unwrap();
        let refused = workspace.image("large.png").unwrap().unwrap_err();
        assert!(refused.contains("too large"), "{refused}");
    }

    #[test]
    fn files_are_read_written_and_listed_inside_the_workspace() {
        let (_folder, workspace) = workspace(false);
        let wrote = workspace.call(
            "write_file",
            &json!({"path": "/workspace/out/report.md", "content": "# Total: 42"}),
        );
        assert!(wrote.starts_with("wrote 11 bytes"), "{wrote}");
        assert_eq!(
            workspace.call("read_file", &json!({"path": "out/report.md"})),
            "# Total: 42"
        );
        assert_eq!(workspace.call("list_dir", &json!({})), "out/");
        assert_eq!(
            workspace.call("list_dir", &json!({"path": "/workspace/out"})),
            "report.md"
        );
    }

    #[test]
    fn nothing_outside_the_workspace_is_read_or_written() {
        let (folder, workspace) = workspace(false);
        std::fs::write(folder.path().join("secret"), "key").unwrap();
        std::os::unix::fs::symlink(folder.path().join("secret"), workspace.root.join("link"))
            .unwrap();
        std::os::unix::fs::symlink(folder.path(), workspace.root.join("up")).unwrap();
        for path in ["../secret", "/etc/passwd", "link", "up/secret"] {
            let answer = workspace.call("read_file", &json!({"path": path}));
            assert!(answer.starts_with("error:"), "{path}: {answer}");
        }
        let answer = workspace.call("write_file", &json!({"path": "up/planted", "content": "x"}));
        assert!(answer.starts_with("error:"), "{answer}");
        assert!(!folder.path().join("planted").exists());
        // Writing over a link replaces the link, not what it points at.
        workspace.call("write_file", &json!({"path": "link", "content": "new"}));
        assert_eq!(
            std::fs::read_to_string(folder.path().join("secret")).unwrap(),
            "key"
        );
    }

    #[test]
    fn the_shell_runs_only_when_turned_on() {
        let (_folder, off) = workspace(false);
        let answer = off.call("shell", &json!({"command": "echo hi > made"}));
        assert!(answer.contains(SHELL_VARIABLE), "{answer}");
        assert!(!off.root.join("made").exists());

        let (_folder, on) = workspace(true);
        let answer: Value = serde_json::from_str(&on.call(
            "shell",
            &json!({"command": "echo hi; echo oops >&2; exit 3"}),
        ))
        .unwrap();
        assert_eq!(answer["exit_code"], "3");
        assert_eq!(answer["stdout"], "hi\n");
        assert_eq!(answer["stderr"], "oops\n");
    }
}
