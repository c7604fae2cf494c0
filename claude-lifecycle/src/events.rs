//! What a session tells its listeners: one enum, live, never replayed.

use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

use crate::process::ExitInfo;

/// A session's state.
///
/// `starting → ready → running → ready …`, and at the end `closed` (closed by the caller,
/// or exited with code 0) or `failed` (exited by itself with another code or a signal).
/// `ready` means writable, not authenticated: Claude checks its credentials on the first turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionState {
    /// Being spawned.
    Starting,
    /// Spawned and idle: inputs may be sent.
    Ready,
    /// A turn is under way (an input was written, and its result has not come).
    Running,
    /// Ended by `close()` or by exiting with code 0. Final.
    Closed,
    /// Ended by itself with a non-zero code or a signal. Final.
    Failed,
}

impl SessionState {
    /// True for `closed` and `failed`.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Closed | Self::Failed)
    }

    /// Whether the table allows the move to `to`.
    pub(crate) fn can_move_to(self, to: Self) -> bool {
        use SessionState::*;
        matches!(
            (self, to),
            (Starting, Ready | Failed)
                | (Ready, Running | Closed | Failed)
                | (Running, Ready | Closed | Failed)
        )
    }
}

/// An assistant message Claude printed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AssistantMessage {
    /// Its text blocks joined (empty for a message of tool uses only).
    pub text: String,
    /// The whole line.
    pub raw: Value,
}

/// An input Claude has taken into the conversation, echoed back by `--replay-user-messages`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayedInput {
    /// The input's text.
    pub text: String,
    /// Its uuid: the one [`crate::Session::send`] returned, or one Claude made up.
    pub uuid: Option<Uuid>,
    /// The whole line.
    pub raw: Value,
}

/// The result line that ends a turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnResult {
    /// False when Claude marked the result `is_error` (also a turn cut short by an interrupt).
    pub ok: bool,
    /// The uuids of the inputs this turn took (`user_message_uuids`): more than one when an
    /// input sent mid-turn steered it.
    pub inputs: Vec<Uuid>,
    /// The result's text (`result`), empty if it has none.
    pub text: String,
    /// The Claude session id the result names.
    pub session_id: Option<String>,
    /// The whole line.
    pub raw: Value,
}

/// A line of Claude's stdout that is not a message: kept, with why, while decoding goes on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("Claude printed a line that is not a stream-json message ({cause}): {line:?}")]
pub struct ProtocolError {
    /// The line as read (lossy if it was not UTF-8; empty if it was too long to keep).
    pub line: String,
    /// Why it was not taken.
    pub cause: String,
}

/// One thing that happened in a session.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", content = "payload", rename_all = "snake_case")]
#[non_exhaustive]
pub enum SessionEvent {
    /// The state changed.
    State {
        /// The state before.
        from: SessionState,
        /// The state now.
        to: SessionState,
    },
    /// Claude printed an assistant message.
    Assistant(AssistantMessage),
    /// Claude took an input into the conversation (also one sent mid-turn).
    Input(ReplayedInput),
    /// A turn ended.
    Result(TurnResult),
    /// Any other stream-json line (`system`, tool results, stream events …), by its `type`.
    Message {
        /// The line's `type`.
        kind: String,
        /// The whole line.
        raw: Value,
    },
    /// A line that could not be read as a message.
    ProtocolError(ProtocolError),
    /// A line Claude wrote to stderr: diagnostic, never fatal by itself.
    Stderr(String),
    /// The process was reaped and its output read: the last event of a session.
    Exit(ExitInfo),
}
