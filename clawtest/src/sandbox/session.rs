//! One harness session across a closed loop's rounds (`[harness] follow_up = "session"`,
//! docs/closed-loop.md, "One session across rounds"): the files of the follow-up protocol in
//! the session folder, and the link between the trial (which sends each next message) and the
//! backend (which hands back each answered round while the harness keeps running).
//!
//! The protocol is files in one folder (`CLAWTEST_SESSION_DIR`), because a folder is what
//! both backends already share with the harness (a bind mount in docker), a harness in any
//! language (a shell script too) can wait for a file, and nothing the harness writes there is
//! read but through [`capture`](super::capture) (never through a link, capped). The harness
//! writes round N's answer to `N.answer` (atomically: written beside, then renamed), which ends
//! the round; clawtest then writes `N+1.prompt` (the next user message) or `end`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Mutex, mpsc};

use std::collections::BTreeMap;

use tokio_util::sync::CancellationToken;

use super::{CheckOutcome, Finished, SandboxError};
use crate::trajectory::{HarnessExit, WorkspaceFile};

/// The trial folder's folder of the follow-up protocol (`CLAWTEST_SESSION_DIR`).
pub const SESSION_FOLDER: &str = "session";
/// The file clawtest writes when no round follows: the harness should exit.
pub const END_FILE: &str = "end";
/// How often the backend looks for the round's answer.
const LOOK_EVERY: Duration = Duration::from_millis(25);

/// The file clawtest writes round `round`'s user message to (round 2 on).
pub fn prompt_file(round: u32) -> String {
    format!("{round}.prompt")
}

/// The file the harness writes round `round`'s answer to; its appearance ends the round.
pub fn answer_file(round: u32) -> String {
    format!("{round}.answer")
}

/// The next round, as the trial sends it to the backend.
#[derive(Debug, Clone)]
pub struct NextRound {
    /// Its number.
    pub number: u32,
    /// The simulated user's message.
    pub message: String,
    /// Its time limit.
    pub timeout: Duration,
}

/// The backend's end of a kept session, in the launch's [`RoundSetup`](super::RoundSetup).
#[derive(Debug, Clone)]
pub struct SessionLink {
    answered: mpsc::UnboundedSender<Finished>,
    next: Arc<Mutex<mpsc::UnboundedReceiver<Option<NextRound>>>>,
    /// The session's time over all rounds: the backend's outer limit (docker's shim), which
    /// each round's own limit keeps it well within.
    pub lifetime: Duration,
}

/// The trial's end of a kept session.
#[derive(Debug)]
pub struct SessionControl {
    /// Each round the harness answered, as the backend saw it then.
    pub answered: mpsc::UnboundedReceiver<Finished>,
    next: mpsc::UnboundedSender<Option<NextRound>>,
}

/// A new session's two ends.
pub fn link(lifetime: Duration) -> (SessionLink, SessionControl) {
    let (answered, answers) = mpsc::unbounded_channel();
    let (next, nexts) = mpsc::unbounded_channel();
    (
        SessionLink {
            answered,
            next: Arc::new(Mutex::new(nexts)),
            lifetime,
        },
        SessionControl {
            answered: answers,
            next,
        },
    )
}

impl SessionControl {
    /// Sends the next round (`None`: the session ends); false when the backend has gone.
    pub fn send(&self, next: Option<NextRound>) -> bool {
        self.next.send(next).is_ok()
    }
}

/// What a backend collected of an answered round while the harness waits.
pub(crate) struct Answered {
    /// The answer file's text.
    pub(crate) answer: String,
    /// The workspace's files.
    pub(crate) workspace: BTreeMap<String, WorkspaceFile>,
    /// How long the round took, from its message to its answer.
    pub(crate) duration: Duration,
    /// The launch's checks, run in the workspace beside the waiting harness.
    pub(crate) checks: Vec<CheckOutcome>,
    /// The caps that bit on the way.
    pub(crate) notes: Vec<String>,
}

impl Answered {
    /// The round as the trial sees it: ended normally (the harness said it answered, though
    /// it keeps running), its answer the answer file.
    fn finished(self) -> Finished {
        Finished {
            exit: answered_exit(),
            stdout: String::new(),
            stderr: String::new(),
            output_file: Some(self.answer),
            workspace: self.workspace,
            duration: self.duration,
            checks: self.checks,
            limits_reached: self.notes,
            disk_full: None,
        }
    }
}

/// How an answered round ends in a trajectory, and a session the trial ended: as a normal end
/// (the harness said it answered).
pub(crate) fn answered_exit() -> HarnessExit {
    HarnessExit {
        code: Some(0),
        timed_out: false,
        signal: None,
    }
}

/// The backend's state of a kept session: the folder (on the host), the round being
/// answered, and the link.
pub(crate) struct Rounds {
    link: SessionLink,
    folder: PathBuf,
    /// The round the harness is answering now.
    pub(crate) round: u32,
}

impl Rounds {
    /// The session of `link` in `folder` (made if missing), answering round `round` first.
    pub(crate) fn new(link: SessionLink, folder: PathBuf, round: u32) -> std::io::Result<Rounds> {
        std::fs::create_dir_all(&folder)?;
        Ok(Rounds {
            link,
            folder,
            round,
        })
    }

    /// Returns once the harness has answered the current round (its answer file exists, of
    /// whatever kind: a link is read as nothing).
    pub(crate) async fn answered(&self) {
        let path = self.folder.join(answer_file(self.round));
        while std::fs::symlink_metadata(&path).is_err() {
            tokio::time::sleep(LOOK_EVERY).await;
        }
    }

    /// The current round's answer: capped at `cap`, never read through a link (noted then).
    pub(crate) fn answer(&self, cap: usize, notes: &mut Vec<String>) -> String {
        super::capture::read_capped(&self.folder, &answer_file(self.round), cap, notes)
            .unwrap_or_default()
    }

    /// Hands the answered round to the trial, waits for what follows (or `interrupt`) and
    /// tells the harness: the next round's message (its time limit returned), or the end
    /// (`None`).
    pub(crate) async fn hand_over(
        &mut self,
        answered: Answered,
        interrupt: &CancellationToken,
    ) -> Result<Option<Duration>, SandboxError> {
        let waited = async {
            match self.link.answered.send(answered.finished()) {
                Ok(()) => self.link.next.lock().await.recv().await.flatten(),
                Err(_) => None,
            }
        };
        let next = tokio::select! {
            next = waited => next,
            () = interrupt.cancelled() => return Err(SandboxError::Interrupted),
        };
        let written = match &next {
            Some(next) => write(
                &self.folder,
                &prompt_file(next.number),
                next.message.as_bytes(),
            ),
            None => write(&self.folder, END_FILE, b""),
        };
        written.map_err(|error| SandboxError::Prepare {
            message: format!("writing the session's next message: {error}"),
        })?;
        Ok(next.map(|next| {
            self.round = next.number;
            next.timeout
        }))
    }
}

/// Writes `name` in the session folder whole (a harness sees it complete or not at all), never
/// through a link the harness put there.
fn write(folder: &Path, name: &str, contents: &[u8]) -> std::io::Result<()> {
    crate::persist::write(
        &folder.join(name),
        contents,
        crate::persist::Durability::Report,
    )
}
