//! Approve and reject as journaled operations.
//!
//! Each takes the session's lock (`runs/<sessionId>/session.lock`, held with `flock`, so a
//! process that dies lets go of it), writes what it is about to do into the record
//! (`approving` with the commit id, `rejecting`), does it, and writes the end state. A process
//! killed at any instant leaves a record that says what was under way; the next approve,
//! reject or recover [settles](settle) it from what the repository holds:
//!
//! - `approving` whose branch points at the recorded commit: the commit is published, so the
//!   approve is finished (worktree removed, `approved`);
//! - `approving` whose branch does not: nothing was published, so the session goes back to
//!   `awaiting_approval`, worktree untouched (the written commit is garbage for git's gc);
//! - `rejecting`: the reject is finished (worktree and branch removed, `rejected`).
//!
//! The record never claims less than the repository holds: a commit on the branch is always
//! in a record that says `approving` or `approved`, so no reject can delete it.

use std::fs::File;
use std::path::Path;

use super::cleanup;
use super::parts::{Adapters, Records};
use runner_contract::error::{Error, ErrorKind, Result};
use runner_contract::home::Home;
use runner_contract::ids::SessionId;
use runner_contract::options::ApproveResult;
use runner_contract::session::{SessionRecord, SessionState};

/// The lock that serialises approve, reject and recover of one session across processes.
pub(super) struct SessionLock {
    _file: File,
}

impl SessionLock {
    /// Waits for the lock of `id`.
    pub async fn acquire(home: &Home, id: &SessionId) -> Result<Self> {
        let path = home
            .run_dir(id)
            .join(runner_contract::run_folder::SESSION_LOCK);
        tokio::task::spawn_blocking(move || {
            let file = open_lock_file(&path)?;
            file.lock().map_err(|e| {
                Error::io(
                    format!("cannot take the session lock {}", path.display()),
                    &e,
                )
            })?;
            Ok(Self { _file: file })
        })
        .await
        .map_err(|e| Error::internal(format!("the lock task panicked: {e}")))?
    }

    /// The lock of `id` if nobody holds it now.
    pub fn try_acquire(home: &Home, id: &SessionId) -> Result<Option<Self>> {
        let path = home
            .run_dir(id)
            .join(runner_contract::run_folder::SESSION_LOCK);
        let file = open_lock_file(&path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(Self { _file: file })),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(Error::io(
                format!("cannot take the session lock {}", path.display()),
                &e,
            )),
        }
    }
}

/// Opens (making it when it can) the lock file; on a read-only home an existing one is
/// opened to read, which is enough to lock it.
fn open_lock_file(path: &Path) -> Result<File> {
    let made = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| runner_contract::private::open_lock_file(path));
    match made {
        Ok(file) => Ok(file),
        Err(first) => File::open(path).map_err(|_| {
            Error::io(
                format!(
                    "cannot make the session lock {} (is CODEHANDS_HOME writable?)",
                    path.display()
                ),
                &first,
            )
        }),
    }
}

/// Finishes or takes back a half-done approve or reject of `record` (the lock held), and
/// returns the record as it is then.
pub(super) async fn settle(
    records: &Records,
    adapters: &Adapters,
    record: SessionRecord,
) -> Result<SessionRecord> {
    match record.state {
        SessionState::Approving => settle_approve(records, adapters, record).await,
        SessionState::Rejecting => finish_reject(records, adapters, &record)
            .await
            .map(|(r, _)| r),
        _ => Ok(record),
    }
}

async fn settle_approve(
    records: &Records,
    adapters: &Adapters,
    record: SessionRecord,
) -> Result<SessionRecord> {
    let tip = adapters
        .vcs
        .branch_tip(&record.repo_path, &record.branch)
        .await?;
    let published = record.commit.is_some() && tip == record.commit;
    if published {
        finish_approve(records, adapters, &record).await
    } else {
        records
            .store
            .update(&record.session_id, |r| {
                r.commit = None;
                r.move_to(
                    SessionState::AwaitingApproval,
                    "take back an unfinished approve",
                )
            })
            .map(|(_, r)| r)
    }
}

/// The approve of `record` (`awaiting_approval`, the lock held): write the commit, journal it,
/// publish it, remove the worktree, record `approved`.
pub(super) async fn approve(
    records: &Records,
    adapters: &Adapters,
    record: &SessionRecord,
    message: &str,
) -> Result<ApproveResult> {
    let spec = record.worktree_spec();
    let prepared = adapters.vcs.prepare_commit(&spec, message, None).await?;
    let commit = prepared.commit.clone();
    let (_, journaled) = records.store.update(&record.session_id, |r| {
        r.move_to(SessionState::Approving, "approve")?;
        r.commit = Some(commit);
        Ok(())
    })?;
    if let Err(e) = adapters.vcs.publish_commit(&spec, &prepared).await {
        // Settled from what the branch holds: back to awaiting when the commit did not reach
        // it, finished when it did after all.
        let _ = settle_approve(records, adapters, journaled).await;
        return Err(e);
    }
    let done = finish_approve(records, adapters, &journaled).await?;
    Ok(ApproveResult {
        branch: done.branch.clone(),
        commit: done.commit.clone().unwrap_or(prepared.commit),
    })
}

/// The commit is on the branch: remove the worktree and record `approved`.
async fn finish_approve(
    records: &Records,
    adapters: &Adapters,
    record: &SessionRecord,
) -> Result<SessionRecord> {
    cleanup::remove_session_worktree(&records.home, adapters, record)
        .await
        .map_err(|e| {
            Error::new(
                e.kind(),
                format!(
                    "committed {} on {}, but could not remove the worktree: {}; the session \
                     stays `approving` until `codehands recover` (or the next approve) removes it",
                    record.commit.as_deref().unwrap_or("?"),
                    record.branch,
                    e.message()
                ),
            )
        })?;
    super::cleanup::forget_box(&records.home, adapters, record);
    records
        .store
        .move_to(&record.session_id, SessionState::Approved, "approve")
}

/// The reject of `record` (`awaiting_approval` or `stopped`, the lock held); true when its
/// branch was kept because the agent committed to it.
pub(super) async fn reject(
    records: &Records,
    adapters: &Adapters,
    record: &SessionRecord,
) -> Result<bool> {
    let journaled = records
        .store
        .move_to(&record.session_id, SessionState::Rejecting, "reject")?;
    finish_reject(records, adapters, &journaled)
        .await
        .map(|(_, kept)| kept)
}

/// Removes the worktree, and the branch unless the agent committed to it (the rule recover
/// follows for a failed session: work the agent committed is never deleted by codehands),
/// then records `rejected`. Also true when the rejecting process died half way.
async fn finish_reject(
    records: &Records,
    adapters: &Adapters,
    record: &SessionRecord,
) -> Result<(SessionRecord, bool)> {
    cleanup::remove_session_worktree(&records.home, adapters, record).await?;
    let tip = adapters
        .vcs
        .branch_tip(&record.repo_path, &record.branch)
        .await?;
    let mut kept = false;
    if let Some(tip) = tip {
        if record.commit.as_ref() == Some(&tip) {
            // Never reached (a record with its commit on the branch is approving or
            // approved), but a commit codehands published is never deleted.
            return Err(Error::new(
                ErrorKind::IllegalMove,
                format!(
                    "branch {} holds the approved commit {tip}: it is not deleted",
                    record.branch
                ),
            ));
        }
        kept = adapters
            .vcs
            .has_commits_beyond(&record.repo_path, &record.branch, &record.base_commit)
            .await?;
        if !kept {
            adapters
                .vcs
                .delete_branch(&record.repo_path, &record.branch)
                .await?;
        }
    }
    let done = records
        .store
        .move_to(&record.session_id, SessionState::Rejected, "reject")?;
    Ok((done, kept))
}
