//! An independent verdict per attempt: the repo's tests run in the locked test box for each
//! attempt's change (the `--verify` box), at once but a bounded number at a time, and the
//! verdict kept in the task's record beside its attempt.
//!
//! Each attempt's supervisor runs its own tests when its agent has finished (`run/end.rs`),
//! so the attempts' boxes run in parallel; [`TestBoxSlot`] bounds how many at once across
//! processes with one `flock`ed file per slot (`tasks/test-box-<n>.lock`), so a process that
//! dies lets go of its slot. The verdict goes to the task's record under the task's lock
//! ([`record_verdict`]); when a pick holds that lock, the task's report fills it in later
//! from the session's own verdict (`runs/<id>/verdict.json`), which is always written first.

use std::fs::File;
use std::time::Duration;

use tokio::time::Instant;

use super::super::verify::{Outcome, Verdict};
use super::store::TaskStore;
use runner_contract::error::{Error, Result};
use runner_contract::home::Home;
use runner_contract::session::SessionRecord;
use runner_contract::task::{AttemptVerdict, VerifyVerdict};

/// How many test boxes run at once on this machine, at most.
pub(crate) const TEST_BOXES_AT_ONCE: usize = 4;

/// How long a supervisor waits for the task's lock to write its verdict (a pick may hold it
/// while it stops this very attempt: then the report fills the verdict in later).
const RECORD_WAIT: Duration = Duration::from_secs(5);

/// One of the [`TEST_BOXES_AT_ONCE`] places a test box may run in; let go when dropped.
pub(crate) struct TestBoxSlot {
    _file: File,
}

impl TestBoxSlot {
    /// Waits for a free slot (polling every 200 ms): the test box runs once it has one.
    pub async fn acquire(home: &Home) -> Result<Self> {
        let root = home.private();
        let dir = home.tasks_dir();
        root.ensure_dir(&dir)?;
        loop {
            for n in 0..TEST_BOXES_AT_ONCE {
                let path = dir.join(format!("test-box-{n}.lock"));
                let file = runner_contract::private::open_lock_file(&path)
                    .map_err(|e| Error::io(format!("cannot open {}", path.display()), &e))?;
                match file.try_lock() {
                    Ok(()) => return Ok(Self { _file: file }),
                    Err(std::fs::TryLockError::WouldBlock) => {}
                    Err(std::fs::TryLockError::Error(e)) => {
                        return Err(Error::io(format!("cannot lock {}", path.display()), &e));
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// The task record's form of a session's verdict.
pub(crate) fn attempt_verdict(verdict: &Verdict) -> AttemptVerdict {
    AttemptVerdict {
        outcome: match verdict.outcome {
            Outcome::Passed => VerifyVerdict::Passed,
            Outcome::TestsFailed => VerifyVerdict::Failed,
            Outcome::CouldNotRun => VerifyVerdict::CouldNotRun,
        },
        command: verdict.command.clone(),
        reason: verdict.reason.clone(),
    }
}

/// Keeps `verdict` in the record of the task `record` is an attempt of (none: nothing to
/// do). Waits a little for the task's lock; an error says why it could not.
pub(crate) async fn record_verdict(
    home: &runner_contract::home::Home,
    record: &SessionRecord,
    verdict: &Verdict,
) -> Result<()> {
    let Some(task) = record.task_id else {
        return Ok(());
    };
    let store = TaskStore::in_home(home);
    let deadline = Instant::now() + RECORD_WAIT;
    let _lock = loop {
        if let Some(lock) = store.try_lock(&task)? {
            break lock;
        }
        if Instant::now() >= deadline {
            return Err(Error::new(
                runner_contract::error::ErrorKind::Locked,
                format!(
                    "task {task} is locked by another command: `codehands task {task}` records \
                     the verdict later"
                ),
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let id = record.session_id;
    store
        .update(&task, |t| {
            if let Some(attempt) = t.attempts.iter_mut().find(|a| a.session_id == id) {
                attempt.verdict = Some(attempt_verdict(verdict));
            }
            Ok(())
        })
        .map(drop)
}
