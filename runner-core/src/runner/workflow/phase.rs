//! What one phase needs between its turns: the events the workflow adds to the log, and the
//! failure of a phase that broke its rules (the fingerprint that catches a read-only phase
//! that wrote is `runner/fingerprint.rs`).

use std::time::Duration;

use tokio::time::Instant;

use super::super::control::{RunFiles, SupervisorLock};
use super::super::log::{self, EventLog};
use crate::runner::parts::Records;
use crate::runner::{journal, run};
use runner_contract::error::{Error, ErrorKind, Result};
use runner_contract::event::{Event, EventBody, FailureKind, TaskFailed};
use runner_contract::ids::SessionId;
use runner_contract::sequence::EventSequence;
use runner_contract::session::SessionState;

/// Appends `bodies` to session `id`'s log between two turns (the session awaits approval
/// and nobody supervises it: this holds the supervisor lock while it writes); the events.
pub(crate) async fn append_between(
    records: &Records,
    id: &SessionId,
    bodies: Vec<EventBody>,
) -> Result<Vec<Event>> {
    let files = RunFiles::in_home(&records.home, id);
    let _lock = lock_run(&files, id).await?;
    let record = records.store.get(id)?;
    if record.state != SessionState::AwaitingApproval {
        return Err(Error::new(
            ErrorKind::IllegalMove,
            format!(
                "session {id} is {} now, so its workflow cannot go on (it was decided or \
                 changed by another command)",
                record.state
            ),
        ));
    }
    let last = log::scan(&files.events(), u64::MAX, |_| false)?
        .last_seq
        .max(record.last_seq);
    let mut seq = EventSequence::continuing(*id, last);
    let events: Vec<Event> = bodies.into_iter().map(|b| seq.next(b, None)).collect();
    let mut log = EventLog::open(files.root(), &files.events())?;
    log.append(&events)?;
    let last = seq.last_seq();
    records.store.update(id, |r| {
        r.last_seq = r.last_seq.max(last);
        Ok(())
    })?;
    Ok(events)
}

/// Fails session `id`, which awaits approval after a phase that broke its rules: the
/// failure goes to the log (`task.failed` with reason `phase`, no cost of its own: the
/// phase's `task.finished` counted it), the record says `failed`, and the implementer's
/// change is kept for inspection (the worktree stays until reject or gc).
pub(crate) async fn fail(records: &Records, id: &SessionId, message: String) -> Result<Vec<Event>> {
    let _session = journal::SessionLock::acquire(&records.home, id).await?;
    let failed = EventBody::TaskFailed(TaskFailed {
        reason: FailureKind::Phase,
        message: message.clone(),
        stderr: None,
        exit_code: None,
        cost_usd: None,
    });
    let events = append_between(records, id, vec![failed]).await?;
    let files = RunFiles::in_home(&records.home, id);
    let _lock = lock_run(&files, id).await?;
    records.store.update(id, |r| {
        r.failure = Some(message);
        r.kept = true;
        r.move_to(SessionState::Failed, "fail the phase")
    })?;
    Ok(events)
}

/// The supervisor lock of a run between its turns: the last turn's supervisor may still be
/// letting go of it.
async fn lock_run(files: &RunFiles, id: &SessionId) -> Result<SupervisorLock> {
    let deadline = Instant::now() + run::SETTLE_WAIT;
    loop {
        if let Some(lock) = SupervisorLock::try_acquire(files)? {
            return Ok(lock);
        }
        if Instant::now() >= deadline {
            return Err(Error::new(
                ErrorKind::Locked,
                format!(
                    "the supervisor of session {id}'s last turn has not let go of it: try \
                     again, or run `codehands recover`"
                ),
            ));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
