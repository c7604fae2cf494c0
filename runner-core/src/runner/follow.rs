//! Following a session's event log: replay from any seq, then live until the session leaves
//! `running`. A stream of [`Runner::start`](crate::Runner::start), `resume` and `events` is
//! one of these, in this process or any other: the log is the only channel.
//!
//! A closing event (`approval.requested`, `task.failed`, `task.stopped`) is handed out only
//! once the record says the turn is over, so a caller that acts on it (approve right away)
//! finds the session in the state the event announced. A run that nobody supervises while it
//! is followed is healed (adopted or finished) as soon as that is seen; when that keeps
//! failing (a disk that stays full), the stream ends rather than wait forever, and
//! [`LocalRunner::after_stream`](super::parts::LocalRunner::after_stream) says why.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

use super::control::{RunFiles, SupervisorLock};
use super::log::LogReader;
use super::parts::Launcher;
use super::watched::Backoff;
use super::{heal, run};
use runner_contract::event::Event;
use runner_contract::ids::SessionId;
use runner_contract::session::SessionState;
use runner_contract::traits::runner::EventStream;

/// How long a follower waits for a settled turn's supervisor to let go of the run (it has
/// only its files to clear; a new turn's supervisor may hold it after that).
const LET_GO_WAIT: Duration = Duration::from_secs(2);
/// After this many heals that brought nothing, the follower supervises the run itself.
const HEALS_BEFORE_INLINE: u32 = 4;

struct Follower {
    launcher: Launcher,
    id: SessionId,
    reader: LogReader,
    after: u64,
    live: bool,
    queue: VecDeque<Event>,
    pause: Backoff,
    unsupervised_since: Option<Instant>,
    heals: u32,
    done: bool,
    /// Follow a workflow's session through every phase to its end (a caller's stream), not
    /// one turn (the driver's own stream of each phase).
    through_workflow: bool,
}

/// The events of session `id` after seq `after`: those in the log, then (when `live`) each
/// one as it is appended, until the session is no longer running.
pub(super) fn follow(launcher: Launcher, id: SessionId, after: u64, live: bool) -> EventStream {
    follow_with(launcher, id, after, live, false)
}

/// [`follow`] for a caller: a workflow's session is followed through its phases until the
/// workflow has ended (a stalled one is gone on with, `workflow/stall.rs`).
pub(super) fn follow_through(launcher: Launcher, id: SessionId, after: u64) -> EventStream {
    follow_with(launcher, id, after, true, true)
}

fn follow_with(
    launcher: Launcher,
    id: SessionId,
    after: u64,
    live: bool,
    through_workflow: bool,
) -> EventStream {
    let reader = LogReader::new(RunFiles::in_home(&launcher.run.records.home, &id).events());
    let follower = Follower {
        launcher,
        id,
        reader,
        after,
        live,
        queue: VecDeque::new(),
        pause: Backoff::new(),
        unsupervised_since: None,
        heals: 0,
        done: false,
        through_workflow,
    };
    Box::pin(futures::stream::unfold(follower, |mut f| async move {
        f.next().await.map(|e| (e, f))
    }))
}

impl Follower {
    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                if event.seq <= self.after {
                    continue;
                }
                self.after = event.seq;
                if self.live && self.queue.is_empty() && super::ending::closes_stream(&event.body) {
                    self.wait_settled(event.seq).await;
                }
                return Some(event);
            }
            if self.done {
                return None;
            }
            match self.reader.read_new() {
                Ok(events) if !events.is_empty() => {
                    self.queue.extend(events);
                    self.pause.reset();
                    continue;
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::error!(session = %self.id, "{e}");
                    return None;
                }
            }
            if !self.live || !self.still_running().await {
                // One last look: what was appended just before the record changed.
                self.done = true;
                if let Ok(events) = self.reader.read_new() {
                    self.queue.extend(events);
                }
                continue;
            }
            self.pause.wait().await;
        }
    }

    /// Whether the session still runs; heals it when nobody has supervised it for a while.
    async fn still_running(&mut self) -> bool {
        let Ok(record) = self.launcher.run.records.store.get(&self.id) else {
            return false;
        };
        if record.state == SessionState::AwaitingApproval && self.through_workflow {
            return self.workflow_goes_on(&record);
        }
        if !matches!(record.state, SessionState::Running | SessionState::Queued) {
            return false;
        }
        let files = RunFiles::in_home(&self.launcher.run.records.home, &self.id);
        if SupervisorLock::is_held(&files) {
            self.unsupervised_since = None;
            return true;
        }
        let since = *self.unsupervised_since.get_or_insert_with(Instant::now);
        if since.elapsed() < super::heal::UNSUPERVISED_GRACE {
            return true;
        }
        self.unsupervised_since = None;
        self.heals += 1;
        if self.heals <= HEALS_BEFORE_INLINE {
            if let Err(e) = heal::heal(&self.launcher, &record).await {
                tracing::warn!(session = %self.id, "cannot take over the run: {e}");
            }
            return true;
        }
        // Launched supervisors keep going away: supervise here. When the run is still not
        // over after that, it cannot go on now: stop following it.
        if let Err(e) = run::supervise(self.launcher.run.clone(), self.id).await {
            tracing::warn!(session = %self.id, "cannot take over the run: {e}");
            return false;
        }
        self.heals = 0;
        true
    }

    /// Between two phases of a workflow: whether it goes on (driven, or stalled and now
    /// gone on with, a bounded number of times).
    fn workflow_goes_on(&mut self, record: &runner_contract::session::SessionRecord) -> bool {
        match super::workflow::progress(&self.launcher.run.records, record) {
            super::workflow::WorkflowProgress::Settled => false,
            super::workflow::WorkflowProgress::Driven { .. } => {
                self.unsupervised_since = None;
                true
            }
            super::workflow::WorkflowProgress::Stalled { .. } => {
                let since = *self.unsupervised_since.get_or_insert_with(Instant::now);
                if since.elapsed() < super::heal::UNSUPERVISED_GRACE {
                    return true;
                }
                self.unsupervised_since = None;
                self.heals += 1;
                if self.heals > HEALS_BEFORE_INLINE {
                    tracing::warn!(session = %self.id, "the workflow stays stalled");
                    return false;
                }
                if let Err(e) = super::workflow::relaunch(&self.launcher, self.id) {
                    tracing::warn!(session = %self.id, "cannot go on with the workflow: {e}");
                }
                true
            }
        }
    }

    /// Waits (bounded) until the record has left `running` after the closing event `seq`
    /// (not for one of an earlier turn: a turn planned after it runs on), and its
    /// supervisor has let go of the run (it clears the turn's files just after): a caller
    /// that acts on the event at once (a follow-up) finds nothing of the old turn left.
    async fn wait_settled(&mut self, seq: u64) {
        let files = RunFiles::in_home(&self.launcher.run.records.home, &self.id);
        if files.turn().is_some_and(|plan| plan.seq_start >= seq) {
            return;
        }
        let deadline = Instant::now() + run::SETTLE_WAIT;
        while Instant::now() < deadline {
            match self.launcher.run.records.store.get(&self.id) {
                Ok(record) if record.state == SessionState::Running => {}
                _ => {
                    let let_go = Instant::now() + LET_GO_WAIT;
                    while SupervisorLock::is_held(&files) && Instant::now() < let_go {
                        tokio::time::sleep(Duration::from_millis(2)).await;
                    }
                    return;
                }
            }
            if !SupervisorLock::is_held(&files) {
                // The writer of the event went away before the record: settle it here.
                if let Err(e) = run::supervise(self.launcher.run.clone(), self.id).await {
                    tracing::warn!(session = %self.id, "cannot settle the run: {e}");
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
}
