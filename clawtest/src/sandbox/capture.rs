//! What a sandbox hands back to the host, read the way a hostile harness cannot abuse: every
//! stream and file is capped (`[limits]`), and every file the harness could have written is
//! opened with `O_NOFOLLOW` and read only when it is a regular file, so a link planted in the
//! workspace (to `/proc/self/environ`, `/etc/shadow`) is never followed. A cap that bites is
//! written down as a note, which the trial keeps in its trajectory (`limits_reached`).

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use rustix::fs::OFlags;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::config::LimitsConfig;
use crate::trajectory::WorkspaceFile;

/// A stream's last `cap` bytes, and how many it carried in all.
#[derive(Debug, Default)]
pub(crate) struct Tail {
    kept: Vec<u8>,
    total: u64,
    cap: usize,
}

impl Tail {
    pub(crate) fn new(cap: usize) -> Tail {
        Tail {
            kept: Vec::new(),
            total: 0,
            cap,
        }
    }

    /// Adds bytes; beyond the cap the oldest are dropped (the end holds the answer).
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        self.kept.extend_from_slice(bytes);
        // Drained in batches, so that a long stream costs amortised O(1) per byte.
        if self.kept.len() > self.cap.saturating_mul(2).max(64 << 10) {
            let excess = self.kept.len() - self.cap;
            self.kept.drain(..excess);
        }
    }

    /// The text kept, and a note when the cap bit (`what` names the stream).
    pub(crate) fn finish(mut self, what: &str) -> (String, Option<String>) {
        if self.kept.len() > self.cap {
            let excess = self.kept.len() - self.cap;
            self.kept.drain(..excess);
        }
        let note = (self.total > self.kept.len() as u64).then(|| {
            format!(
                "{what}: {} bytes, only the last {} kept (limits.output_bytes)",
                self.total,
                self.kept.len()
            )
        });
        (String::from_utf8_lossy(&self.kept).into_owned(), note)
    }
}

/// Reads `stream` to its end, or until `stop` completes, keeping its tail.
pub(crate) async fn read_tail(
    stream: Option<impl AsyncRead + Unpin>,
    cap: usize,
    stop: impl std::future::Future<Output = ()>,
) -> Tail {
    let mut tail = Tail::new(cap);
    let Some(mut stream) = stream else {
        return tail;
    };
    // Filled by `read_buf` without being zeroed first: most streams are a few hundred bytes,
    // and zeroing 64 KiB twice a trial showed in its profile.
    let mut buffer = Vec::with_capacity(64 << 10);
    tokio::pin!(stop);
    loop {
        buffer.clear();
        tokio::select! {
            read = stream.read_buf(&mut buffer) => match read {
                Ok(0) | Err(_) => break,
                Ok(_) => tail.push(&buffer),
            },
            () = &mut stop => break,
        }
    }
    tail
}

/// Opens a file the harness may have written: never through a link, never a FIFO or device
/// (`O_NONBLOCK` keeps a FIFO from blocking the open; the type is checked on the open file).
fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC).bits() as i32)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok(file)
}

/// `agent_output.txt` in `workspace`, at most `cap` bytes: `None` when it is not there or is
/// not a regular file (a link is refused, with a note).
pub(crate) fn read_output_file(
    workspace: &Path,
    cap: usize,
    notes: &mut Vec<String>,
) -> Option<String> {
    read_capped(workspace, super::OUTPUT_FILE, cap, notes)
}

/// The file `name` in `folder`, written by the harness (an answer file), at most `cap` bytes:
/// `None` when it is not there or is not a regular file (a link is refused, with a note).
pub(crate) fn read_capped(
    folder: &Path,
    name: &str,
    cap: usize,
    notes: &mut Vec<String>,
) -> Option<String> {
    let path = folder.join(name);
    let file = match open_regular(&path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return None,
        Err(error) => {
            notes.push(format!(
                "{name}: not read ({error}); only a regular file is read"
            ));
            return None;
        }
    };
    let size = file.metadata().map(|metadata| metadata.len()).unwrap_or(0);
    let mut kept = Vec::new();
    let _ = file.take(cap as u64).read_to_end(&mut kept);
    if size > cap as u64 {
        notes.push(format!(
            "{name}: {size} bytes, only the first {cap} read (limits.output_file_bytes)"
        ));
    }
    Some(String::from_utf8_lossy(&kept).into_owned())
}

/// Every regular file under `root`, by relative path, with its size and SHA-256 (what the
/// file checks read), within `limits`: links are not followed, a file past
/// `workspace_file_bytes` or past the total is listed with its size and an empty hash, and
/// at most `workspace_files` files are listed. Each cap that bites adds one note.
pub(crate) fn snapshot(
    root: &Path,
    limits: &LimitsConfig,
    notes: &mut Vec<String>,
) -> std::io::Result<BTreeMap<String, WorkspaceFile>> {
    let mut files = BTreeMap::new();
    let mut hashed: u64 = 0;
    let (mut unhashed, mut unlisted, mut unwalked) = (0usize, 0usize, 0usize);
    let mut pending = vec![root.to_path_buf()];
    // Folders count against the same cap as files, so a tree of empty folders is not walked
    // without end either.
    let mut walked = 0usize;
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder)? {
            let entry = entry?;
            // The entry's own type: a link is neither a folder nor a file here.
            let kind = entry.file_type()?;
            let path = entry.path();
            if kind.is_dir() {
                if walked >= limits.workspace_files || files.len() >= limits.workspace_files {
                    unwalked += 1;
                } else {
                    walked += 1;
                    pending.push(path);
                }
                continue;
            }
            if !kind.is_file() {
                continue;
            }
            if files.len() >= limits.workspace_files {
                unlisted += 1;
                continue;
            }
            // Replaced by a link since it was listed: not read.
            let Ok(file) = open_regular(&path) else {
                continue;
            };
            // What is hashed is what was measured: a file still growing is read up to here.
            let size = file.metadata()?.len();
            let sha256 = if size > limits.workspace_file_bytes
                || hashed.saturating_add(size) > limits.workspace_total_bytes
            {
                unhashed += 1;
                String::new()
            } else {
                let (digest, read) = hash(file.take(size))?;
                hashed += read;
                digest
            };
            let relative = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .to_string_lossy()
                .into_owned();
            files.insert(relative, WorkspaceFile { size, sha256 });
        }
    }
    if unhashed > 0 {
        notes.push(format!(
            "workspace: {unhashed} file(s) listed by size only, not hashed (limits.workspace_file_bytes {} per file, limits.workspace_total_bytes {} in all)",
            limits.workspace_file_bytes, limits.workspace_total_bytes
        ));
    }
    if unlisted > 0 {
        notes.push(format!(
            "workspace: {unlisted} file(s) not listed past the first {} (limits.workspace_files)",
            limits.workspace_files
        ));
    }
    if unwalked > 0 {
        notes.push(format!(
            "workspace: {unwalked} folder(s) not walked past the first {} files or folders (limits.workspace_files)",
            limits.workspace_files
        ));
    }
    Ok(files)
}

/// A file's SHA-256 in hex and its length, read in blocks (never whole into memory).
fn hash(mut file: impl Read) -> std::io::Result<(String, u64)> {
    let mut hasher = Sha256::new();
    // On the stack: a workspace's files are mostly small, and a zeroed heap block a file cost
    // more than hashing it.
    let mut buffer = [0u8; 8 << 10];
    let mut total = 0u64;
    loop {
        let read = file.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        total += read as u64;
        hasher.update(&buffer[..read]);
    }
    let digest = hasher.finalize();
    Ok((
        digest.iter().map(|byte| format!("{byte:02x}")).collect(),
        total,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tail_keeps_the_end_and_says_how_much_was_cut() {
        let mut tail = Tail::new(4);
        for _ in 0..100_000 {
            tail.push(b"0123456789");
        }
        tail.push(b"ANSWER");
        let (text, note) = tail.finish("stdout");
        assert_eq!(text, "SWER");
        assert!(
            note.as_deref()
                .unwrap()
                .contains("1000006 bytes, only the last 4 kept"),
            "{note:?}"
        );
        let (text, note) = {
            let mut small = Tail::new(10);
            small.push(b"short");
            small.finish("stdout")
        };
        assert_eq!((text.as_str(), note), ("short", None));
    }

    #[test]
    fn links_planted_in_the_workspace_are_never_followed() {
        let secret = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(secret.path(), "the host's secret").unwrap();
        let workspace = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(
            secret.path(),
            workspace.path().join(super::super::OUTPUT_FILE),
        )
        .unwrap();
        std::os::unix::fs::symlink(secret.path(), workspace.path().join("notes.txt")).unwrap();
        std::os::unix::fs::symlink("/", workspace.path().join("root")).unwrap();
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            workspace.path().join("pipe"),
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
        let mut notes = Vec::new();
        assert_eq!(
            read_output_file(workspace.path(), 1 << 20, &mut notes),
            None
        );
        assert!(
            notes[0].contains("only a regular file is read"),
            "{notes:?}"
        );
        let files = snapshot(workspace.path(), &LimitsConfig::default(), &mut notes).unwrap();
        assert!(files.is_empty(), "{files:?}");
    }

    #[test]
    fn folders_count_against_the_cap_so_a_deep_tree_is_not_walked_to_its_end() {
        let workspace = tempfile::tempdir().unwrap();
        let mut folder = workspace.path().to_path_buf();
        for depth in 0..50 {
            folder.push(format!("level{depth}"));
            std::fs::create_dir(&folder).unwrap();
            std::fs::write(folder.join("file.txt"), "x").unwrap();
        }
        let limits = LimitsConfig {
            workspace_files: 5,
            ..LimitsConfig::default()
        };
        let mut notes = Vec::new();
        let files = snapshot(workspace.path(), &limits, &mut notes).unwrap();
        assert!(files.len() <= 5, "{files:?}");
        assert!(
            notes
                .iter()
                .any(|note| note.contains("1 folder(s) not walked past the first 5")),
            "{notes:?}"
        );
    }

    #[test]
    fn snapshot_caps_bite_with_a_note_and_the_answer_file_is_cut() {
        let workspace = tempfile::tempdir().unwrap();
        std::fs::write(workspace.path().join("big.bin"), vec![b'x'; 5000]).unwrap();
        std::fs::write(workspace.path().join("small.txt"), "ok").unwrap();
        std::fs::write(
            workspace.path().join(super::super::OUTPUT_FILE),
            "answer and more",
        )
        .unwrap();
        let limits = LimitsConfig {
            workspace_file_bytes: 1000,
            ..LimitsConfig::default()
        };
        let mut notes = Vec::new();
        let files = snapshot(workspace.path(), &limits, &mut notes).unwrap();
        assert_eq!(files["big.bin"].size, 5000);
        assert_eq!(files["big.bin"].sha256, "");
        assert_eq!(files["small.txt"].sha256.len(), 64);
        assert!(
            notes[0].contains("1 file(s) listed by size only"),
            "{notes:?}"
        );
        let answer = read_output_file(workspace.path(), 6, &mut notes);
        assert_eq!(answer.as_deref(), Some("answer"));
        assert!(notes[1].contains("only the first 6 read"), "{notes:?}");
    }
}
