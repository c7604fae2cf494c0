//! The one error of this crate, with kinds a caller can act on.

use std::path::PathBuf;

/// What went wrong; every message says what to do about it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The request could not be run as given (an owned flag among the arguments, a resume id
    /// that is not a UUID, a missing working folder …). Nothing was spawned.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The program could not be started (not found, not executable …).
    #[error("cannot start {}: {source} (install Claude Code, or set the runner's program to its path: `Defaults::program`, or CLAUDE_BIN through `Defaults::from_claude_bin`)", program.display())]
    Spawn {
        /// The program that was to be started.
        program: PathBuf,
        /// Why the operating system refused.
        #[source]
        source: std::io::Error,
    },
    /// The session is closed or closing: the input was not written. Create a new session
    /// (with `resume_session_id` to go on with the same conversation).
    #[error(
        "the session is closed or closing: the input was not written; create a new session to go on"
    )]
    Closed,
    /// Writing to Claude's stdin failed, usually because the process has exited.
    #[error("cannot write to Claude's stdin (has the process exited? see the session's exit): {0}")]
    Write(#[source] std::io::Error),
}

/// This crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::InvalidInput(message.into())
    }
}
