//! `Runner`: what a daemon codes against.

use std::pin::Pin;

use async_trait::async_trait;
use futures::Stream;

use crate::error::Result;
use crate::event::Event;
use crate::ids::SessionId;
use crate::options::{ApproveResult, DiffResult, PermissionAnswer, RecoveryReport, StartOptions};
use crate::report::RunReport;
use crate::session::SessionRecord;

/// The events of one run, in seq order; it ends after the run's last event.
pub type EventStream = Pin<Box<dyn Stream<Item = Event> + Send + 'static>>;

/// What [`Runner::send`] did with the text.
pub enum Sent {
    /// The session awaited approval: a follow-up turn runs in the same worktree, and this is
    /// its stream (ending with `approval.requested`, `task.failed` or `task.stopped`).
    FollowUp(EventStream),
    /// The session was running: the text went to the agent, to steer the turn in flight.
    Steered,
}

impl std::fmt::Debug for Sent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::FollowUp(_) => f.write_str("FollowUp(..)"),
            Self::Steered => f.write_str("Steered"),
        }
    }
}

/// Runs agent sessions: start, watch, decide.
///
/// Errors returned directly (rather than as a `task.failed` event) mean nothing was
/// started and nothing was left behind.
#[async_trait]
pub trait Runner: Send + Sync {
    /// Starts a session; the stream ends with `approval.requested`, `task.failed` or `task.stopped`.
    async fn start(&self, options: StartOptions) -> Result<EventStream>;

    /// The change so far since the base commit.
    async fn diff(&self, session_id: &SessionId) -> Result<DiffResult>;

    /// Commits the change on the session's branch (only from `awaiting_approval`).
    async fn approve(&self, session_id: &SessionId, message: &str) -> Result<ApproveResult>;

    /// Throws the change away, from `awaiting_approval` or `stopped`: the worktree goes, and
    /// the branch too unless the agent committed to it (then it is kept, as recover does; the
    /// engine's `reject_session` says which). Journaled through `rejecting`, so a process
    /// killed half-way leaves a record the next command or `recover` settles.
    async fn reject(&self, session_id: &SessionId) -> Result<()>;

    /// Stops a running session; returns once it is `stopped`. The start stream ends with `task.stopped`.
    async fn stop(&self, session_id: &SessionId) -> Result<()>;

    /// Resumes a stopped session in the same worktree; seq continues.
    async fn resume(&self, session_id: &SessionId, prompt: Option<String>) -> Result<EventStream>;

    /// Takes over after a restart: runs nobody supervises are adopted or finished, starts cut
    /// short fail, leftovers go. Call once at start-up.
    async fn recover(&self) -> Result<RecoveryReport>;

    /// One session's record.
    async fn session(&self, session_id: &SessionId) -> Result<SessionRecord>;

    /// All sessions' records, oldest first.
    async fn sessions(&self) -> Result<Vec<SessionRecord>>;

    /// The session's events after seq `after_seq` (0: all of them), replayed from its log,
    /// then followed live until the session is no longer running.
    async fn events(&self, session_id: &SessionId, after_seq: u64) -> Result<EventStream>;

    /// The session's final report (seed 003's summary), built from its event log: how it
    /// ended, times, agent, tools, files, commands, tests, denials, cost and the diff stat.
    async fn report(&self, session_id: &SessionId) -> Result<RunReport>;

    /// Sends the caller's text to a session. One awaiting approval gets a follow-up turn of
    /// the same conversation in the same worktree (`awaiting_approval → running →
    /// awaiting_approval`; seq continues, and approve then commits every turn's change
    /// as one commit). A running one gets the text while its turn runs, to steer it, when
    /// its agent can take input then (`AgentCapabilities::steer`); returns once the agent
    /// has been given it. Refused clearly otherwise.
    async fn send(&self, session_id: &SessionId, text: String) -> Result<Sent>;

    /// Answers the running session's permission request `request_id` (a
    /// `permission.requested` event); returns once `permission.resolved` is in the log.
    /// A request already resolved (answered, or denied for want of an answer) is refused.
    async fn answer(
        &self,
        session_id: &SessionId,
        request_id: &str,
        answer: PermissionAnswer,
    ) -> Result<()>;

    /// Ends the running session's current turn without ending its agent's process
    /// (`AgentCapabilities::interrupt`): the turn ends with `task.finished` (marked
    /// `interrupted`) and `approval.requested`, so a follow-up can redirect the agent.
    /// Returns once the agent has been told.
    async fn interrupt(&self, session_id: &SessionId) -> Result<()>;
}
