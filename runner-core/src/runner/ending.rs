//! The end of a turn: its closing events completed, then the record moved to match, with
//! the seq, the cost and the tokens; a failed turn's worktree removed first. Also which
//! events close a turn, and the end of a start cut short before any turn was planned.

use super::cleanup;
use super::control::{RunFiles, SupervisorLock, TurnPlan};
use super::disk;
use super::log::{self, EventLog};
use super::parts::{Adapters, Records, Supervision};
use runner_contract::error::Result;
use runner_contract::event::{ApprovalRequested, Event, EventBody, FailureKind, TaskFailed};
use runner_contract::ids::SessionId;
use runner_contract::sequence::EventSequence;
use runner_contract::session::{SessionRecord, SessionState};
use runner_process::tree;

/// How a turn ended, to be saved on the record once its last events are in the log.
pub(super) struct TurnEnd {
    session_id: SessionId,
    /// Where the turn's events begin in the log.
    seq_start: u64,
    /// Which turn (its run files are cleared once it is settled).
    turn: u64,
    /// `Some(message)` when the turn failed.
    pub failed: Option<String>,
    /// The agent's own id of the conversation, when the turn printed one.
    pub agent_session_id: Option<String>,
    /// Whether a `task.finished` is followed by `approval.requested` (not for a workflow's
    /// phase: its driver asks once the last phase passed).
    owes_approval: bool,
}

impl TurnEnd {
    pub(super) fn new(record: &SessionRecord, plan: &TurnPlan) -> Self {
        let mut ending = Self::after(record, plan.seq_start, plan.turn);
        ending.owes_approval = plan.phase.is_none();
        ending
    }

    /// The end of turn `turn`, whose events come after seq `seq_start`.
    pub(super) fn after(record: &SessionRecord, seq_start: u64, turn: u64) -> Self {
        Self {
            session_id: record.session_id,
            seq_start,
            turn,
            failed: None,
            agent_session_id: None,
            owes_approval: true,
        }
    }

    /// The end of a turn whose terminal events a supervisor that went away wrote to the log.
    pub(super) fn from_log(record: &SessionRecord, plan: &TurnPlan, logged: &[Event]) -> Self {
        let mut ending = Self::new(record, plan);
        let turn = || logged.iter().filter(|e| e.seq > plan.seq_start);
        ending.failed = turn().find_map(|e| match &e.body {
            EventBody::TaskFailed(failed) => Some(failed.message.clone()),
            _ => None,
        });
        ending.agent_session_id = turn().find_map(|e| match &e.body {
            EventBody::TaskStarted(started) => started.agent_session_id.clone(),
            _ => None,
        });
        ending
    }

    /// Completes the turn's events (an `approval.requested` owed after a logged
    /// `task.finished`), then moves the record to the state they say, with the seq, the cost
    /// and tokens; a failed turn's worktree goes (its branch stays if the agent committed).
    /// On a full disk, once more in the room the turn's reserve leaves (`disk.rs`).
    pub(super) async fn settle(
        &mut self,
        records: &Records,
        adapters: &Adapters,
        files: &RunFiles,
        log: &mut EventLog,
    ) -> Result<SessionRecord> {
        match self.settle_once(records, adapters, files, log).await {
            Err(e) if disk::is_full(&e) && files.release_reserve() => {
                self.settle_once(records, adapters, files, log).await
            }
            settled => settled,
        }
    }

    async fn settle_once(
        &mut self,
        records: &Records,
        adapters: &Adapters,
        files: &RunFiles,
        log: &mut EventLog,
    ) -> Result<SessionRecord> {
        let scan = log::scan(&files.events(), self.seq_start, ends_turn)?;
        let turn = scan.kept;
        let record = records.store.get(&self.session_id)?;
        let mut last_seq = scan.last_seq;
        let end = turn
            .iter()
            .rev()
            .find(|e| ends_turn(&e.body))
            .map(|e| &e.body);
        let keep = matches!(end, Some(EventBody::TaskFailed(f)) if keeps_change(f.reason));
        let state = match end {
            Some(EventBody::TaskFailed(_)) => SessionState::Failed,
            Some(EventBody::TaskStopped(_)) => SessionState::Stopped,
            Some(EventBody::ApprovalRequested(_)) => SessionState::AwaitingApproval,
            Some(EventBody::TaskFinished(_)) if !self.owes_approval => {
                SessionState::AwaitingApproval
            }
            Some(EventBody::TaskFinished(finished)) => {
                // Cut short between the two: the approval it owed follows from the result.
                let mut seq = EventSequence::continuing(self.session_id, last_seq);
                let approval = seq.next(
                    EventBody::ApprovalRequested(ApprovalRequested {
                        branch: record.branch.clone(),
                        diff_stat: finished.diff_stat.clone().unwrap_or_default(),
                    }),
                    None,
                );
                log.append(&[approval])?;
                last_seq = seq.last_seq();
                SessionState::AwaitingApproval
            }
            _ => {
                return Err(runner_contract::error::Error::internal(format!(
                    "session {}: the turn has no end in the event log to settle from",
                    self.session_id
                )));
            }
        };
        if state == SessionState::Failed
            && !keep
            && let Err(e) = cleanup::discard_failed(&records.home, adapters, &record).await
        {
            // Failed is final and nothing else would remove the worktree; recover tries again.
            // Done before the record says failed, so whoever sees `failed` finds it clean.
            tracing::warn!(session = %record.session_id, "cleanup after a failure: {e}");
        }
        let (cost, tokens) = turn_cost(&turn);
        let failure = self.failed.clone();
        let agent_session = self.agent_session_id.clone();
        let saved = records.store.update(&self.session_id, |r| {
            if !matches!(r.state, SessionState::Running | SessionState::Queued) {
                return Ok(());
            }
            r.last_seq = last_seq;
            r.agent_session_id = r.agent_session_id.take().or(agent_session);
            r.failure = failure;
            r.kept |= keep;
            if let Some(cost) = cost {
                r.cost_usd = Some(r.cost_usd.unwrap_or(0.0) + cost);
            }
            if let Some(tokens) = tokens {
                r.tokens = Some(r.tokens.unwrap_or_default() + tokens);
            }
            r.move_to(state, "end the run")
        })?;
        let ((), record) = saved;
        files.clear_turn(self.turn);
        if state == SessionState::Stopped {
            files.clear_stop();
        }
        Ok(record)
    }
}

/// Whether a turn that failed for `reason` keeps its change for inspection (state failed,
/// the worktree kept until reject or gc): the agent worked and ran out of time or went in
/// circles, or a workflow's phase broke a rule after the implementer's work; what it did
/// is the person's to look at, never thrown away.
pub(crate) fn keeps_change(reason: FailureKind) -> bool {
    matches!(
        reason,
        FailureKind::Timeout | FailureKind::Repeating | FailureKind::Phase
    )
}

/// Appends `events` to the log; on a full disk, once more in the room the turn's reserve
/// leaves (`disk.rs`).
pub(super) fn append_with_room(
    log: &mut EventLog,
    files: &RunFiles,
    events: &[Event],
) -> Result<()> {
    match log.append(events) {
        Err(e) if disk::is_full(&e) && files.release_reserve() => log.append(events),
        done => done,
    }
}

/// The cost and tokens a turn's agent reported (the report's one summing rule).
fn turn_cost(turn: &[Event]) -> (Option<f64>, Option<runner_contract::session::TokenCounts>) {
    crate::report::cost_of(turn)
}

/// Whether `body` is one of a turn's closing events: `task.finished` (then
/// `approval.requested`), `task.failed` or `task.stopped`.
pub(super) fn ends_turn(body: &EventBody) -> bool {
    matches!(
        body,
        EventBody::TaskFinished(_)
            | EventBody::ApprovalRequested(_)
            | EventBody::TaskFailed(_)
            | EventBody::TaskStopped(_)
    )
}

/// Whether `body` is the last event of a turn's stream.
pub(super) fn closes_stream(body: &EventBody) -> bool {
    matches!(
        body,
        EventBody::ApprovalRequested(_) | EventBody::TaskFailed(_) | EventBody::TaskStopped(_)
    )
}

/// The message of a session that failed because its start was cut short.
const INTERRUPTED: &str = "interrupted: the runner stopped before the agent could start, and there is nothing to finish from; start a new session";

/// Fails a session whose turn was never planned: its start was cut short. Its agent, if one
/// is recorded, is ended; the failure goes to the log; the worktree goes.
pub(super) async fn fail_unplanned(run: &Supervision, record: &SessionRecord) -> Result<()> {
    let id = record.session_id;
    let (records, adapters) = (&run.records, &run.adapters);
    let files = RunFiles::in_home(&records.home, &id);
    let Some(_lock) = SupervisorLock::try_acquire(&files)? else {
        return Ok(());
    };
    // Looked at again under the lock: the record read before may be stale (a supervisor
    // that just ended its turn clears the plan and lets go of the lock), and a session that
    // is no longer running, or has a plan now, is not a start cut short.
    let record = &records.store.get(&id)?;
    if !matches!(record.state, SessionState::Running | SessionState::Queued)
        || files.turn().is_some()
    {
        return Ok(());
    }
    if let Some(agent) = files.agent()
        && (agent.is_alive() || tree::group_alive(agent.pid))
    {
        tree::end_group(&agent, run.settings.stop_grace).await;
    }
    let last = log::scan(&files.events(), u64::MAX, |_| false)?
        .last_seq
        .max(record.last_seq);
    let mut seq = EventSequence::continuing(id, last);
    let failed = seq.next(
        EventBody::TaskFailed(TaskFailed {
            reason: FailureKind::Interrupted,
            message: INTERRUPTED.into(),
            stderr: None,
            exit_code: None,
            cost_usd: None,
        }),
        None,
    );
    let mut log = EventLog::open(files.root(), &files.events())?;
    append_with_room(&mut log, &files, &[failed])?;
    files.clear_stop();
    files.clear_runner();
    // No turn was planned: this closing event is a turn of its own.
    let mut ending = TurnEnd::after(record, last, last + 1);
    ending.failed = Some(INTERRUPTED.into());
    // A queued record moves to failed too (the table allows both).
    ending
        .settle(records, adapters, &files, &mut log)
        .await
        .map(drop)
}
