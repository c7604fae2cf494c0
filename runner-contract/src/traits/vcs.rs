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

/// What [`Vcs::take_out_nested_git`] took out of a worktree after a turn: every way the
/// agent left for the person's own `git` to read a git folder of the agent's making (and run
/// the programs its config names) in that worktree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NestedGit {
    /// Each `.git` (file, folder or link) moved out: its path in the worktree, and where it is
    /// now (under the run's `quarantine/`, for the person to look at).
    pub moved: Vec<(String, PathBuf)>,
    /// Each `.git` that could not be moved (the run's folder is on another disk) and was
    /// removed instead, by its path in the worktree.
    pub removed: Vec<String>,
    /// Each submodule entry (gitlink) dropped from the worktree's index, by path: one the base
    /// commit does not have, which the agent wrote.
    pub gitlinks: Vec<String>,
    /// What could not be done, in words: each is a way left open, so the person must not run
    /// git in the worktree.
    pub failed: Vec<String>,
}

impl NestedGit {
    /// Whether nothing was found.
    pub fn is_empty(&self) -> bool {
        self.moved.is_empty()
            && self.removed.is_empty()
            && self.gitlinks.is_empty()
            && self.failed.is_empty()
    }
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

    /// The git folders the session's worktree needs to work as a git worktree inside a box
    /// (found through what codehands recorded, never the worktree's own `.git` file);
    /// `None` by default and for a VCS with none.
    async fn git_dirs(&self, worktree: &WorktreeSpec) -> Result<Option<crate::GitDirs>> {
        let _ = worktree;
        Ok(None)
    }

    /// After a turn of an agent in a box: moves every `.git` below the worktree's top that is
    /// not a submodule's link into the repository's own git folder into `quarantine` (at the
    /// same relative path), and drops from the worktree's index the submodule entries the
    /// base commit does not have; the person's next `git status` in the worktree would
    /// otherwise read that git folder's config and hooks and run what they name. Nothing by
    /// default, for a VCS that has no such thing.
    async fn take_out_nested_git(
        &self,
        worktree: &WorktreeSpec,
        quarantine: &Path,
    ) -> Result<NestedGit> {
        let _ = (worktree, quarantine);
        Ok(NestedGit::default())
    }
}
