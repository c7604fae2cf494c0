//! `Confinement`: the box an agent runs in (`Isolation::Box`), and what an agent needs in it.
//!
//! The runner asks its confinement to wrap each turn's invocation: the wrapped program is
//! what it spawns, records in `agent.json`, stops, adopts and waits for, as it does an agent
//! without a box. What the box is made of (a plan in the run's folder) is the
//! implementation's (`agent-box`: bubblewrap).

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::ids::SessionId;
use crate::traits::agent::Invocation;

/// What an agent needs in a box besides its worktree; plain data an adapter fills in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BoxNeeds {
    /// Folders or files the program needs, read-only at their own path (a config folder,
    /// an install kept whole). The program is always there, with the folder above its
    /// `bin/` and its script's interpreter's (a venv, an install kept whole).
    pub read_only: Vec<PathBuf>,
    /// The agent's login, file by file, relative to the caller's home.
    pub login: Vec<LoginFile>,
    /// `host:port` the agent may reach, through an allow-list proxy, when no base URL is
    /// set (the vendor's API hosts).
    pub hosts: Vec<String>,
    /// The variables that may hold the provider's base URL: when one is set, the host and
    /// port of each that is are the only endpoints (and `hosts` is not used).
    pub base_url_envs: Vec<String>,
}

impl BoxNeeds {
    /// What an agent needs by default ([`crate::Agent::box_needs`]): only base URLs, the
    /// variables of `provider_env` whose names end in `BASE_URL` or `API_BASE`.
    pub fn from_provider_env(provider_env: &[String]) -> Self {
        Self {
            base_url_envs: provider_env
                .iter()
                .filter(|name| name.ends_with("BASE_URL") || name.ends_with("API_BASE"))
                .cloned()
                .collect(),
            ..Self::default()
        }
    }
}

/// One login file the agent gets in its private home.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginFile {
    /// Relative to the caller's home, and to the private home (`.agent/credentials.json`).
    pub path: PathBuf,
    /// Copied once (the agent may change its copy, which is kept across turns) rather than
    /// bound read-only.
    pub copy: bool,
}

impl LoginFile {
    /// A file bound read-only.
    pub fn read_only(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            copy: false,
        }
    }

    /// A file copied once.
    pub fn copied(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            copy: true,
        }
    }
}

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
    /// The worktree, writable at its own path.
    pub worktree: &'a Path,
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
}

/// A box for agents.
pub trait Confinement: Send + Sync {
    /// Whether a box can be made on this machine (cheap: no box is started); the error says
    /// why not and what to install.
    fn available(&self) -> Result<()>;

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
