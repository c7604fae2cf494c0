//! The caller's own toolchains under their home, found from their PATH and brought into the
//! box read-only with the variables they need: rustup's cargo, pyenv's Pythons, nvm's node,
//! asdf's and mise's shims, a Go or an SDK installed in a folder of its own. Nothing of the
//! home comes in whole, and no secret place ([`runner_contract::secret_places`]) ever does.
//!
//! Each rule names the folder it brings in and why: a toolchain's own root holds programs
//! and libraries (`~/.rustup/toolchains`, `~/.pyenv/versions`), never the person's files.

use std::path::{Path, PathBuf};

/// What the box brings in for the caller's toolchains.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Toolchains {
    /// Folders and files bound read-only at their own path.
    pub read_only: Vec<PathBuf>,
    /// Variables the box sets so each toolchain finds itself (`RUSTUP_HOME` …).
    pub env: Vec<(String, String)>,
    /// One line per toolchain found, for `codehands doctor` (`rustup: /home/me/.rustup`).
    pub found: Vec<String>,
}

impl Toolchains {
    fn bind(&mut self, path: PathBuf) {
        if path.exists() && !self.read_only.contains(&path) {
            self.read_only.push(path);
        }
    }

    fn set(&mut self, name: &str, value: &Path) {
        if !self.env.iter().any(|(k, _)| k == name) {
            self.env
                .push((name.to_owned(), value.to_string_lossy().into_owned()));
        }
    }
}

/// The toolchains of the PATH folders that lie under `home`, with the caller's `env` (for
/// the roots a toolchain's variable names: `CARGO_HOME`, `RUSTUP_HOME`, `PYENV_ROOT` …).
pub fn find(path_var: &str, home: &Path, env: &[(String, String)]) -> Toolchains {
    let mut found = find_each(path_var, home, env);
    let mut seen = Vec::new();
    found.found.retain(|line| {
        let first = !seen.contains(line);
        seen.push(line.clone());
        first
    });
    found
}

/// [`find`], a line per PATH folder (a folder named twice says so twice).
fn find_each(path_var: &str, home: &Path, env: &[(String, String)]) -> Toolchains {
    let var = |name: &str| {
        env.iter()
            .find(|(k, v)| k == name && !v.is_empty())
            .map(|(_, v)| PathBuf::from(v))
            .filter(|p| p.is_absolute())
    };
    let root = |name: &str, default: &str| var(name).unwrap_or_else(|| home.join(default));
    let cargo_home = root("CARGO_HOME", ".cargo");
    let rustup_home = root("RUSTUP_HOME", ".rustup");
    let pyenv_root = root("PYENV_ROOT", ".pyenv");
    let nvm_dir = root("NVM_DIR", ".nvm");
    let asdf_dir = root("ASDF_DATA_DIR", ".asdf");
    let mise_dir = home.join(".local/share/mise");
    let mut found = Toolchains::default();
    for dir in std::env::split_paths(path_var) {
        if !dir.is_absolute() || !dir.starts_with(home) || dir == home || !dir.is_dir() {
            continue;
        }
        if runner_contract::secret_places::secret_in(home, &dir).is_some() {
            continue;
        }
        if dir == cargo_home.join("bin") {
            // rustup's proxies and cargo's installs; the registry's sources and cache, so
            // `cargo --offline` builds what the caller has fetched; never credentials.
            found.bind(dir.clone());
            for part in ["registry", "git", "config.toml", "config", "env"] {
                found.bind(cargo_home.join(part));
            }
            found.set("CARGO_HOME", &cargo_home);
            if rustup_home.is_dir() {
                found.bind(rustup_home.clone());
                found.set("RUSTUP_HOME", &rustup_home);
                found
                    .found
                    .push(format!("rustup: {}", rustup_home.display()));
            }
            found.found.push(format!(
                "cargo: {} (bin, registry, git, config; never credentials)",
                cargo_home.display()
            ));
        } else if dir.starts_with(&pyenv_root) {
            // Its shims run `pyenv exec`, which needs the whole root (versions, libexec).
            found.bind(pyenv_root.clone());
            found.set("PYENV_ROOT", &pyenv_root);
            found.found.push(format!("pyenv: {}", pyenv_root.display()));
        } else if let Ok(rest) = dir.strip_prefix(nvm_dir.join("versions/node")) {
            // The active node only: `versions/node/<v>/bin` brings `versions/node/<v>`.
            if let Some(version) = rest.components().next() {
                let install = nvm_dir.join("versions/node").join(version);
                found.bind(install.clone());
                found
                    .found
                    .push(format!("node (nvm): {}", install.display()));
            }
        } else if dir.starts_with(&asdf_dir) {
            found.bind(asdf_dir.clone());
            found.set("ASDF_DATA_DIR", &asdf_dir);
            found.found.push(format!("asdf: {}", asdf_dir.display()));
        } else if dir.starts_with(&mise_dir) {
            found.bind(mise_dir.clone());
            found.found.push(format!("mise: {}", mise_dir.display()));
        } else if let Some(install) = own_install(&dir, home) {
            // A toolchain kept in a folder of its own (`~/sdk/go1.22/bin`, `~/.volta/bin`,
            // `~/go/bin`): that folder, read-only.
            found
                .found
                .push(format!("{}: {}", dir.display(), install.display()));
            found.bind(install);
        }
    }
    found
}

/// The folder above `dir` when `dir` is a `bin/` of a toolchain's own folder: not the home,
/// not a folder every install shares (`~/.local`), not a secret place.
fn own_install(dir: &Path, home: &Path) -> Option<PathBuf> {
    if dir.file_name()? != "bin" {
        return None;
    }
    let install = dir.parent()?;
    let shared = [".local", ".config", ".cache", ".npm-global", "node_modules"];
    let is_shared = install == home
        || !install.starts_with(home)
        || shared
            .iter()
            .any(|s| install == home.join(s) || install.file_name() == Some(s.as_ref()));
    if is_shared || runner_contract::secret_places::secret_in(home, install).is_some() {
        return None;
    }
    Some(install.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mkdirs(home: &Path, dirs: &[&str]) {
        for dir in dirs {
            std::fs::create_dir_all(home.join(dir)).unwrap();
        }
    }

    #[test]
    fn rustup_brings_its_toolchains_and_the_registry_never_the_credentials() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        mkdirs(
            home,
            &[".cargo/bin", ".cargo/registry", ".rustup/toolchains"],
        );
        std::fs::write(home.join(".cargo/credentials.toml"), "token").unwrap();
        let path = format!("{}:/usr/bin", home.join(".cargo/bin").display());
        let found = find(&path, home, &[]);
        assert!(found.read_only.contains(&home.join(".cargo/bin")));
        assert!(found.read_only.contains(&home.join(".cargo/registry")));
        assert!(found.read_only.contains(&home.join(".rustup")));
        assert!(!found.read_only.contains(&home.join(".cargo")));
        assert!(
            !found
                .read_only
                .iter()
                .any(|p| p.ends_with("credentials.toml"))
        );
        let rustup = home.join(".rustup").display().to_string();
        assert!(found.env.contains(&("RUSTUP_HOME".into(), rustup)));
        assert!(found.env.iter().any(|(k, _)| k == "CARGO_HOME"));
    }

    #[test]
    fn pyenv_nvm_and_an_sdk_bring_their_own_roots_only() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        mkdirs(
            home,
            &[
                ".pyenv/shims",
                ".nvm/versions/node/v20.1.0/bin",
                ".nvm/versions/node/v18.0.0/bin",
                "sdk/go1.22/bin",
                "bin",
                ".local/bin",
                ".ssh/bin",
            ],
        );
        let path = [
            ".pyenv/shims",
            ".nvm/versions/node/v20.1.0/bin",
            "sdk/go1.22/bin",
            "bin",
            ".local/bin",
            ".ssh/bin",
        ]
        .map(|d| home.join(d).display().to_string())
        .join(":");
        let found = find(&path, home, &[]);
        assert_eq!(
            found.read_only,
            [
                home.join(".pyenv"),
                home.join(".nvm/versions/node/v20.1.0"),
                home.join("sdk/go1.22"),
            ]
        );
        assert!(found.env.iter().any(|(k, _)| k == "PYENV_ROOT"));
    }

    #[test]
    fn folders_outside_the_home_are_not_this_modules() {
        let dir = tempfile::tempdir().unwrap();
        let found = find("/usr/bin:/usr/local/bin", dir.path(), &[]);
        assert_eq!(found, Toolchains::default());
    }
}
