//! The install box's command, and the refusal when `node_modules` would land in the commit.

use std::path::Path;
use std::process::Command;

use runner_core::{Language, PackageManager, RepoProfile};

/// Seed 000's refusal, word for word at the start so people can search for it.
pub const NOT_IGNORED: &str = "add node_modules/ to .gitignore first";

/// The command that installs a repo's dependencies with its install scripts
/// off and without adding a lockfile, or why the sandbox cannot install.
pub(crate) fn install_command(profile: &RepoProfile, worktree: &Path) -> Result<String, String> {
    if profile.language != Language::Node {
        return Err(format!(
            "installing dependencies is supported for Node repos only, this one is {:?}: \
             run the tests without an install step (a test command override) or vendor the dependencies",
            profile.language
        ));
    }
    let has = |name: &str| worktree.join(name).is_file();
    let command = match profile.package_manager.unwrap_or(PackageManager::Npm) {
        // `npm ci` installs exactly the lockfile; without one, write none.
        PackageManager::Npm if has("package-lock.json") => {
            "npm ci --ignore-scripts --no-audit --no-fund"
        }
        PackageManager::Npm => {
            "npm install --ignore-scripts --no-package-lock --no-audit --no-fund"
        }
        PackageManager::Pnpm if has("pnpm-lock.yaml") => {
            "pnpm install --ignore-scripts --frozen-lockfile"
        }
        PackageManager::Pnpm => "pnpm install --ignore-scripts --lockfile=false",
        PackageManager::Yarn if has("yarn.lock") => {
            "yarn install --ignore-scripts --frozen-lockfile"
        }
        PackageManager::Yarn => "yarn install --ignore-scripts --no-lockfile",
        other => {
            return Err(format!(
                "{other:?} is not a Node package manager; check the repo profile"
            ));
        }
    };
    Ok(command.to_owned())
}

/// Whether git would ignore `node_modules/` in the worktree. Git itself answers
/// (nested and global ignores count); a folder that is not a git repo falls back
/// to the root `.gitignore`.
pub(crate) fn node_modules_ignored(worktree: &Path) -> Result<bool, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(worktree)
        .args(["check-ignore", "-q", "node_modules/"])
        .output();
    match out {
        Ok(o) if o.status.code() == Some(0) => Ok(true),
        Ok(o) if o.status.code() == Some(1) => Ok(false),
        Ok(o) if String::from_utf8_lossy(&o.stderr).contains("not a git repository") => {
            Ok(root_gitignore_has(worktree))
        }
        Ok(o) => Err(format!(
            "git check-ignore failed in {}: {}",
            worktree.display(),
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(_) => Ok(root_gitignore_has(worktree)),
    }
}

fn root_gitignore_has(worktree: &Path) -> bool {
    let text = std::fs::read_to_string(worktree.join(".gitignore")).unwrap_or_default();
    text.lines().map(str::trim).any(|line| {
        matches!(
            line,
            "node_modules"
                | "node_modules/"
                | "/node_modules"
                | "/node_modules/"
                | "**/node_modules"
                | "**/node_modules/"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(pm: PackageManager) -> RepoProfile {
        RepoProfile {
            language: Language::Node,
            package_manager: Some(pm),
            needs_install: true,
            ..Default::default()
        }
    }

    #[test]
    fn commands_never_run_scripts_nor_add_lockfiles() {
        let dir = tempfile::tempdir().unwrap();
        for pm in [
            PackageManager::Npm,
            PackageManager::Pnpm,
            PackageManager::Yarn,
        ] {
            let cmd = install_command(&node(pm), dir.path()).unwrap();
            assert!(cmd.contains("--ignore-scripts"), "{cmd}");
            assert!(cmd.contains("lock"), "no lockfile added: {cmd}");
        }
        std::fs::write(dir.path().join("package-lock.json"), "{}").unwrap();
        assert!(
            install_command(&node(PackageManager::Npm), dir.path())
                .unwrap()
                .starts_with("npm ci ")
        );
        let python = RepoProfile {
            language: Language::Python,
            ..Default::default()
        };
        assert!(install_command(&python, dir.path()).is_err());
    }

    #[test]
    fn gitignore_fallback_outside_git() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!node_modules_ignored(dir.path()).unwrap());
        std::fs::write(dir.path().join(".gitignore"), "dist\n/node_modules/\n").unwrap();
        assert!(node_modules_ignored(dir.path()).unwrap());
    }
}
