//! The person's checkout's own dependency folders (`node_modules`, a `.venv` …), which git
//! does not carry into the worktree: bound read-only into the worktree at the same place,
//! so the agent's tests run as they do in the checkout, and the agent cannot change the
//! person's copy. Read-only binds cost the same whatever the folder's size (a copy, or an
//! overlay that bubblewrap before 0.9 cannot make, would not); a folder the work must write
//! (a build's `target/`) is not one of them.

use std::path::{Path, PathBuf};

/// The folder names taken, at the top of the checkout.
pub const NAMES: &[&str] = &["node_modules", ".venv", "venv", "vendor"];

use crate::plan::Mount as DepBind;

/// The binds for `checkout`'s dependency folders that `worktree` lacks; a venv comes also at
/// its own path (its scripts name their Python by it), with its base Python's install when
/// that lies under `home` (a pyenv version, say).
pub fn find(checkout: &Path, worktree: &Path, home: Option<&Path>) -> Vec<DepBind> {
    let mut binds = Vec::new();
    for name in NAMES {
        let source = checkout.join(name);
        // A real folder of the checkout (never a link the repo could point anywhere), that
        // the worktree does not have (tracked folders come with the worktree).
        let real_dir = std::fs::symlink_metadata(&source).is_ok_and(|m| m.is_dir());
        if !real_dir || std::fs::symlink_metadata(worktree.join(name)).is_ok() {
            continue;
        }
        binds.push(DepBind {
            source: source.clone(),
            dest: worktree.join(name),
        });
        let cfg = source.join("pyvenv.cfg");
        if cfg.is_file() {
            binds.push(DepBind {
                source: source.clone(),
                dest: source.clone(),
            });
            if let Some(base) = venv_base(&cfg).filter(|b| home.is_some_and(|h| b.starts_with(h)))
                && home
                    .is_none_or(|h| runner_contract::secret_places::secret_in(h, &base).is_none())
            {
                binds.push(DepBind {
                    source: base.clone(),
                    dest: base,
                });
            }
        }
    }
    binds
}

/// The install of a venv's base Python: the folder above the `bin/` its `pyvenv.cfg` names
/// as `home`.
fn venv_base(cfg: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(cfg).ok()?;
    let home = text.lines().find_map(|line| {
        let (key, value) = line.split_once('=')?;
        (key.trim() == "home").then(|| PathBuf::from(value.trim()))
    })?;
    let bin = home.canonicalize().ok()?;
    if bin.file_name()? != "bin" {
        return None;
    }
    bin.parent().map(Path::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untracked_dependency_folders_come_in_and_a_venv_at_its_own_path_too() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let checkout = home.join("repo");
        let worktree = dir.path().join("wt");
        let python = home.join(".pyenv/versions/3.12.1/bin");
        std::fs::create_dir_all(&python).unwrap();
        for d in ["node_modules/x", ".venv/bin", "vendor"] {
            std::fs::create_dir_all(checkout.join(d)).unwrap();
        }
        std::fs::write(
            checkout.join(".venv/pyvenv.cfg"),
            format!("home = {}\nversion = 3.12.1\n", python.display()),
        )
        .unwrap();
        // Tracked, so the worktree has it already.
        std::fs::create_dir_all(worktree.join("vendor")).unwrap();
        // A link in the checkout is never followed.
        std::os::unix::fs::symlink("/etc", checkout.join("venv")).unwrap();
        let binds = find(&checkout, &worktree, Some(&home));
        assert_eq!(
            binds,
            vec![
                DepBind {
                    source: checkout.join("node_modules"),
                    dest: worktree.join("node_modules"),
                },
                DepBind {
                    source: checkout.join(".venv"),
                    dest: worktree.join(".venv"),
                },
                DepBind {
                    source: checkout.join(".venv"),
                    dest: checkout.join(".venv"),
                },
                DepBind {
                    source: home.join(".pyenv/versions/3.12.1"),
                    dest: home.join(".pyenv/versions/3.12.1"),
                },
            ]
        );
    }
}
