//! The model gateway: the LLM endpoint the harness talks to (DESIGN.md §6). One gateway per
//! trial. This version answers from cassettes (replay); `live` and `record` are modes of the
//! same seam that later work fills in.
//!
//! A replay that cannot answer (no cassette, a missing call, a request that differs from the
//! recorded one) is an infrastructure error of the trial: never a silent live call, never a
//! made-up answer.

pub mod cassette;
pub mod server;

use serde::{Deserialize, Serialize};

pub use cassette::{Cassette, CassetteError, Interaction};
pub use server::{Gateway, GatewayFailure, ModelCall};

/// Where model answers come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Forward to the real provider.
    Live,
    /// Forward to the real provider and write every exchange to a cassette.
    Record,
    /// Answer from the cassette; free and deterministic (the CI default).
    #[default]
    Replay,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Live => "live",
            Mode::Record => "record",
            Mode::Replay => "replay",
        }
    }
}
