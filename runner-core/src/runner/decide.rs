//! Deciding a session: approve (with options) and reject, each under the session's lock
//! before anything can move it, journaled (`journal.rs`), the repo's memory told after.

use super::control::RunFiles;
use super::parts::{LocalRunner, Shared};
use super::{cleanup, disk, journal, verify, workflow};
use runner_contract::error::Result;
use runner_contract::ids::SessionId;
use runner_contract::options::{ApproveOptions, ApproveResult, RejectResult};
use runner_contract::session::{SessionRecord, SessionState};

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
        let shared = &self.shared;
        let (_lock, record) = self
            .locked_for(
                session_id,
                SessionState::Approving,
                SessionState::Approved,
                "approve",
            )
            .await?;
        // A workflow's change is approved only once its last phase has run.
        workflow::check_finished(
            &RunFiles::in_home(&shared.home, session_id),
            session_id,
            record.state,
        )?;
        verify::gate(&shared.home, session_id, options.force)?;
        let message = if message.trim().is_empty() {
            default_message(&record.prompt)
        } else {
            message.to_owned()
        };
        let approved = journal::approve(shared, &record, &message)
            .await
            .map_err(|e| disk::named(shared.home.root(), e))?;
        remember_outcome(shared, &record, SessionState::Approved).await;
        Ok(approved)
    }

    /// Rejects like [`Runner::reject`] and says what became of the branch. A stopped
    /// session can be rejected too (no need to pay for the rest of its run); a branch the
    /// agent committed to is kept, as `recover` keeps a failed session's.
    pub(crate) async fn reject_and_say(&self, session_id: &SessionId) -> Result<RejectResult> {
        let shared = &self.shared;
        let (_lock, record) = self
            .locked_for(
                session_id,
                SessionState::Rejecting,
                SessionState::Rejected,
                "reject",
            )
            .await?;
        cleanup::check_kept(&record)?;
        let kept = journal::reject(shared, &record)
            .await
            .map_err(|e| disk::named(shared.home.root(), e))?;
        remember_outcome(shared, &record, SessionState::Rejected).await;
        Ok(RejectResult {
            session_id: *session_id,
            kept_branch: kept.then(|| record.branch.clone()),
        })
    }

    /// The decision's lock, then the session healed and settled, checked to move through
    /// `via` to `to`: nothing (a supervisor the healing launches among them) can move the
    /// session between the look and the decision.
    async fn locked_for(
        &self,
        session_id: &SessionId,
        via: SessionState,
        to: SessionState,
        what: &str,
    ) -> Result<(journal::SessionLock, SessionRecord)> {
        let shared = &self.shared;
        let lock = journal::SessionLock::acquire(shared, session_id).await?;
        self.healed(shared.store.get(session_id)?).await?;
        let record = journal::settle(shared, shared.store.get(session_id)?).await?;
        record.state.check_move(via, to, what)?;
        Ok((lock, record))
    }
}

/// Tells the repo's memory how a decided session ended, so the next run's notes say it;
/// a memory error never fails the decision.
async fn remember_outcome(shared: &Shared, record: &SessionRecord, outcome: SessionState) {
    if let Err(e) = shared
        .memory
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
