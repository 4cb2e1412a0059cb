//! The trial folder's disk cap (`[limits] workspace_disk_bytes`), held on both backends: one
//! file is bounded by the kernel (`RLIMIT_FSIZE` on the process backend's harness, the
//! container's `fsize` ulimit on docker: a write past it fails, SIGXFSZ by default), and the
//! whole folder by a watch on the host that measures it every [`POLL`] while the harness runs
//! (in docker the workspace is a bind mount of it, so the same measure works), and once more
//! when the harness has ended. When the cap is passed the harness is stopped and the trial is
//! an error naming the setting ([`DiskFull`]).
//!
//! The measure counts blocks on disk (a sparse file costs what it holds), walks no link, and
//! stops as soon as it passes the cap or [`MAX_ENTRIES`] entries, so a harness cannot make it
//! slow or unbounded.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How often the watch measures the trial's folder while the harness runs: a harness that
/// ends sooner is measured once, at its end.
pub(crate) const POLL: Duration = Duration::from_millis(200);

/// Files and folders the measure walks before it calls the folder full: a flood of empty
/// files costs inodes, not blocks.
pub(crate) const MAX_ENTRIES: usize = 1_000_000;

/// The signal a write past `RLIMIT_FSIZE` sends (the process is ended unless it ignores it).
pub(crate) const FILE_SIZE_SIGNAL: i32 = rustix::process::Signal::XFSZ.as_raw();

/// The trial's folder passed `[limits] workspace_disk_bytes`: the harness was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskFull {
    /// The cap, `[limits] workspace_disk_bytes`.
    pub cap: u64,
    /// What passed it.
    pub seen: Seen,
}

/// What passed the disk cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// The folder's files took at least this many bytes (the measure stops past the cap).
    Bytes(u64),
    /// The folder held more than [`MAX_ENTRIES`] files and folders.
    Entries,
    /// One file reached the cap (the kernel refused to let it grow: SIGXFSZ).
    OneFile,
}

impl std::fmt::Display for DiskFull {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self.seen {
            Seen::Bytes(bytes) => format!("its trial folder took {bytes} bytes on disk"),
            Seen::Entries => format!("its trial folder held more than {MAX_ENTRIES} files"),
            Seen::OneFile => "one file it wrote reached that size".into(),
        };
        write!(
            formatter,
            "the harness passed the disk cap, limits.workspace_disk_bytes = {} ({}): {what}, so it was stopped; if the agent needs that room, raise `workspace_disk_bytes` under [limits] in clawtest.toml",
            self.cap,
            in_units(self.cap)
        )
    }
}

impl DiskFull {
    /// The note the trial keeps in `limits_reached`.
    pub(crate) fn note(&self) -> String {
        format!("trial folder: {self}")
    }
}

/// `bytes` in the largest binary unit that keeps one decimal meaningful (`1.0 GiB`).
fn in_units(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = "bytes";
    for name in UNITS {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = name;
    }
    if unit == "bytes" {
        format!("{bytes} bytes")
    } else {
        format!("{value:.1} {unit}")
    }
}

/// Whether `root` takes more than `cap` bytes on disk (or holds more than [`MAX_ENTRIES`]
/// entries); `None` when it is within the cap. Links are not followed; an entry that vanishes
/// while it is walked is skipped.
pub(crate) fn measure(root: &Path, cap: u64) -> Option<Seen> {
    use std::os::unix::fs::MetadataExt;
    let mut used: u64 = 0;
    let mut entries = 0usize;
    let mut pending = vec![root.to_path_buf()];
    while let Some(folder) = pending.pop() {
        let Ok(listing) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in listing.flatten() {
            entries += 1;
            if entries > MAX_ENTRIES {
                return Some(Seen::Entries);
            }
            // The entry's own metadata (`lstat`): a link is measured, never followed.
            let Ok(metadata) = entry.metadata() else {
                continue;
            };
            used = used.saturating_add(metadata.blocks().saturating_mul(512));
            if used > cap {
                return Some(Seen::Bytes(used));
            }
            if metadata.is_dir() {
                pending.push(entry.path());
            }
        }
    }
    None
}

/// Measures a trial's folder every [`POLL`] while its harness runs; [`passed`](Self::passed)
/// completes when the cap is passed. Dropping it stops the measuring.
pub(crate) struct DiskWatch {
    root: PathBuf,
    cap: u64,
    found: watch::Receiver<Option<Seen>>,
    measuring: JoinHandle<()>,
}

impl DiskWatch {
    /// Starts measuring `root` against `cap`.
    pub(crate) fn start(root: PathBuf, cap: u64) -> DiskWatch {
        let (report, found) = watch::channel(None);
        let folder = root.clone();
        let measuring = tokio::spawn(async move {
            loop {
                tokio::time::sleep(POLL).await;
                let folder = folder.clone();
                let seen = tokio::task::spawn_blocking(move || measure(&folder, cap))
                    .await
                    .ok()
                    .flatten();
                if seen.is_some() {
                    let _ = report.send(seen);
                    return;
                }
            }
        });
        DiskWatch {
            root,
            cap,
            found,
            measuring,
        }
    }

    /// Completes when a measure finds the cap passed (never, if none does).
    pub(crate) async fn passed(&mut self) {
        if self.found.wait_for(Option::is_some).await.is_err() {
            // The measuring ended without finding it (its task failed): nothing will come.
            std::future::pending::<()>().await;
        }
    }

    /// Stops measuring, and says whether the cap was passed: found while the harness ran, by
    /// one last measure, or by the harness's end by SIGXFSZ (`signal`).
    pub(crate) fn finish(self, signal: Option<i32>) -> Option<DiskFull> {
        self.measuring.abort();
        let seen = (*self.found.borrow())
            .or_else(|| measure(&self.root, self.cap))
            .or_else(|| (signal == Some(FILE_SIZE_SIGNAL)).then_some(Seen::OneFile));
        seen.map(|seen| DiskFull {
            cap: self.cap,
            seen,
        })
    }
}

impl Drop for DiskWatch {
    fn drop(&mut self) {
        self.measuring.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_measure_counts_blocks_below_the_root_and_stops_past_the_cap() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("a/b")).unwrap();
        std::fs::write(root.path().join("a/b/one"), vec![1u8; 300_000]).unwrap();
        std::fs::write(root.path().join("two"), vec![2u8; 300_000]).unwrap();
        assert_eq!(measure(root.path(), 2 << 20), None);
        let Some(Seen::Bytes(bytes)) = measure(root.path(), 400_000) else {
            panic!("600 kB over a 400 kB cap was not found");
        };
        assert!(bytes > 400_000, "{bytes}");
    }

    #[test]
    fn a_link_is_measured_not_followed() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("big"), vec![1u8; 2 << 20]).unwrap();
        let root = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("link")).unwrap();
        assert_eq!(measure(root.path(), 1 << 20), None);
    }

    #[test]
    fn the_message_names_the_setting_its_value_and_what_to_do() {
        let full = DiskFull {
            cap: 1 << 30,
            seen: Seen::Bytes(1_073_745_920),
        };
        let message = full.to_string();
        assert!(
            message.contains("limits.workspace_disk_bytes = 1073741824 (1.0 GiB)"),
            "{message}"
        );
        assert!(message.contains("1073745920 bytes"), "{message}");
        assert!(
            message.contains("raise `workspace_disk_bytes` under [limits]"),
            "{message}"
        );
        assert_eq!(in_units(1 << 20), "1.0 MiB");
        assert_eq!(in_units(1000), "1000 bytes");
    }

    #[tokio::test]
    async fn the_watch_finds_a_folder_filled_while_it_runs() {
        let root = tempfile::tempdir().unwrap();
        let mut watch = DiskWatch::start(root.path().to_path_buf(), 1 << 20);
        for index in 0..4 {
            std::fs::write(root.path().join(index.to_string()), vec![0u8; 400_000]).unwrap();
        }
        tokio::time::timeout(Duration::from_secs(60), watch.passed())
            .await
            .expect("the watch found the folder past its cap");
        assert!(matches!(
            watch.finish(None),
            Some(DiskFull {
                seen: Seen::Bytes(_),
                ..
            })
        ));
    }

    #[tokio::test]
    async fn a_harness_ended_by_sigxfsz_passed_the_cap_even_when_the_folder_is_within_it() {
        let root = tempfile::tempdir().unwrap();
        let watch = DiskWatch::start(root.path().to_path_buf(), 1 << 20);
        assert_eq!(watch.finish(None), None);
        let watch = DiskWatch::start(root.path().to_path_buf(), 1 << 20);
        assert_eq!(
            watch.finish(Some(FILE_SIZE_SIGNAL)).map(|full| full.seen),
            Some(Seen::OneFile)
        );
    }
}
