//! An implementation of `runner_contract::Vcs` for git, with [gix].
//!
//! [`GitVcs`] gives each session a private worktree on a new branch
//! (`codehands/<slug>-<id8>`) outside the person's repository, diffs it against the base
//! commit (untracked files, deletions, renames, binary files and mode changes included), and on
//! approve makes exactly one commit on that branch. The person's checkout (HEAD, current branch,
//! index, working files) is never read for writing.
//!
//! Everything goes through gix; **the `git` program is not needed**. gix 0.91 has no
//! `worktree prune`, so [`Vcs::prune`] follows git's rule itself: an entry under
//! `.git/worktrees/` that is not locked and whose folder (or back link) is gone is removed.
//!
//! **The worktree is hostile ground.** A session's worktree is opened through the registration
//! codehands made for it (`<repo>/.git/worktrees/<name>`, found from the recorded path), never
//! through the worktree's own `.git` file, which is only checked: one that no longer points
//! there is refused with what to do. Approve commits on the branch of the session record (a
//! compare-and-swap from the tip it read), whatever the worktree's HEAD says. Files are read
//! as bytes: no filter, textconv, attribute, hook or fsmonitor is ever applied or run, so
//! nothing in the worktree or its config can make codehands run a program. Diff and approve
//! build their tree by the same code from the same place.
//!
//! **Many runs at once.** Registrations are read as plain files (gix's listing fails as a whole
//! on another process's half-made one) and made one at a time per repository under a `flock`
//! (`.git/codehands-worktrees.lock`); under it, registrations a killed process left half made
//! are swept away. Parent folders are made race-free.
//!
//! How the pieces fit: the worktree's tree is built from the base tree plus what gix's status
//! reports (stat data in the index spares unchanged files from being read), and is diffed
//! against base with rename tracking; the diff keeps its new objects in memory, the commit
//! writes them. Patches are written as `git diff --binary` writes them, by one writer that
//! [`file_patch`] exposes over plain bytes (no repository) for the fuzz target that checks
//! its output with `git apply` (`fuzz-harness`, target `patch`). Files over the size
//! limit ([`GitVcs::with_large_file_limit`], 4 MiB by default) are hashed from a stream, shown
//! in the stat as `tooLarge` and in the patch as "Too large to show", and streamed into the
//! object store by approve, so memory stays bounded.
//!
//! Faults, and what happens (each is tested; nothing half-made is left behind):
//! - a branch of that name already there (a crash, a reused session id): create is refused and
//!   names the branch; `codehands recover` or `git branch -D` clears it;
//! - a non-empty folder, or a live worktree, already at the path: create is refused;
//! - a registration whose folder is gone or empty: forgotten, as `git worktree prune` would, and
//!   the worktree is made;
//! - a folder that cannot be written (a file in the way; no permission, which the tests can
//!   only check when not run as root): refused with the path, the folders made so far are taken
//!   back and the new branch is deleted again;
//! - the person's `index.lock`: not in the way, their index is never read or written;
//! - an `index.lock` left in the worktree: not in the way, approve reads the worktree's index
//!   and never writes it; a held branch lock refuses create; on a session's own branch, a lock
//!   a killed approve or reject left is cleared (the runner holds the session's lock);
//! - the agent's own writes to its worktree's git folder (writable in the box): a `locked`
//!   file does not stop removal (only codehands' own worktrees are removed, once the person
//!   decided), and a HEAD naming another branch, a detached commit or garbage is never read (a
//!   deleted one is put back), so approve and reject always finish;
//! - branches are deleted with a plain ref edit, so no kill leaves a `config.lock` behind;
//! - paths with spaces or non-ASCII characters: plain paths to gix; in patches they are
//!   written as git writes them (C-quoted when needed, a tab after a name with a space).
//!
//! **Git inside the worktree.** A `.git` the agent made below the worktree's top, or a
//! submodule entry (gitlink) it wrote into the worktree's index, would have the person's own
//! `git status` there enter a git folder of the agent's making and run what its config names.
//! After each boxed turn the runner calls [`Vcs::take_out_nested_git`] (`nested.rs`): each such
//! `.git` is moved into the run's `quarantine/`, each gitlink the base does not have is dropped
//! from the index. Diff and approve never take a gitlink the base does not have at that path,
//! nor a path with a `.git` component, whatever the index says.
//!
//! Known limits: a path that is not UTF-8 is shown lossily in the patch and the stat (the
//! commit keeps its bytes); an untracked folder that is itself a git repo is left out, where `git add -A`
//! would add it as an embedded repo.
//!
//! Commit identity (from the person's repository, never the worktree): the author passed in,
//! else the repo's git config (`author.*`, `user.*`, the
//! `GIT_AUTHOR_*` variables), else the committer; the committer comes from the config
//! (`committer.*`, `user.*`, `GIT_COMMITTER_*`), and when nothing is configured it is
//! `codehands <codehands@localhost>`.

mod branch;
mod commit;
mod committed;
mod diff;
mod dirty;
mod error;
mod nested;
mod patch;
mod registry;
mod repo;
mod session;
mod snapshot;
mod worktree;

use std::path::Path;

pub use committed::file_at_head;
pub use patch::{FileVersion, file_patch};

use async_trait::async_trait;
use runner_contract::{
    DiffResult, Error, PreparedCommit, Result, SessionId, Signature, ToolWorktree, Vcs,
    WorktreeSpec,
};

/// Files of more bytes than this are "too large to show" in a diff by default (4 MiB).
pub const DEFAULT_LARGE_FILE_LIMIT: u64 = 4 << 20;

/// The git `Vcs`. It holds no repository state: every call opens the repository afresh, so
/// several `codehands` processes can work on one repository.
#[derive(Debug, Clone, Copy)]
pub struct GitVcs {
    large_file_limit: u64,
}

impl Default for GitVcs {
    fn default() -> Self {
        Self::new()
    }
}

impl GitVcs {
    /// A git `Vcs`.
    pub fn new() -> Self {
        Self {
            large_file_limit: DEFAULT_LARGE_FILE_LIMIT,
        }
    }

    /// Files of more than `bytes` bytes are shown in a diff's stat but not in its patch
    /// ("too large to show"), and are never held in memory whole; approve still commits them.
    pub fn with_large_file_limit(mut self, bytes: u64) -> Self {
        self.large_file_limit = bytes;
        self
    }
}

pub use dirty::uncommitted_files;

/// Runs blocking repository work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| Error::internal(format!("a git task panicked: {e}")))?
}

#[async_trait]
impl Vcs for GitVcs {
    async fn base_commit(&self, repo: &Path) -> Result<String> {
        let repo = repo.to_owned();
        blocking(move || repo::base_commit(&repo)).await
    }

    async fn repo_key(&self, repo: &Path) -> Result<String> {
        let repo = repo.to_owned();
        blocking(move || repo::repo_key(&repo)).await
    }

    fn branch_name(&self, prompt: &str, session_id: &SessionId) -> String {
        branch::branch_name(prompt, session_id)
    }

    async fn create_worktree(&self, spec: &WorktreeSpec) -> Result<()> {
        let spec = spec.clone();
        blocking(move || worktree::create(&spec)).await
    }

    async fn diff(&self, worktree: &WorktreeSpec) -> Result<DiffResult> {
        let (spec, limit) = (worktree.clone(), self.large_file_limit);
        blocking(move || diff::diff(&spec, limit)).await
    }

    async fn prepare_commit(
        &self,
        worktree: &WorktreeSpec,
        message: &str,
        author: Option<&Signature>,
    ) -> Result<PreparedCommit> {
        let (spec, limit) = (worktree.clone(), self.large_file_limit);
        let (message, author) = (message.to_owned(), author.cloned());
        blocking(move || commit::prepare(&spec, &message, author.as_ref(), limit)).await
    }

    async fn publish_commit(
        &self,
        worktree: &WorktreeSpec,
        prepared: &PreparedCommit,
    ) -> Result<()> {
        let (spec, prepared) = (worktree.clone(), prepared.clone());
        blocking(move || commit::publish(&spec, &prepared)).await
    }

    async fn remove_worktree(&self, repo: &Path, worktree: &Path) -> Result<()> {
        let (repo, worktree) = (repo.to_owned(), worktree.to_owned());
        blocking(move || worktree::remove(&repo, &worktree)).await
    }

    async fn delete_branch(&self, repo: &Path, branch: &str) -> Result<()> {
        let (repo, branch) = (repo.to_owned(), branch.to_owned());
        blocking(move || branch::delete(&repo, &branch)).await
    }

    async fn list_worktrees(&self, repo: &Path, root: &Path) -> Result<Vec<ToolWorktree>> {
        let (repo, root) = (repo.to_owned(), root.to_owned());
        blocking(move || worktree::list(&repo, &root)).await
    }

    async fn prune(&self, repo: &Path) -> Result<()> {
        let repo = repo.to_owned();
        blocking(move || worktree::prune(&repo)).await
    }

    async fn has_commits_beyond(&self, repo: &Path, branch: &str, base: &str) -> Result<bool> {
        let (repo, branch, base) = (repo.to_owned(), branch.to_owned(), base.to_owned());
        blocking(move || branch::has_commits_beyond(&repo, &branch, &base)).await
    }

    async fn branch_exists(&self, repo: &Path, branch: &str) -> Result<bool> {
        let (repo, branch) = (repo.to_owned(), branch.to_owned());
        blocking(move || branch::exists(&repo, &branch)).await
    }

    async fn git_dirs(&self, worktree: &WorktreeSpec) -> Result<Option<runner_contract::GitDirs>> {
        let spec = worktree.clone();
        blocking(move || {
            let main = repo::open_to_read(&spec.repo)?;
            let common = main.common_dir().to_owned();
            Ok(
                registry::find(&common, &spec.path)?.map(|r| runner_contract::GitDirs {
                    common,
                    admin: r.admin,
                }),
            )
        })
        .await
    }

    async fn take_out_nested_git(
        &self,
        worktree: &WorktreeSpec,
        quarantine: &Path,
    ) -> Result<runner_contract::traits::vcs::NestedGit> {
        let (spec, into) = (worktree.clone(), quarantine.to_owned());
        blocking(move || nested::take_out(&spec, &into)).await
    }

    async fn branch_tip(&self, repo: &Path, branch: &str) -> Result<Option<String>> {
        let (repo, branch) = (repo.to_owned(), branch.to_owned());
        blocking(move || {
            let opened = repo::open_to_read(&repo)?;
            Ok(branch::tip(&opened, &branch)?.map(|id| id.to_string()))
        })
        .await
    }
}
