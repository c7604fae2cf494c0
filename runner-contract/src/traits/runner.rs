//! `Runner`: what a daemon codes against.

use std::pin::Pin;

use async_trait::async_trait;
use futures::Stream;

use crate::error::{Error, ErrorKind, Result};
use crate::event::Event;
use crate::ids::SessionId;
use crate::options::{
    ApproveOptions, ApproveResult, DiffResult, GcOptions, GcReport, PermissionAnswer,
    RecoveryReport, RejectResult, StartOptions,
};
use crate::report::RunReport;
use crate::session::SessionRecord;
use crate::task::{
    PickOptions, PickResult, StartedTask, TaskId, TaskOptions, TaskRecord, TaskReport,
};
use crate::workflow::WorkflowOptions;

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

/// Runs agent sessions: start, watch, decide; and what is built of sessions: tasks (one prompt,
/// several attempts, one picked), workflows (phases in one session) and the clean-up of old
/// sessions. A daemon or the command line codes against this trait alone.
///
/// Errors returned directly (rather than as a `task.failed` event) mean nothing was
/// started and nothing was left behind. The methods past [`Runner::interrupt`] have defaults
/// that refuse with [`ErrorKind::Unsupported`] (or, where the core methods can do it, do it
/// with them), so a runner that only runs sessions (a scripted fake, a proxy) stays small.
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

    /// Resolves what a person typed (a whole session id, or a prefix of one that names one
    /// session) to the session's id.
    async fn resolve_session(&self, text: &str) -> Result<SessionId> {
        if let Ok(id) = SessionId::parse(text) {
            return Ok(id);
        }
        let matches: Vec<SessionId> = self
            .sessions()
            .await?
            .into_iter()
            .map(|record| record.session_id)
            .filter(|id| !text.is_empty() && id.to_string().starts_with(text))
            .collect();
        match matches.as_slice() {
            [one] => Ok(*one),
            [] => Err(Error::not_found(format!(
                "no session {text:?}: `codehands sessions` lists them"
            ))),
            _ => Err(Error::invalid_input(format!(
                "{text:?} names {} sessions: type more of the id",
                matches.len()
            ))),
        }
    }

    /// [`Runner::approve`] with options (`force` past a failed verify). The default approves
    /// without options and refuses `force`, which only a runner that verifies can honour.
    async fn approve_with(
        &self,
        session_id: &SessionId,
        message: &str,
        options: ApproveOptions,
    ) -> Result<ApproveResult> {
        if options.force {
            return Err(unsupported("approve --force"));
        }
        self.approve(session_id, message).await
    }

    /// [`Runner::reject`], saying whether the branch was kept (the agent committed to it).
    async fn reject_session(&self, session_id: &SessionId) -> Result<RejectResult> {
        self.reject(session_id).await?;
        Ok(RejectResult {
            session_id: *session_id,
            kept_branch: None,
        })
    }

    /// Starts one session per attempt of `options`, all from one base commit, at once.
    async fn start_task(&self, options: TaskOptions) -> Result<StartedTask> {
        let _ = options;
        Err(unsupported("tasks"))
    }

    /// One task's record, settled first if a pick or reject was cut short.
    async fn task(&self, id: &TaskId) -> Result<TaskRecord> {
        let _ = id;
        Err(unsupported("tasks"))
    }

    /// Every task's record.
    async fn tasks(&self) -> Result<Vec<TaskRecord>> {
        Err(unsupported("tasks"))
    }

    /// The task a whole id or a unique prefix names, if any.
    async fn find_task(&self, text: &str) -> Result<Option<TaskId>> {
        let _ = text;
        Ok(None)
    }

    /// The task `session` is an attempt of, if any.
    async fn task_of(&self, session: &SessionId) -> Result<Option<TaskRecord>> {
        let _ = session;
        Ok(None)
    }

    /// Approves the attempt `session` and rejects the task's other attempts (unless kept).
    async fn pick(&self, session: &SessionId, options: PickOptions) -> Result<PickResult> {
        let _ = (session, options);
        Err(unsupported("tasks"))
    }

    /// Rejects every undecided attempt of the task; returns the sessions rejected.
    async fn reject_task(&self, id: &TaskId) -> Result<Vec<SessionId>> {
        let _ = id;
        Err(unsupported("tasks"))
    }

    /// The task's attempts side by side: files, time, cost, tests, verdicts and the ranking.
    async fn task_report(&self, id: &TaskId) -> Result<TaskReport> {
        let _ = id;
        Err(unsupported("tasks"))
    }

    /// Runs a workflow's phases in one session; the stream is the whole workflow's.
    async fn run_workflow(&self, options: WorkflowOptions) -> Result<EventStream> {
        let _ = options;
        Err(unsupported("workflows"))
    }

    /// Rejects kept and stopped sessions older than `options.older_than`.
    async fn gc(&self, options: GcOptions) -> Result<GcReport> {
        let _ = options;
        Err(unsupported("gc"))
    }
}

/// The refusal of a default method: this runner does not do `what`.
fn unsupported(what: &str) -> Error {
    Error::new(
        ErrorKind::Unsupported,
        format!("this runner does not do {what}: use codehands' local runner for it"),
    )
}
