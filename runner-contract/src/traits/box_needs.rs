//! What an agent needs in a box besides its worktree (`Agent::box_needs`), as plain data
//! the adapter fills in and the runner's `Confinement` reads.

use std::path::PathBuf;

/// What an agent needs in a box besides its worktree; plain data an adapter fills in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BoxNeeds {
    /// Folders or files the program needs, read-only at their own path (a config folder,
    /// an install kept whole). The program is always there, with its script's interpreters
    /// and each one's own package folder (a venv, an npm package, one toolchain version:
    /// agent-box's `program.rs`), never a folder many installs share (`~/.local`).
    pub read_only: Vec<PathBuf>,
    /// The agent's login, file by file, relative to the caller's home.
    pub login: Vec<LoginFile>,
    /// `host:port` the agent may reach, through an allow-list proxy, when no base URL is
    /// set (the vendor's API hosts).
    pub hosts: Vec<String>,
    /// The variables that may hold the provider's base URL: when one is set, the host and
    /// port of each that is are the only endpoints (and `hosts` is not used).
    pub base_url_envs: Vec<String>,
    /// Variables that name a folder the agent keeps its own state in (a `..._HOME` of
    /// its sessions, which a follow-up loads). In a box each names a folder of
    /// the box's private home instead (`.state-<name>`, kept across the session's turns
    /// with the rest of that home), so the agent writes nothing outside its run and no
    /// session sees another's state.
    pub state_envs: Vec<String>,
    /// The agent runs its own sandbox inside the box (an agent that runs each command through its
    /// own bubblewrap), which needs new user namespaces and mounts: the box's system call
    /// filter allows those for it, and still refuses the rest of its list (ptrace,
    /// `process_vm_*`, io_uring, the key rings, bpf, perf, userfaultfd). Its `/proc` stays
    /// read-only in every namespace it makes. `false` (the default) refuses namespaces and
    /// mounts, which breaks such an agent's sandbox.
    pub nested_sandbox: bool,
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
