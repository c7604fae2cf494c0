//! Where a pinned Mistral Vibe lives and what it is made of. `cargo xtask agents` builds it
//! from these facts; tests and the facade find it with them. Nothing here reads the
//! environment: the cache root is passed in.
//!
//! The layout under `<cache root>/agents/`:
//!
//! ```text
//! mistral-vibe-2.26.1            a link, made last, to the folder below: its presence means "installed"
//! .mistral-vibe-2.26.1-<random>/
//!     venv/                      a venv of Python 3.12 or newer holding exactly the packages of `REQUIREMENTS`
//! ```
//!
//! The venv is built where it stays (its scripts name its Python by absolute path), and only
//! the link is renamed into place. 3.0.x does not install from the registry here (it pins a
//! `certifi` release the registry does not serve), hence 2.26.1.

use std::path::{Path, PathBuf};

/// The Mistral Vibe version the tests ran.
pub const VERSION: &str = "2.26.1";

/// The oldest Python it runs on (`Requires-Python >=3.12`).
pub const MIN_PYTHON: (u32, u32) = (3, 12);

/// Mistral Vibe and every package it runs with, pinned (`pip freeze` of a fresh install).
pub const REQUIREMENTS: &str = include_str!("../requirements.txt");

/// The install folder (a link to the real one) under `cache_root`.
pub fn folder(cache_root: &Path) -> PathBuf {
    cache_root
        .join("agents")
        .join(format!("mistral-vibe-{VERSION}"))
}

/// The `vibe-acp` program of an install folder.
pub fn program(folder: &Path) -> PathBuf {
    folder.join("venv/bin/vibe-acp")
}
