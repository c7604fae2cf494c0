//! `Vcs`: the private worktree, the diff since base, and the commit on approve.

use std::path::{Path, PathBuf};

use async_trait::async_trait;

use crate::error::Result;
use crate::ids::SessionId;
use crate::options::DiffResult;

/// A worktree to make: on a new branch from `base`, at `path`, outside the repo.
#[derive(Debug, Clone)]
pub struct WorktreeSpec {
    /// The person's repository.
    pub repo: PathBuf,
    /// The commit to branch from.
    pub base: String,
    /// The new branch (`codehands/<slug>-<id8>`).
    pub branch: String,
    /// Where the worktree goes (`$CODEHANDS_HOME/worktrees/<repoKey>/<id8>`).
    pub path: PathBuf,
}

/// Who a commit is by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// The name.
    pub name: String,
    /// The e-mail address.
    pub email: String,
}

/// A commit written by [`Vcs::prepare_commit`] and not yet on its branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedCommit {
    /// The new commit.
    pub commit: String,
    /// The branch tip it replaces (the base, or the agent's own commits).
    pub replaces: String,
}

/// A worktree this tool made, as the repository lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolWorktree {
    /// Its folder.
    pub path: PathBuf,
    /// Its branch, when it has one.
    pub branch: Option<String>,
}

/// Version control for codehands: every method leaves the person's checkout
/// (HEAD, current branch, index, working files) exactly as it was.
#[async_trait]
pub trait Vcs: Send + Sync {
    /// The HEAD commit of `repo`. Refuses a missing path, a non-repo, a bare repo or
    /// a repo with no commits: "… is not a git repo or has no commits yet".
    async fn base_commit(&self, repo: &Path) -> Result<String>;

    /// The repo's key: 12 hex characters of the SHA-1 of its origin URL, or of its absolute path.
    async fn repo_key(&self, repo: &Path) -> Result<String>;

    /// The branch name for a session: `codehands/<slug>-<id8>`, always a valid ref.
    fn branch_name(&self, prompt: &str, session_id: &SessionId) -> String;

    /// Makes the worktree on a new branch. On any error nothing is left behind.
    async fn create_worktree(&self, spec: &WorktreeSpec) -> Result<()>;

    /// Everything that changed in the session's worktree since its base, untracked files
    /// included. The worktree is opened through what codehands recorded (`worktree.repo`,
    /// `worktree.path`), never through anything written inside it.
    async fn diff(&self, worktree: &WorktreeSpec) -> Result<DiffResult>;

    /// Writes the commit approve makes (everything not ignored, as one commit on top of
    /// `worktree.base`) without moving any branch, and returns it with the tip of
    /// `worktree.branch` it is to replace. Refuses with `NothingToApprove` when nothing changed.
    async fn prepare_commit(
        &self,
        worktree: &WorktreeSpec,
        message: &str,
        author: Option<&Signature>,
    ) -> Result<PreparedCommit>;

    /// Moves `worktree.branch` from `prepared.replaces` to `prepared.commit`, only if it still
    /// points at `prepared.replaces` (a branch already at `prepared.commit` is fine). The
    /// caller holds the session's lock, so a lock file left on the session's branch by an
    /// earlier call that was killed is stale and cleared.
    async fn publish_commit(
        &self,
        worktree: &WorktreeSpec,
        prepared: &PreparedCommit,
    ) -> Result<()>;

    /// Commits the worktree on its branch ([`Vcs::prepare_commit`], [`Vcs::publish_commit`]),
    /// removes the worktree and keeps the branch; returns the commit id.
    async fn commit(
        &self,
        worktree: &WorktreeSpec,
        message: &str,
        author: Option<&Signature>,
    ) -> Result<String> {
        let prepared = self.prepare_commit(worktree, message, author).await?;
        self.publish_commit(worktree, &prepared).await?;
        self.remove_worktree(&worktree.repo, &worktree.path)
            .await
            .map_err(|e| {
                crate::error::Error::new(
                    e.kind(),
                    format!(
                        "committed {} on {}, but could not remove the worktree: {}; run \
                         `codehands recover`",
                        prepared.commit,
                        worktree.branch,
                        e.message()
                    ),
                )
            })?;
        Ok(prepared.commit)
    }

    /// Removes a worktree, even with changes in it. Keeps its branch.
    async fn remove_worktree(&self, repo: &Path, worktree: &Path) -> Result<()>;

    /// Deletes a local branch (not checked out anywhere). For a session's branch
    /// (`codehands/…`, its session's lock held) a stale lock file left by a killed call is
    /// cleared first.
    async fn delete_branch(&self, repo: &Path, branch: &str) -> Result<()>;

    /// The worktrees of `repo` that live under `root` (this tool's worktrees).
    async fn list_worktrees(&self, repo: &Path, root: &Path) -> Result<Vec<ToolWorktree>>;

    /// Forgets worktree entries whose folders are gone.
    async fn prune(&self, repo: &Path) -> Result<()>;

    /// Whether `branch` has commits beyond `base` (the agent committed).
    async fn has_commits_beyond(&self, repo: &Path, branch: &str, base: &str) -> Result<bool>;

    /// Whether `branch` exists in `repo`.
    async fn branch_exists(&self, repo: &Path, branch: &str) -> Result<bool>;

    /// The commit `branch` points at, or `None` when there is no such branch.
    async fn branch_tip(&self, repo: &Path, branch: &str) -> Result<Option<String>>;
}
