//! The loop's seam: [`Harness`], what the loop asks of the trial it runs in (a round of the
//! harness, the models of the loop's own speakers (the simulated user's, the supervisor's),
//! the budget, the round's start on the gateway), with the future type its methods return. The trial implements it; the loop's tests fake it.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::llm::client::{Chat, Message};
use crate::sandbox::RoundSetup;
use crate::trajectory::Trajectory;

/// A future of the loop's seam.
pub(crate) type Step<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a model of the loop's said: its text (`None`: silence), or why the answer is of no
/// use.
pub(crate) type ModelReply = Result<Option<String>, String>;

/// What the loop asks of the trial it runs in.
pub(crate) trait Harness: Send {
    /// Why a round could not be run or graded (the trial's infrastructure error).
    type Error: Send;

    /// Runs the harness once for `round` on the user's `message` within `timeout`; the
    /// trajectory holds the World's whole audit so far, every model call so far, this
    /// round's output and workspace, and this round's duration.
    fn run_round(
        &mut self,
        round: RoundSetup,
        message: String,
        timeout: Duration,
    ) -> Step<'_, Result<Trajectory, Self::Error>>;

    /// Asks one of the loop's models with `chat` (the simulated user's or the supervisor's:
    /// `chat.speaker` says whose, and so how the call is logged, recorded and replayed)
    /// through the trial's gateway: the trial's error when the gateway failed (a replay miss,
    /// the cost limit, the provider); else the answer's text (`None`: silence), or why the
    /// answer is of no use.
    fn ask_model(
        &mut self,
        chat: Chat,
        conversation: Vec<Message>,
    ) -> Step<'_, Result<ModelReply, Self::Error>>;

    /// The text of the workspace file at `path` (relative to the workspace) as the round left
    /// it, read without following a link and cut at a bound; `None` when it cannot be read.
    fn workspace_text(&self, path: &str) -> Option<String>;

    /// Whether the run's cost limit is reached (no further round is started then).
    fn budget_exhausted(&self) -> bool;

    /// Starts round `number` on the gateway: its calls are recorded and replayed as that
    /// round's.
    fn begin_round(&self, number: u32);
}
