//! Where the pinned agent CLIs are: the variable that names one, then the cache
//! that `cargo xtask agents` fills.

use std::path::PathBuf;

/// The Claude Code version the project pins (from `claude-agent-sdk` 0.2.189).
pub const CLAUDE_VERSION: &str = "2.1.332";

/// The Codex version the project pins (from `openai-codex-cli-bin` 0.163.0).
pub const CODEX_VERSION: &str = "0.163.0";

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

/// Where `cargo xtask agents` puts Claude Code.
pub fn claude_cache_path() -> PathBuf {
    cache_root()
        .join("agents")
        .join(format!("claude-code-{CLAUDE_VERSION}"))
        .join("claude")
}

/// Where `cargo xtask agents` puts Codex (the package's folder is kept whole).
pub fn codex_cache_path() -> PathBuf {
    cache_root()
        .join("agents")
        .join(format!("codex-{CODEX_VERSION}"))
        .join("codex_cli_bin/bin/codex")
}

/// Claude Code for tests: `CLAUDE_BIN` when set, else the cached pinned binary, if it is there.
pub fn claude_bin() -> Option<PathBuf> {
    from_env_or_cache("CLAUDE_BIN", claude_cache_path())
}

/// Codex for tests: `CODEX_BIN` when set, else the cached pinned binary, if it is there.
pub fn codex_bin() -> Option<PathBuf> {
    from_env_or_cache("CODEX_BIN", codex_cache_path())
}

fn from_env_or_cache(var: &str, cached: PathBuf) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(var).filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(path));
    }
    cached.is_file().then_some(cached)
}
