//! Where tests find an agent's program: the variable that names one, then the cache
//! that `cargo xtask agents` fills. Each agent crate says its own pinned version and
//! where in the cache its program goes; this module names no agent.

use std::path::PathBuf;

/// The cache root: `$CODEHANDS_CACHE`, or `~/.cache/codehands`.
pub fn cache_root() -> PathBuf {
    match std::env::var_os("CODEHANDS_CACHE").filter(|v| !v.is_empty()) {
        Some(root) => PathBuf::from(root),
        None => std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(std::env::temp_dir)
            .join(".cache/codehands"),
    }
}

/// The program named by the variable `var` when it is set, else `cached` if that file exists.
pub fn find_program(var: &str, cached: PathBuf) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(var).filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(path));
    }
    cached.is_file().then_some(cached)
}

/// An agent's program for tests: `var` when set, else where `path_in` puts the pinned
/// program under [`cache_root`], if it is there.
pub fn find_pinned(var: &str, path_in: fn(&std::path::Path) -> PathBuf) -> Option<PathBuf> {
    find_program(var, path_in(&cache_root()))
}
