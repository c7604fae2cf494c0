//! `Confinement`: the box an agent runs in (`Isolation::Box`).
//!
//! The runner asks its confinement to wrap each turn's invocation: the wrapped program is
//! what it spawns, records in `agent.json`, stops, adopts and waits for, as it does an agent
//! without a box. What the box is made of (a plan in the run's folder) is the
//! implementation's (`agent-box`: bubblewrap).

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::ids::SessionId;
use crate::traits::agent::Invocation;
// What an agent needs in a box lives apart (`box_needs.rs`): `Agent::box_needs` names it,
// and this file names `Invocation`, so neither file imports the other.
pub use crate::traits::box_needs::{BoxNeeds, LoginFile};

/// The git folders a worktree needs to be a git worktree inside a box.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitDirs {
    /// The repository's common git folder (read-only in the box).
    pub common: PathBuf,
    /// The worktree's own folder under it, `worktrees/<name>` (writable in the box).
    pub admin: PathBuf,
}

/// One turn to wrap.
#[derive(Debug, Clone)]
pub struct ConfineRequest<'a> {
    /// The session.
    pub session_id: &'a SessionId,
    /// Its run folder (`runs/<id>/`), where the box keeps its plan, home and files.
    pub run_dir: &'a Path,
    /// The worktree, writable at its own path (read-only when `worktree_read_only`).
    pub worktree: &'a Path,
    /// Bind the worktree read-only: a workflow's read-only phase (a plan, a review) cannot
    /// write it, whatever its agent tries. A confinement that cannot says nothing of it:
    /// the runner's fingerprint of the worktree still catches a write.
    pub worktree_read_only: bool,
    /// The agent's invocation.
    pub invocation: &'a Invocation,
    /// The agent's environment as built for it (its PATH, the caller's HOME, the provider's
    /// variables); the wrapped program gets the same.
    pub env: &'a [(String, String)],
    /// What the agent needs.
    pub needs: &'a BoxNeeds,
    /// Files of the run the runner hands the agent (the repo notes), read-only.
    pub files: &'a [PathBuf],
    /// The repository's git folders for the worktree.
    pub git: Option<GitDirs>,
    /// Where the box runs: a confinement that has no such engine refuses the wrap.
    pub engine: crate::options::Engine,
    /// The image the session names for its box (`Allowances::box_image`); a confinement
    /// that runs no image (the local box) ignores it.
    pub image: Option<&'a str>,
}

/// The exit code of a remote box's driver when the box itself failed after the agent ran
/// (its result was refused, or could not be brought back): the turn fails, whatever the agent
/// printed before (a conversing agent's result line may have passed already).
pub const REMOTE_BOX_FAILED_EXIT: i32 = 125;

/// A box for agents.
pub trait Confinement: Send + Sync {
    /// Whether a box can be made on this machine (cheap: no box is started); the error says
    /// why not and what to install.
    fn available(&self) -> Result<()>;

    /// Whether a box on `engine` can be made (cheap); by default what [`Confinement::available`]
    /// says. A confinement of several engines answers for the one asked about, so a machine
    /// that can reach a Docker engine but has no bubblewrap is not taken for one that can box
    /// locally.
    fn available_on(&self, engine: crate::options::Engine) -> Result<()> {
        let _ = engine;
        self.available()
    }

    /// The invocation that runs `request.invocation` in a box: same stdin and stdin policy,
    /// a program of the box's own.
    fn wrap(&self, request: &ConfineRequest<'_>) -> Result<Invocation>;

    /// Removes what a box that is no longer running left for `run_dir` (its cgroup, its
    /// sockets); nothing when there was no box.
    fn cleanup(&self, run_dir: &Path);

    /// Removes everything the box keeps for the session in `run_dir` (its private home with
    /// the agent's state and login copies, its temp folder): once the session is decided.
    fn discard(&self, run_dir: &Path);
}
