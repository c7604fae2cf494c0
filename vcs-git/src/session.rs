//! Opening a session's worktree without letting the worktree choose anything.
//!
//! Everything in the worktree was written by the agent, its `.git` file included. So the
//! worktree is opened through the registration codehands made (`<common dir>/worktrees/<name>`,
//! found by the path in the session record), the `.git` file is only checked against it, and
//! the branch is the one in the session record, never the worktree's HEAD. The agent can
//! write that git folder (the box leaves it writable so git works there): a HEAD it deleted
//! is put back, any other it left is never read.

use std::path::{Path, PathBuf};

use runner_contract::{Error, Result, WorktreeSpec};

use crate::registry::{self, comparable};
use crate::{error, repo};

/// A session's worktree, opened through the git folder codehands made for it.
pub(crate) struct SessionWorktree {
    /// The person's repository.
    pub main: gix::Repository,
    /// The worktree, with its git folder the registration's and its files at the recorded path.
    pub wt: gix::Repository,
}

/// Opens the worktree of `spec` for reading. `open_main` opens the person's repository (to
/// read, or with a committer for ref edits).
pub(crate) fn open(
    spec: &WorktreeSpec,
    open_main: fn(&Path) -> Result<gix::Repository>,
) -> Result<SessionWorktree> {
    let path = &spec.path;
    if !path.is_absolute() {
        return Err(Error::invalid_input(format!(
            "the worktree path {} is relative: pass an absolute path",
            path.display()
        )));
    }
    if !path.is_dir() {
        return Err(Error::not_found(format!(
            "the worktree {} does not exist: it was removed, so there is nothing to diff or \
             approve; reject the session to clean up",
            path.display()
        )));
    }
    let main = open_main(&spec.repo)?;
    let common = main.common_dir().to_owned();
    if comparable(path) == repo::top_folder(&main)? {
        return Err(Error::invalid_input(format!(
            "{} is the repo's own checkout, not a codehands worktree: codehands never commits there",
            path.display()
        )));
    }
    let Some(registration) = registry::find(&common, path)? else {
        return Err(Error::invalid_input(format!(
            "{} is not a worktree of {}: pass the worktree codehands made for this repo \
             (if it was, its registration under {} is gone: reject the session)",
            path.display(),
            spec.repo.display(),
            common.join("worktrees").display()
        )));
    };
    check_dot_git(path, &registration.admin)?;
    put_back_head(&registration.admin, &spec.branch)?;

    // Opening the registration's folder itself: gix takes the checkout from its `gitdir` file
    // and never reads the worktree's `.git` file.
    let wt = gix::open_opts(
        &registration.admin,
        gix::open::Options::default().open_path_as_is(true),
    )
    .map_err(|e| {
        error::gix(
            format!("cannot open the worktree {}", registration.admin.display()),
            &e,
        )
    })?;
    let same_checkout = wt
        .workdir()
        .is_some_and(|w| comparable(w) == comparable(path));
    let same_repo = comparable(wt.common_dir()) == comparable(&common);
    if !same_checkout || !same_repo {
        return Err(error::vcs(format!(
            "the registration {} does not describe the worktree {} of {}: reject the session",
            registration.admin.display(),
            path.display(),
            spec.repo.display()
        )));
    }
    Ok(SessionWorktree { main, wt })
}

/// Makes `admin/HEAD` a plain file again, naming the session's branch, when it is not one (the
/// agent deleted it, or put a folder or a link there: its git folder is writable in the box).
/// gix opens no git folder without a HEAD, and nothing codehands does reads what HEAD says,
/// so any plain file is left as it is: another branch, a detached commit, even garbage.
fn put_back_head(admin: &Path, branch: &str) -> Result<()> {
    let head = admin.join("HEAD");
    if std::fs::symlink_metadata(&head).is_ok_and(|m| m.is_file()) {
        return Ok(());
    }
    let made = admin.join("HEAD.codehands");
    remove_any(&made)?;
    // `create_new` never follows a link someone put at that name meanwhile.
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&made)
        .and_then(|mut file| {
            std::io::Write::write_all(&mut file, format!("ref: refs/heads/{branch}\n").as_bytes())
        })
        .map_err(|e| error::io("cannot write", &made, &e))?;
    remove_any(&head)?;
    std::fs::rename(&made, &head).map_err(|e| error::io("cannot put back", &head, &e))
}

/// Removes a file, link or folder (never what a link points at); one not there is fine.
fn remove_any(path: &Path) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Err(_) => Ok(()),
        Ok(meta) if meta.is_dir() => registry::remove_tree(path),
        Ok(_) => std::fs::remove_file(path).map_err(|e| error::io("cannot remove", path, &e)),
    }
}

/// Refuses a worktree whose `.git` file no longer points at `admin`, the folder codehands made.
fn check_dot_git(worktree: &Path, admin: &Path) -> Result<()> {
    let dot_git = worktree.join(".git");
    let found = match std::fs::symlink_metadata(&dot_git) {
        Err(_) => Err("it is gone".to_owned()),
        Ok(meta) if !meta.is_file() => Err("it is not a plain file any more".to_owned()),
        Ok(meta) if meta.len() > 4096 => Err("it is far too long".to_owned()),
        Ok(_) => match std::fs::read(&dot_git) {
            Err(e) => Err(format!("it cannot be read ({e})")),
            Ok(bytes) => points_at(&bytes, worktree, admin),
        },
    };
    found.map_err(|what| {
        error::vcs(format!(
            "the worktree's .git file {} was changed: it should point at {}, the git folder \
             codehands made, but {what}. codehands will not read or commit through it. Reject \
             the session, or if you changed it yourself, restore it with \
             `printf 'gitdir: {}\\n' > {}` and try again",
            dot_git.display(),
            admin.display(),
            admin.display(),
            dot_git.display()
        ))
    })
}

fn points_at(bytes: &[u8], worktree: &Path, admin: &Path) -> std::result::Result<(), String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "it is not text".to_owned())?;
    let target = text
        .strip_prefix("gitdir: ")
        .map(|t| t.trim_end_matches(['\n', '\r']))
        .filter(|t| !t.is_empty() && !t.contains('\n'))
        .ok_or_else(|| "it does not hold one `gitdir:` line".to_owned())?;
    let target = PathBuf::from(target);
    let target = if target.is_absolute() {
        target
    } else {
        worktree.join(target)
    };
    if comparable(&target) == comparable(admin) {
        Ok(())
    } else {
        Err(format!("it points at {}", target.display()))
    }
}
