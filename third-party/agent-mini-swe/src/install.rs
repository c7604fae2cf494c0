//! Where a pinned mini-swe-agent lives and what it is made of. `cargo xtask agents`
//! builds it from these facts; tests and the facade find it with them. Nothing
//! here reads the environment: the cache root is passed in.
//!
//! The layout under `<cache root>/agents/`:
//!
//! ```text
//! mini-swe-agent-2.4.6            a link, made last, to the folder below: its presence means "installed"
//! .mini-swe-agent-2.4.6-<random>/
//!     venv/                       a Python venv holding exactly the packages of `REQUIREMENTS`
//!     config/mini.yaml            a copy of mini-swe-agent's own default config
//!     config/task.yaml            a link to /dev/stdin: the run's config, the task in it, comes on stdin
//! ```
//!
//! The venv is built where it stays (a venv's scripts name their Python by absolute
//! path, so it cannot be moved), and only the link is renamed into place.

use std::path::{Path, PathBuf};

/// The mini-swe-agent version this crate's parser was written and recorded against.
pub const VERSION: &str = "2.4.6";

/// mini-swe-agent and every package it runs with, pinned (`pip freeze` of a fresh install).
pub const REQUIREMENTS: &str = include_str!("../requirements.txt");

/// The install folder (a link to the real one) under `cache_root`.
pub fn folder(cache_root: &Path) -> PathBuf {
    cache_root
        .join("agents")
        .join(format!("mini-swe-agent-{VERSION}"))
}

/// The `mini` program of an install folder.
pub fn program(folder: &Path) -> PathBuf {
    folder.join("venv/bin/mini")
}

/// The config folder of an install folder (`mini.yaml` and `task.yaml`).
pub fn config_dir(folder: &Path) -> PathBuf {
    folder.join("config")
}

/// The name of the default config's copy in a config folder.
pub const DEFAULT_CONFIG: &str = "mini.yaml";

/// The name of the link to `/dev/stdin` in a config folder.
pub const STDIN_CONFIG: &str = "task.yaml";
