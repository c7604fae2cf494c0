//! Throwing away what a failed session leaves: its worktree, and its branch
//! unless the agent committed to it.

use super::parts::Adapters;
use runner_contract::error::{Error, ErrorKind, Result};
use runner_contract::home::Home;
use runner_contract::session::{SessionRecord, SessionState};

/// What [`discard_failed`] did with the branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BranchFate {
    /// Deleted.
    Deleted,
    /// Kept: the agent committed to it.
    Kept,
    /// It was not there.
    Absent,
}

/// Removes a session's worktree (one already gone is fine). A folder under the home that git
/// no longer lists (its registration was swept after a start died) is codehands' own: it goes
/// too. Then the repository forgets registrations whose folders are gone.
pub(super) async fn remove_session_worktree(
    home: &Home,
    adapters: &Adapters,
    record: &SessionRecord,
) -> Result<()> {
    let vcs = &adapters.vcs;
    let path = &record.worktree_path;
    if std::fs::symlink_metadata(path).is_ok() {
        match vcs.remove_worktree(&record.repo_path, path).await {
            Ok(()) => {}
            Err(e)
                if e.kind() == ErrorKind::InvalidInput
                    && path.starts_with(home.worktrees_dir())
                    && !path
                        .components()
                        .any(|c| c == std::path::Component::ParentDir) =>
            {
                std::fs::remove_dir_all(path).map_err(|io| {
                    Error::io(
                        format!("cannot remove the worktree {}", path.display()),
                        &io,
                    )
                })?;
            }
            Err(e) => return Err(e),
        }
    }
    forget_box(home, adapters, record);
    vcs.prune(&record.repo_path).await
}

/// Removes what the session's box kept (its private home, with the agent's state and the
/// login copies): the session is decided, nothing will run in it again.
pub(super) fn forget_box(home: &Home, adapters: &Adapters, record: &SessionRecord) {
    if let Some(confinement) = &adapters.confinement {
        confinement.discard(&home.run_dir(&record.session_id));
    }
}

/// Removes a failed session's worktree, and its branch unless it has commits beyond base.
pub(super) async fn discard_failed(
    home: &Home,
    adapters: &Adapters,
    record: &SessionRecord,
) -> Result<BranchFate> {
    let vcs = &adapters.vcs;
    remove_session_worktree(home, adapters, record).await?;
    if !vcs.branch_exists(&record.repo_path, &record.branch).await? {
        return Ok(BranchFate::Absent);
    }
    if vcs
        .has_commits_beyond(&record.repo_path, &record.branch, &record.base_commit)
        .await?
    {
        return Ok(BranchFate::Kept);
    }
    vcs.delete_branch(&record.repo_path, &record.branch).await?;
    Ok(BranchFate::Deleted)
}

/// Refuses the reject of a failed session whose worktree went with its failure: only a
/// failed session whose change was kept (`SessionRecord::kept`) has anything to reject.
pub(super) fn check_kept(record: &SessionRecord) -> Result<()> {
    if record.state == SessionState::Failed && !record.kept {
        return Err(Error::new(
            ErrorKind::IllegalMove,
            format!(
                "cannot reject: session {} failed and its worktree was removed then; there is \
                 nothing left to reject",
                record.session_id
            ),
        ));
    }
    Ok(())
}
