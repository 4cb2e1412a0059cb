//! Owns the harness's side of a closed loop's kept session (clawtest's `[harness] follow_up =
//! "session"`, its docs/closed-loop.md): round N's answer written to `N.answer` in
//! `CLAWTEST_SESSION_DIR` (beside, then renamed, so that clawtest never reads half of it), then
//! a wait for `N+1.prompt` (the next user message) or `end`.

use std::path::PathBuf;
use std::time::Duration;

/// The session folder; set only when the harness is to keep its session.
pub const SESSION_FOLDER_VARIABLE: &str = "CLAWTEST_SESSION_DIR";
/// The round the harness is started in (1 unless it was started again in a later round).
pub const ROUND_VARIABLE: &str = "CLAWTEST_ROUND";

/// How often the next message is looked for: clawtest writes it once the round is graded.
const LOOK_EVERY: Duration = Duration::from_millis(20);

/// A kept session: its folder and the round being answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub folder: PathBuf,
    pub round: u32,
}

impl Session {
    /// Hands `answer` over as the current round's, then waits for the next round's message
    /// (`None`: the session ended). Waits as long as it takes: clawtest ends the harness at the
    /// trial's end whatever it does.
    pub fn next(&mut self, answer: &str) -> std::io::Result<Option<String>> {
        let written = self.folder.join(format!(".{}.answer.part", self.round));
        std::fs::write(&written, answer)?;
        std::fs::rename(&written, self.folder.join(format!("{}.answer", self.round)))?;
        eprintln!("session: round {} answered", self.round);
        let prompt = self.folder.join(format!("{}.prompt", self.round + 1));
        let end = self.folder.join("end");
        loop {
            if end.exists() {
                return Ok(None);
            }
            match std::fs::read_to_string(&prompt) {
                Ok(message) => {
                    self.round += 1;
                    eprintln!("session: round {} begins", self.round);
                    return Ok(Some(message));
                }
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    std::thread::sleep(LOOK_EVERY);
                }
                Err(error) => return Err(error),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_handed_over_and_the_next_message_or_the_end_read() {
        let folder = tempfile::tempdir().unwrap();
        let mut session = Session {
            folder: folder.path().to_path_buf(),
            round: 1,
        };
        std::fs::write(folder.path().join("2.prompt"), "and now?").unwrap();
        assert_eq!(session.next("first").unwrap().as_deref(), Some("and now?"));
        assert_eq!(
            std::fs::read_to_string(folder.path().join("1.answer")).unwrap(),
            "first"
        );
        assert_eq!(session.round, 2);
        std::fs::write(folder.path().join("end"), "").unwrap();
        assert_eq!(session.next("second").unwrap(), None);
        assert_eq!(
            std::fs::read_to_string(folder.path().join("2.answer")).unwrap(),
            "second"
        );
    }
}
