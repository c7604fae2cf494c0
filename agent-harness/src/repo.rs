//! The scenario's repo: its files in one commit on `main`.

use std::path::{Path, PathBuf};
use std::process::Stdio;

fn git(repo: &Path, args: &[&str]) -> Result<(), String> {
    let status = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=codehands",
            "-c",
            "user.email=codehands@example.invalid",
        ])
        .args(args)
        .current_dir(repo)
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("git {args:?}: {e}"))?;
    status
        .success()
        .then_some(())
        .ok_or_else(|| format!("git {args:?} failed: {status}"))
}

/// A git repo `root/repo` of `files`, one commit on `main`, returned canonical (agents
/// report their working folder resolved: macOS's /tmp is /private/tmp).
pub fn make_repo(root: &Path, files: &[(&str, &str)]) -> Result<PathBuf, String> {
    let repo = root.join("repo");
    for (file, text) in files {
        let target = repo.join(file);
        std::fs::create_dir_all(target.parent().expect("files sit in folders"))
            .and_then(|()| std::fs::write(&target, text))
            .map_err(|e| format!("writing {}: {e}", target.display()))?;
    }
    git(&repo, &["init", "-q", "-b", "main"])?;
    git(&repo, &["add", "-A"])?;
    git(&repo, &["commit", "-q", "-m", "fixture"])?;
    repo.canonicalize()
        .map_err(|e| format!("{}: {e}", repo.display()))
}
