//! One file of the person's checkout as its HEAD commit holds it: how the facade reads a
//! repository's own settings, which the agent's worktree can never change.

use std::path::Path;

use runner_contract::{Error, Result};

use crate::{error, repo};

/// The bytes of `path` (a `/`-separated path from the top of the repo) in the commit HEAD
/// names in the checkout at `repo`; `None` when HEAD has no commit yet or holds no such
/// file. A file larger than `max` bytes, or a folder or link at that path, is refused with
/// its name: settings are a few lines, and a link would let the file name another.
pub fn file_at_head(repo_path: &Path, path: &str, max: u64) -> Result<Option<Vec<u8>>> {
    let repo = repo::open_to_read(repo_path)?;
    let Ok(commit) = repo.head_commit() else {
        return Ok(None);
    };
    let tree = commit
        .tree()
        .map_err(|e| error::gix("cannot read the HEAD commit's tree", &e))?;
    let Some(entry) = tree
        .lookup_entry_by_path(path)
        .map_err(|e| error::gix(format!("cannot look up {path} at HEAD"), &e))?
    else {
        return Ok(None);
    };
    let committed = || format!("{path} (as committed at HEAD in {})", repo_path.display());
    if !entry.mode().is_blob() {
        return Err(Error::invalid_input(format!(
            "{} is not a plain file: make it one, or remove it",
            committed()
        )));
    }
    let header = repo
        .find_header(entry.object_id())
        .map_err(|e| error::gix(format!("cannot read {path} at HEAD"), &e))?;
    if header.size() > max {
        return Err(Error::invalid_input(format!(
            "{} is {} bytes, more than the {max} a settings file may hold: shorten it",
            committed(),
            header.size()
        )));
    }
    let blob = repo
        .find_blob(entry.object_id())
        .map_err(|e| error::gix(format!("cannot read {path} at HEAD"), &e))?;
    Ok(Some(blob.data.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    }

    #[test]
    fn the_committed_file_not_the_working_copy() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path();
        git(repo, &["init", "-q", "-b", "main"]);
        assert_eq!(
            file_at_head(repo, "s.toml", 100).unwrap(),
            None,
            "no commit yet"
        );
        std::fs::write(repo.join("s.toml"), "committed\n").unwrap();
        git(repo, &["add", "."]);
        git(repo, &["commit", "-q", "-m", "one"]);
        std::fs::write(repo.join("s.toml"), "changed in the checkout\n").unwrap();
        assert_eq!(
            file_at_head(repo, "s.toml", 100).unwrap().as_deref(),
            Some(b"committed\n".as_slice())
        );
        assert_eq!(file_at_head(repo, "missing.toml", 100).unwrap(), None);
    }

    #[test]
    fn a_link_a_folder_or_a_large_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path();
        git(repo, &["init", "-q", "-b", "main"]);
        std::fs::create_dir(repo.join("folder")).unwrap();
        std::fs::write(repo.join("folder/x"), "x").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", repo.join("link.toml")).unwrap();
        std::fs::write(repo.join("big.toml"), "x".repeat(200)).unwrap();
        git(repo, &["add", "."]);
        git(repo, &["commit", "-q", "-m", "one"]);
        for (path, words) in [
            ("link.toml", "not a plain file"),
            ("folder", "not a plain file"),
            ("big.toml", "200 bytes"),
        ] {
            let err = file_at_head(repo, path, 100).unwrap_err().to_string();
            assert!(err.contains(words), "{path}: {err}");
        }
    }
}
