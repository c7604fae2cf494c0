//! Deciding a session: approve (with options) and reject, each under the session's lock
//! before anything can move it, journaled (`journal.rs`), the repo's memory told after.

use super::control::RunFiles;
use super::parts::LocalRunner;
use super::{cleanup, disk, journal, verify, workflow};
use runner_contract::error::Result;
use runner_contract::ids::SessionId;
use runner_contract::options::{ApproveOptions, ApproveResult, RejectResult};
use runner_contract::session::{SessionRecord, SessionState};
use runner_contract::traits::memory::MemoryStore;

impl LocalRunner {
    /// Approves like [`Runner::approve`], with `options`: a session whose run was verified
    /// and whose sandbox tests failed or could not run is refused
    /// ([`ErrorKind::VerifyFailed`]) unless `options.force`.
    pub(crate) async fn approve_session(
        &self,
        session_id: &SessionId,
        message: &str,
        options: ApproveOptions,
    ) -> Result<ApproveResult> {
        let (lock, record) = self
            .locked_for(
                session_id,
                SessionState::Approving,
                SessionState::Approved,
                "approve",
            )
            .await?;
        self.approve_locked(lock, record, message, options).await
    }

    /// Approves `record` under its session's lock (from [`Self::locked_for`], taken before
    /// anything could heal the session), held until the approve is done.
    pub(super) async fn approve_locked(
        &self,
        _lock: journal::SessionLock,
        record: SessionRecord,
        message: &str,
        options: ApproveOptions,
    ) -> Result<ApproveResult> {
        let (records, adapters) = (self.records(), self.adapters());
        let session_id = &record.session_id;
        // A workflow's change is approved only once its last phase has run.
        workflow::check_finished(
            &RunFiles::in_home(&records.home, session_id),
            session_id,
            record.state,
        )?;
        verify::gate(&records.home, session_id, options.force)?;
        let message = if message.trim().is_empty() {
            default_message(&record.prompt)
        } else {
            message.to_owned()
        };
        let approved = journal::approve(records, adapters, &record, &message)
            .await
            .map_err(|e| disk::named(records.home.root(), e))?;
        remember_outcome(adapters.memory.as_ref(), &record, SessionState::Approved).await;
        Ok(approved)
    }

    /// Rejects like [`Runner::reject`] and says what became of the branch. A stopped
    /// session can be rejected too (no need to pay for the rest of its run); a branch the
    /// agent committed to is kept, as `recover` keeps a failed session's.
    pub(crate) async fn reject_and_say(&self, session_id: &SessionId) -> Result<RejectResult> {
        let (records, adapters) = (self.records(), self.adapters());
        let (_lock, record) = self
            .locked_for(
                session_id,
                SessionState::Rejecting,
                SessionState::Rejected,
                "reject",
            )
            .await?;
        cleanup::check_kept(&record)?;
        let kept = journal::reject(records, adapters, &record)
            .await
            .map_err(|e| disk::named(records.home.root(), e))?;
        remember_outcome(adapters.memory.as_ref(), &record, SessionState::Rejected).await;
        Ok(RejectResult {
            session_id: *session_id,
            kept_branch: kept.then(|| record.branch.clone()),
        })
    }

    /// The decision's lock, then the session healed and settled, checked to move through
    /// `via` to `to`: nothing (a supervisor the healing launches among them) can move the
    /// session between the look and the decision.
    pub(super) async fn locked_for(
        &self,
        session_id: &SessionId,
        via: SessionState,
        to: SessionState,
        what: &str,
    ) -> Result<(journal::SessionLock, SessionRecord)> {
        let (records, adapters) = (self.records(), self.adapters());
        let lock = journal::SessionLock::acquire(&records.home, session_id).await?;
        self.healed(records.store.get(session_id)?).await?;
        let record = journal::settle(records, adapters, records.store.get(session_id)?).await?;
        record.state.check_move(via, to, what)?;
        Ok((lock, record))
    }
}

/// Tells the repo's memory how a decided session ended, so the next run's notes say it;
/// a memory error never fails the decision.
async fn remember_outcome(memory: &dyn MemoryStore, record: &SessionRecord, outcome: SessionState) {
    if let Err(e) = memory
        .record_outcome(&record.repo_key, &record.branch, outcome)
        .await
    {
        tracing::warn!(session = %record.session_id, "repo memory: cannot record how the session ended: {e}");
    }
}

/// The commit message when approve is given none: the prompt's first line, shortened.
fn default_message(prompt: &str) -> String {
    let first = prompt
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("codehands change")
        .trim();
    let short: String = first.chars().take(72).collect();
    if short.len() < first.len() {
        format!("{}…", short.trim_end())
    } else {
        short
    }
}
