//! [`UnknownChoice`]: the error of a command-line word that names none of its option's
//! choices (`--backend`, `--mode`); a leaf both `sections.rs` and `llm.rs` use.

/// A word on the command line that is none of its option's choices.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{value}` is not a {kind}: use {choices}")]
pub struct UnknownChoice {
    /// What was written.
    pub value: String,
    /// What it should have been (`backend`, `mode`).
    pub kind: &'static str,
    /// The choices, in words.
    pub choices: &'static str,
}
