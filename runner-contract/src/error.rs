//! The one public error type: a kind a caller can act on, and a message that says what to do.

use crate::state::SessionState;

/// What went wrong, in terms a caller (a daemon, the command line) can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The session (or another named thing) does not exist.
    NotFound,
    /// The move is not in the state table; the error carries the current state.
    IllegalMove,
    /// The caller's input was refused before anything was done.
    InvalidInput,
    /// The agent program is missing, not runnable, or not logged in.
    AgentUnavailable,
    /// The adapter was left out of this build (a cargo feature is off).
    NotInBuild,
    /// Approve was asked for but the agent changed nothing.
    NothingToApprove,
    /// The repository could not be read or changed.
    Vcs,
    /// Another process holds a lock this needs (a git `.lock` file): wait for it and try
    /// again, or remove the lock file if nothing is running.
    Locked,
    /// Approve was refused: the run was verified and the sandbox's tests failed or could not
    /// run. Approve again with `force` to go ahead anyway.
    VerifyFailed,
    /// A stored record could not be read: corrupt, unknown fields, bad state.
    CorruptRecord,
    /// The file system or another I/O source failed.
    Io,
    /// The operation is not supported by this agent or runner.
    Unsupported,
    /// A bug or an unexpected condition inside codehands.
    Internal,
}

/// The error every public codehands API returns.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    kind: ErrorKind,
    message: String,
    state: Option<SessionState>,
}

/// `Result` with codehands' [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error of `kind` with a message that says what was wrong and what to do.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            state: None,
        }
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The human message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// For [`ErrorKind::IllegalMove`]: the state the session is in.
    pub fn current_state(&self) -> Option<SessionState> {
        self.state
    }

    /// Shorthand for [`ErrorKind::InvalidInput`].
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidInput, message)
    }

    /// Shorthand for [`ErrorKind::NotFound`].
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }

    /// Shorthand for [`ErrorKind::Internal`].
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }

    /// A refused state move, naming the current state and the move that was asked for.
    pub fn illegal_move(current: SessionState, wanted: SessionState, what: &str) -> Self {
        Self {
            kind: ErrorKind::IllegalMove,
            message: format!(
                "cannot {what}: the session is {current}, and {current} → {wanted} is not allowed{}",
                hint_for(current, wanted)
            ),
            state: Some(current),
        }
    }

    /// An I/O error with the path or action it concerns.
    pub fn io(context: impl std::fmt::Display, err: &std::io::Error) -> Self {
        Self::new(ErrorKind::Io, format!("{context}: {err}"))
    }

    /// The error for a feature that was left out of this build.
    pub fn not_in_build(what: &str, feature: &str) -> Self {
        Self::new(
            ErrorKind::NotInBuild,
            format!(
                "{what} is not in this build of codehands: rebuild with `--features {feature}`"
            ),
        )
    }
}

fn hint_for(current: SessionState, wanted: SessionState) -> &'static str {
    use SessionState::*;
    match (current, wanted) {
        (Failed, _) => " (a failed session is final: start a new one)",
        (Running, Approved | Rejected) => " (wait for the agent to finish, or stop it first)",
        (Stopped, Approved) => " (resume it and let it finish first, or reject it)",
        (Approved | Rejected, _) => " (the session is over)",
        (_, Stopped) => " (only a running session can be stopped)",
        (_, Running) => " (only a stopped session can be resumed)",
        _ => "",
    }
}
