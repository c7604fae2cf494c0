//! Where each built-in agent's program is: the variable that names it (`CLAUDE_BIN`,
//! `CODEX_BIN`, `VIBE_ACP_BIN`, ignored when empty), else the bare name on PATH, else the pinned program that
//! `cargo xtask install` put in the cache (`${CODEHANDS_CACHE:-~/.cache/codehands}`), so a
//! machine set up with the README's commands runs the agents without touching PATH.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// How a program was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "how", content = "detail")]
pub enum Found {
    /// Named by this variable.
    Variable(String),
    /// The bare name, found on PATH.
    Path,
    /// The pinned program in the cache.
    Cache,
    /// Nowhere: the bare name is kept, and running it fails with "not found".
    Missing,
}

/// A program and how it was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Located {
    /// What to run.
    pub program: PathBuf,
    /// How it was found.
    pub found: Found,
    /// Where the pinned program goes in the cache, when the agent has one.
    pub cached: Option<PathBuf>,
}

impl Located {
    /// One line for `doctor`: where it was found, or where to put it.
    pub fn explain(&self, var: &str) -> String {
        let cached = self.cached.as_ref().map(|p| p.display().to_string());
        match &self.found {
            Found::Variable(v) => format!("named by {v}"),
            Found::Path => "found on PATH".to_owned(),
            Found::Cache => "the pinned program from `cargo xtask install`'s cache".to_owned(),
            Found::Missing => match cached {
                Some(cached) => format!(
                    "not found: put `{}` on PATH, name it with {var}, or run `cargo xtask install` \
                     (it puts the pinned version at {cached})",
                    self.program.display()
                ),
                None => format!(
                    "not found: put `{}` on PATH or name it with {var}",
                    self.program.display()
                ),
            },
        }
    }
}

/// The cache root of `cargo xtask install`: `$CODEHANDS_CACHE`, or `~/.cache/codehands`.
pub fn cache_root(env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    env("CODEHANDS_CACHE")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            env("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| Path::new(&h).join(".cache/codehands"))
        })
}

/// Finds the program of an agent: `var`, else `bare` on `PATH`, else `cached`.
pub fn locate(
    env: &dyn Fn(&str) -> Option<OsString>,
    var: &str,
    bare: &str,
    cached: Option<PathBuf>,
) -> Located {
    if let Some(named) = env(var).filter(|v| !v.is_empty()) {
        return Located {
            program: PathBuf::from(named),
            found: Found::Variable(var.to_owned()),
            cached,
        };
    }
    let on_path = env("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| is_program(&dir.join(bare))));
    let (program, found) = match &cached {
        _ if on_path => (PathBuf::from(bare), Found::Path),
        Some(c) if is_program(c) => (c.clone(), Found::Cache),
        _ => (PathBuf::from(bare), Found::Missing),
    };
    Located {
        program,
        found,
        cached,
    }
}

/// A file we may run.
fn is_program(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The process's environment, as [`locate`] reads it.
pub fn process_env(name: &str) -> Option<OsString> {
    std::env::var_os(name)
}

/// Claude Code's program, from `env`.
pub fn claude(env: &dyn Fn(&str) -> Option<OsString>) -> Located {
    #[cfg(feature = "claude")]
    let cached = cache_root(env).map(|root| agent_claude::pinned::path_in(&root));
    #[cfg(not(feature = "claude"))]
    let cached = None;
    locate(env, "CLAUDE_BIN", "claude", cached)
}

/// Codex's program, from `env`.
pub fn codex(env: &dyn Fn(&str) -> Option<OsString>) -> Located {
    #[cfg(feature = "codex")]
    let cached = cache_root(env).map(|root| agent_codex::pinned::path_in(&root));
    #[cfg(not(feature = "codex"))]
    let cached = None;
    locate(env, "CODEX_BIN", "codex", cached)
}

/// Mistral Vibe's ACP server, from `env`.
pub fn vibe(env: &dyn Fn(&str) -> Option<OsString>) -> Located {
    #[cfg(feature = "vibe")]
    let cached = cache_root(env)
        .map(|root| agent_vibe::install::program(&agent_vibe::install::folder(&root)));
    #[cfg(not(feature = "vibe"))]
    let cached = None;
    locate(env, "VIBE_ACP_BIN", "vibe-acp", cached)
}

/// The program that answers `__box` and `__box-init`: this process's own program when it is
/// `codehands` (or `codehands-box`), else `codehands-box` or `codehands` on PATH.
pub fn box_helper(env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let own = std::env::current_exe().ok().filter(|exe| {
        exe.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n == "codehands" || n == "codehands-box")
    });
    own.or_else(|| {
        let path = env("PATH")?;
        ["codehands-box", "codehands"].iter().find_map(|name| {
            std::env::split_paths(&path)
                .map(|dir| dir.join(name))
                .find(|p| p.is_file())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: Vec<(&'static str, OsString)>) -> impl Fn(&str) -> Option<OsString> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.clone())
        }
    }

    fn program(path: &Path) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn the_cache_is_used_when_nothing_is_on_path_and_an_empty_variable_is_unset() {
        let dir = tempfile::tempdir().unwrap();
        let cached = dir.path().join("agents/x-1/x");
        let env = env_of(vec![
            ("X_BIN", OsString::new()),
            ("PATH", dir.path().join("bin").into()),
        ]);
        let missing = locate(&env, "X_BIN", "x", Some(cached.clone()));
        assert_eq!(missing.found, Found::Missing);
        assert!(
            missing.explain("X_BIN").contains("cargo xtask install"),
            "{missing:?}"
        );
        program(&cached);
        let found = locate(&env, "X_BIN", "x", Some(cached.clone()));
        assert_eq!((found.program, found.found), (cached, Found::Cache));
        program(&dir.path().join("bin/x"));
        let on_path = locate(&env, "X_BIN", "x", None);
        assert_eq!((on_path.program, on_path.found), ("x".into(), Found::Path));
    }
}
