//! Where a session is in its life, and the table of legal moves. It imports nothing of ours,
//! so the error (which names the state a refused move found) and the record can both use it.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a session is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SessionState {
    /// Accepted, not started yet.
    Queued,
    /// The agent is working.
    Running,
    /// The agent finished; a person decides.
    AwaitingApproval,
    /// An approve is under way: `commit` names the commit once it is written. The next
    /// command or `recover` finishes it (the branch holds the commit) or takes it back to
    /// `awaiting_approval` (it does not).
    Approving,
    /// Committed on its branch (final).
    Approved,
    /// A reject is under way; the next command or `recover` finishes it.
    Rejecting,
    /// Worktree and branch removed (final).
    Rejected,
    /// Stopped by request; the worktree is kept and the session can be resumed.
    Stopped,
    /// Something broke (final).
    Failed,
}

impl SessionState {
    /// Every state, in table order.
    pub const ALL: [SessionState; 9] = [
        Self::Queued,
        Self::Running,
        Self::AwaitingApproval,
        Self::Approving,
        Self::Approved,
        Self::Rejecting,
        Self::Rejected,
        Self::Stopped,
        Self::Failed,
    ];

    /// Whether `self → to` is in the state table:
    /// `queued → running → awaiting_approval → approved | rejected`,
    /// `running → stopped → running`, `awaiting_approval → running` (a follow-up turn of the
    /// same conversation, `Runner::send`), `stopped → rejected` (a stopped session thrown away
    /// without paying for the rest of its run), `queued | running → failed`, and
    /// `awaiting_approval → failed` (a workflow's phase that broke its rules once its turn
    /// ended: a read-only phase that wrote, a reviewer's malformed answer); approve and reject
    /// are journaled: `awaiting_approval → approving → approved` (or back to
    /// `awaiting_approval` when the commit never reached the branch) and
    /// `awaiting_approval | stopped → rejecting → rejected`. A runner without a repository (the fake
    /// runner) moves `awaiting_approval → approved | rejected` at once. A failed session whose
    /// change was kept for inspection (`SessionRecord::kept`) is removed by
    /// `failed → rejecting → rejected`; no other move leaves `failed`.
    pub fn can_move_to(self, to: SessionState) -> bool {
        use SessionState::*;
        matches!(
            (self, to),
            (Queued, Running)
                | (Queued, Failed)
                | (Running, AwaitingApproval)
                | (Running, Stopped)
                | (Running, Failed)
                | (AwaitingApproval, Failed)
                | (Stopped, Running)
                | (AwaitingApproval, Running)
                | (Stopped, Rejecting)
                | (Stopped, Rejected)
                | (AwaitingApproval, Approved)
                | (AwaitingApproval, Rejected)
                | (AwaitingApproval, Approving)
                | (Approving, Approved)
                | (Approving, AwaitingApproval)
                | (AwaitingApproval, Rejecting)
                | (Rejecting, Rejected)
                | (Failed, Rejecting)
                | (Failed, Rejected)
        )
    }

    /// Whether the session's work is over: no move leaves this state, but the reject of a
    /// failed session whose change was kept.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Approved | Self::Rejected | Self::Failed)
    }

    /// The snake_case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::AwaitingApproval => "awaiting_approval",
            Self::Approving => "approving",
            Self::Approved => "approved",
            Self::Rejecting => "rejecting",
            Self::Rejected => "rejected",
            Self::Stopped => "stopped",
            Self::Failed => "failed",
        }
    }
}

impl fmt::Display for SessionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
