//! The install box's plan (its command and the folder it fills), and the
//! refusal when that folder would land in the commit.

use runner_process::tool::Tool;
use std::path::Path;

use runner_contract::{Language, PackageManager, RepoProfile};

/// The refusal's fixed start, the same in every version, so people (and tests) can search for it.
pub const NOT_IGNORED: &str = "add node_modules/ to .gitignore first";

/// The requirement files a Python install reads, in this order.
const REQUIREMENTS: &[&str] = &[
    "requirements.txt",
    "requirements-dev.txt",
    "requirements_dev.txt",
    "dev-requirements.txt",
    "requirements-test.txt",
    "test-requirements.txt",
];

/// What the install box does.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct InstallPlan {
    /// The shell command, with install scripts off and no lockfile added.
    pub command: String,
    /// The folder of the worktree it fills, which git must ignore.
    pub folder: &'static str,
    /// Environment the test box needs to use what was installed.
    pub test_env: Vec<String>,
}

/// How a repo's dependencies are installed, or why the sandbox cannot install them.
pub(crate) fn install_plan(profile: &RepoProfile, worktree: &Path) -> Result<InstallPlan, String> {
    match profile.language {
        Language::Node => node(profile, worktree),
        Language::Python => Ok(python(worktree)),
        other => Err(format!(
            "installing dependencies is supported for Node and Python repos, this one is {other:?}: \
             vendor the dependencies (a vendor/ folder), or run the tests with an image that has them"
        )),
    }
}

fn node(profile: &RepoProfile, worktree: &Path) -> Result<InstallPlan, String> {
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
    Ok(InstallPlan {
        command: command.to_owned(),
        folder: "node_modules",
        test_env: Vec::new(),
    })
}

/// A `.venv` that sees the image's packages (pytest), filled from the
/// requirement files with wheels only: building an sdist would run the
/// package's own setup code, Python's install script.
fn python(worktree: &Path) -> InstallPlan {
    let mut command = "python3 -m venv --system-site-packages .venv".to_owned();
    let files: Vec<&str> = REQUIREMENTS
        .iter()
        .copied()
        .filter(|f| worktree.join(f).is_file())
        .collect();
    if !files.is_empty() {
        command.push_str(
            " && .venv/bin/pip install --only-binary :all: --no-input --no-cache-dir --disable-pip-version-check",
        );
        for file in files {
            command.push_str(" -r ");
            command.push_str(file);
        }
    }
    let test_env = vec![
        "VIRTUAL_ENV=/work/.venv".to_owned(),
        "PATH=/work/.venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
            .to_owned(),
    ];
    InstallPlan {
        command,
        folder: ".venv",
        test_env,
    }
}

/// The refusal when `folder` is not ignored (the words a person needs: what to add to .gitignore).
pub(crate) fn not_ignored_message(folder: &str) -> String {
    format!(
        "add {folder}/ to .gitignore first: the sandbox installs into the worktree, \
         and whatever git does not ignore lands in the commit you approve"
    )
}

/// Whether git would ignore `folder/` in the worktree. Git itself answers
/// (nested and global ignores count); a folder that is not a git repo falls back
/// to the root `.gitignore`.
pub(crate) fn ignored(worktree: &Path, folder: &str) -> Result<bool, String> {
    let out = Tool::new("git")
        .arg("-C")
        .arg(worktree)
        .args(["check-ignore", "-q", "--"])
        .arg(format!("{folder}/"))
        .run();
    match out {
        Ok(o) if o.status.code() == Some(0) => Ok(true),
        Ok(o) if o.status.code() == Some(1) => Ok(false),
        Ok(o) if String::from_utf8_lossy(&o.stderr).contains("not a git repository") => {
            Ok(root_gitignore_has(worktree, folder))
        }
        Ok(o) => Err(format!(
            "git check-ignore failed in {}: {}",
            worktree.display(),
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(_) => Ok(root_gitignore_has(worktree, folder)),
    }
}

fn root_gitignore_has(worktree: &Path, folder: &str) -> bool {
    let text = std::fs::read_to_string(worktree.join(".gitignore")).unwrap_or_default();
    text.lines().map(str::trim).any(|line| {
        let line = line
            .strip_prefix("**/")
            .or_else(|| line.strip_prefix('/'))
            .unwrap_or(line);
        line.strip_suffix('/').unwrap_or(line) == folder
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node_profile(pm: PackageManager) -> RepoProfile {
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
            let plan = install_plan(&node_profile(pm), dir.path()).unwrap();
            assert!(plan.command.contains("--ignore-scripts"), "{plan:?}");
            assert!(plan.command.contains("lock"), "no lockfile added: {plan:?}");
            assert_eq!(plan.folder, "node_modules");
        }
        std::fs::write(dir.path().join("package-lock.json"), "{}").unwrap();
        let npm = install_plan(&node_profile(PackageManager::Npm), dir.path()).unwrap();
        assert!(npm.command.starts_with("npm ci "), "{npm:?}");
        let rust = RepoProfile {
            language: Language::Rust,
            ..Default::default()
        };
        assert!(install_plan(&rust, dir.path()).is_err());
    }

    #[test]
    fn python_installs_wheels_only_into_a_venv() {
        let dir = tempfile::tempdir().unwrap();
        let python = RepoProfile {
            language: Language::Python,
            needs_install: true,
            ..Default::default()
        };
        assert!(
            !install_plan(&python, dir.path())
                .unwrap()
                .command
                .contains("pip"),
            "nothing to install"
        );
        std::fs::write(dir.path().join("requirements.txt"), "pytest\n").unwrap();
        std::fs::write(dir.path().join("requirements-dev.txt"), "").unwrap();
        let plan = install_plan(&python, dir.path()).unwrap();
        assert!(
            plan.command.contains("--only-binary :all:"),
            "no sdist builds: {plan:?}"
        );
        assert!(
            plan.command
                .ends_with("-r requirements.txt -r requirements-dev.txt"),
            "{plan:?}"
        );
        assert_eq!(plan.folder, ".venv");
        assert!(
            plan.test_env
                .iter()
                .any(|e| e.starts_with("PATH=/work/.venv/bin:"))
        );
    }

    #[test]
    fn gitignore_fallback_outside_git() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!ignored(dir.path(), "node_modules").unwrap());
        std::fs::write(
            dir.path().join(".gitignore"),
            "dist\n/node_modules/\n.venv\n",
        )
        .unwrap();
        assert!(ignored(dir.path(), "node_modules").unwrap());
        assert!(ignored(dir.path(), ".venv").unwrap());
        assert!(!ignored(dir.path(), "dist2").unwrap());
        assert!(not_ignored_message("node_modules").starts_with(NOT_IGNORED));
    }
}
