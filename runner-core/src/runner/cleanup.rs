//! Throwing away what a failed session leaves: its worktree, and its branch
//! unless the agent committed to it.

use super::Shared;
use crate::error::Result;
use crate::session::SessionRecord;

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

/// Removes a failed session's worktree, and its branch unless it has commits beyond base.
pub(super) async fn discard_failed(shared: &Shared, record: &SessionRecord) -> Result<BranchFate> {
    let vcs = &shared.vcs;
    if record.worktree_path.exists() {
        vcs.remove_worktree(&record.repo_path, &record.worktree_path)
            .await?;
    } else {
        // The folder is gone but git may still list it.
        vcs.prune(&record.repo_path).await?;
    }
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
