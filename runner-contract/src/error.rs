//! The one public error type: a kind a caller can act on, and a message that says what to do.

use std::sync::Arc;

use crate::state::SessionState;

/// The error underneath, kept for callers that walk `source()` (shared: [`Error`] is `Clone`).
type Source = Arc<dyn std::error::Error + Send + Sync + 'static>;

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
    /// The disk holding codehands' files (or the worktree) is full or read-only: free space
    /// (or make it writable), then run `codehands recover`.
    DiskFull,
    /// The file system or another I/O source failed.
    Io,
    /// The operation is not supported by this agent or runner.
    Unsupported,
    /// A bug or an unexpected condition inside codehands.
    Internal,
}

/// The error every public codehands API returns.
#[derive(Debug, Clone)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    state: Option<SessionState>,
    source: Option<Source>,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        // The error underneath itself, not the `Arc` that shares it, so callers can downcast.
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
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
            source: None,
        }
    }

    /// The same error, keeping `source` as the error underneath it (`std::error::Error::source`).
    /// The message is unchanged: it already says what failed, in words.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(source));
        self
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
            source: None,
        }
    }

    /// An I/O error with the path or action it concerns; a full or read-only disk is
    /// [`ErrorKind::DiskFull`].
    /// `err` is kept as the source: its OS error code when it has one, else its kind and text.
    pub fn io(context: impl std::fmt::Display, err: &std::io::Error) -> Self {
        use std::io::ErrorKind as Io;
        let kind = match err.kind() {
            Io::StorageFull | Io::QuotaExceeded | Io::ReadOnlyFilesystem => ErrorKind::DiskFull,
            _ => ErrorKind::Io,
        };
        let source = match err.raw_os_error() {
            Some(code) => std::io::Error::from_raw_os_error(code),
            None => std::io::Error::new(err.kind(), err.to_string()),
        };
        Self::new(kind, format!("{context}: {err}")).with_source(source)
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

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[test]
    fn an_io_error_keeps_its_source() {
        let io = std::io::Error::from_raw_os_error(libc::ENOENT);
        let err = Error::io("cannot read /nowhere", &io);
        let source = err.source().expect("the io error is kept");
        let source = source
            .downcast_ref::<std::io::Error>()
            .expect("as an io::Error");
        assert_eq!(source.raw_os_error(), Some(libc::ENOENT));
        assert_eq!(err.to_string(), format!("cannot read /nowhere: {io}"));
        assert!(err.clone().source().is_some(), "a clone keeps it too");
    }

    #[test]
    fn a_plain_error_has_no_source_until_given_one() {
        let err = Error::invalid_input("no prompt: pass one");
        assert!(err.source().is_none());
        let err = err.with_source(std::fmt::Error);
        assert!(err.source().unwrap().is::<std::fmt::Error>());
        assert_eq!(err.to_string(), "no prompt: pass one");
    }
}
