//! `$CODEHANDS_HOME` (default `~/.codehands`) and the paths under it: the one place they are
//! spelled, here in the contract so that the engine, the adapters (the sandbox's results,
//! the memory store) and the facade (agent profiles, plugins) all ask the same [`Home`].
//!
//! Only parsed ids ([`SessionId`]) and checked repo keys become path segments.

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::ids::SessionId;
use crate::private::PrivateRoot;

/// The folder that holds everything codehands keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    root: PathBuf,
}

impl Home {
    /// A home at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The root folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The home as a private tree: folders 0700, files 0600, no link followed below the root.
    pub fn private(&self) -> PrivateRoot {
        PrivateRoot::new(&self.root)
    }

    /// `sessions/`: one record per session.
    pub fn sessions_dir(&self) -> PathBuf {
        self.root.join("sessions")
    }

    /// `tasks/`: one record per task (attempts side by side), `<taskId>.json`.
    pub fn tasks_dir(&self) -> PathBuf {
        self.root.join("tasks")
    }

    /// `worktrees/`: every worktree this tool made.
    pub fn worktrees_dir(&self) -> PathBuf {
        self.root.join("worktrees")
    }

    /// `worktrees/<repoKey>/<id8>`: a session's worktree.
    pub fn worktree_path(&self, repo_key: &str, id: &SessionId) -> Result<PathBuf> {
        check_repo_key(repo_key)?;
        Ok(self.worktrees_dir().join(repo_key).join(id.short()))
    }

    /// `memory/`: per-repo notes and profiles.
    pub fn memory_dir(&self) -> PathBuf {
        self.root.join("memory")
    }

    /// `agents/`: agent profile files (`<name>.toml`).
    pub fn agents_dir(&self) -> PathBuf {
        self.root.join("agents")
    }

    /// `workflows/`: workflow files (`<name>.toml`), found by name with `--workflow NAME`.
    pub fn workflows_dir(&self) -> PathBuf {
        self.root.join("workflows")
    }

    /// `plugins/`: agent plugin libraries (`*.so`).
    pub fn plugins_dir(&self) -> PathBuf {
        self.root.join("plugins")
    }

    /// `versions/`: the versions agents' programs said, each kept under the program's path,
    /// size and modification time, so an unchanged program is asked once.
    pub fn versions_dir(&self) -> PathBuf {
        self.root.join("versions")
    }

    /// `runs/<sessionId>/`: the transcript, sandbox results and process files of a session.
    pub fn run_dir(&self, id: &SessionId) -> PathBuf {
        self.root.join("runs").join(id.to_string())
    }
}

/// Refuses a repo key that is not 12 lower-case hex characters (what vcs-git makes), with
/// the one message of [`crate::RepoKey::parse`].
pub fn check_repo_key(key: &str) -> Result<()> {
    crate::repo_key::RepoKey::parse(key).map(drop)
}
