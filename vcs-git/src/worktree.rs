//! Making, removing, listing and pruning this tool's worktrees.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use gix::refs::transaction::{Change, PreviousValue, RefEdit, RefLog};
use runner_contract::{Error, Result, ToolWorktree, WorktreeSpec};

use crate::registry::{self, comparable};
use crate::{branch, error, repo};

/// Makes the worktree of `spec` on a new branch; on any error nothing new is left behind.
pub(crate) fn create(spec: &WorktreeSpec) -> Result<()> {
    let repo = repo::open_to_write(&spec.repo)?;
    repo::head_commit(&repo, &spec.repo)?;
    let base = repo::parse_commit(&repo, &spec.base)?;
    let name = branch::full_name(&spec.branch)?;
    let path = absolute(&spec.path, "worktree path")?;
    refuse_inside_repo(&repo, &path)?;

    if branch::tip(&repo, &spec.branch)?.is_some() {
        return Err(error::vcs(format!(
            "branch {} already exists in {}, a leftover of an earlier run with this session id: \
             run `codehands recover`, or delete it with `git branch -D {}` if you do not need it",
            spec.branch,
            spec.repo.display(),
            spec.branch
        )));
    }
    // One worktree made at a time per repository: gix's own making reads every other
    // registration and fails on one that is half made.
    let _lock = registry::AddLock::acquire(repo.common_dir())?;
    registry::sweep_half_made(repo.common_dir())?;
    if let Some(registered) = registry::find(repo.common_dir(), &path)? {
        clear_stale_or_refuse(&registered, &path)?;
    }
    refuse_occupied(&path)?;

    let made_dirs = create_parents(&path)?;
    let result = add_on_new_branch(&repo, &path, name, base, &spec.branch);
    if result.is_err() {
        remove_made_dirs(&made_dirs);
    }
    result
}

/// Creates the branch, then the worktree on it; takes the branch back if the worktree fails.
fn add_on_new_branch(
    repo: &gix::Repository,
    path: &Path,
    name: gix::refs::FullName,
    base: gix::ObjectId,
    branch: &str,
) -> Result<()> {
    repo.reference(
        name.clone(),
        base,
        PreviousValue::MustNotExist,
        format!("branch: Created from {base}"),
    )
    .map_err(|e| {
        if error::is_lock_held(&e) {
            error::locked(format!(
                "cannot create branch {branch}: another git process holds its lock \
                 (a .lock file under refs/heads); wait for it, or delete the stale .lock file \
                 if no git is running ({})",
                error::chain(&e)
            ))
        } else {
            error::gix(format!("cannot create branch {branch}"), &e)
        }
    })?;

    let interrupt = AtomicBool::new(false);
    // Checked out detached, then attached to the branch: `Head::Attached` first asks every
    // registered worktree which branch it has checked out, opening each one as a whole
    // repository, so a repo with many kept sessions made every start slower. The branch
    // was made just now (`MustNotExist`), so no other worktree can have it.
    let added = repo
        .add_worktree(
            path,
            gix::worktree::add::Head::Detached(base),
            gix::progress::Discard,
            &interrupt,
        )
        .map_err(|e| {
            let hint = if error::has_io_kind(&e, std::io::ErrorKind::PermissionDenied) {
                ": the folder is not writable; make it writable or set CODEHANDS_HOME elsewhere"
            } else {
                ""
            };
            let said = error::gix(
                format!("cannot make the worktree at {}", path.display()),
                &e,
            );
            // The kind stays: a full disk is named as such by the runner.
            Error::new(said.kind(), format!("{}{hint}", said.message()))
        })
        .and_then(|(worktree, _)| attach_head(&worktree, &name, base, branch));
    if added.is_err() {
        // gix rolled back its own files on a failed add; a made worktree and the branch are ours.
        if let Ok(Some(registered)) = registry::find(repo.common_dir(), path) {
            let _ = registry::remove(&registered, true);
        }
        let _ = repo.edit_reference(RefEdit {
            change: Change::Delete {
                expected: PreviousValue::MustExistAndMatch(gix::refs::Target::Object(base)),
                log: RefLog::AndReference,
            },
            name,
            deref: false,
        });
    }
    added
}

/// Points the new worktree's HEAD at `name`, which holds `base`, as `git checkout` would.
fn attach_head(
    worktree: &gix::Repository,
    name: &gix::refs::FullName,
    base: gix::ObjectId,
    branch: &str,
) -> Result<()> {
    let head = gix::refs::FullName::try_from("HEAD")
        .map_err(|e| error::vcs(format!("HEAD is not a valid reference name: {e}")))?;
    worktree
        .edit_reference(repo::logged_update(
            head,
            base,
            gix::refs::Target::Symbolic(name.clone()),
            format!("checkout: moving from {base} to {branch}"),
        ))
        .map(drop)
        .map_err(|e| {
            error::gix(
                format!("cannot put the new worktree on branch {branch}"),
                &e,
            )
        })
}

/// Removes `worktree` even with changes in it, and even locked; keeps its branch. One
/// already gone is fine.
///
/// A lock (`git worktree lock`, a `locked` file in the worktree's git folder) does not stop
/// it: codehands removes only its own sessions' worktrees, once the person decided the
/// session, and the agent in the box can write that file (its git folder is writable there:
/// ARCHITECTURE.md, "agent-box"), so honouring it would let the agent leave approve or reject
/// stuck. [`prune`] still keeps a locked entry, as git does.
pub(crate) fn remove(repo_path: &Path, worktree: &Path) -> Result<()> {
    let repo = repo::open_to_read(repo_path)?;
    let worktree = absolute(worktree, "worktree path")?;
    let Some(registered) = registry::find(repo.common_dir(), &worktree)? else {
        if worktree.exists() {
            return Err(Error::invalid_input(format!(
                "{} is not a worktree of {}: it was not made by codehands for this repo, so it is left alone",
                worktree.display(),
                repo_path.display()
            )));
        }
        return Ok(());
    };
    registry::remove(&registered, true)
}

/// The repo's worktrees whose folders are under `root`, with their branches. Paths are spelled
/// under `root` as the caller gave it, even where git recorded the resolved (symlink-free) path.
/// Half-made registrations (another process is making them) are left out.
pub(crate) fn list(repo_path: &Path, root: &Path) -> Result<Vec<ToolWorktree>> {
    let repo = repo::open_to_read(repo_path)?;
    let root = absolute(root, "worktree root")?;
    let real_root = comparable(&root);
    let mut out = Vec::new();
    for registered in registry::all(repo.common_dir())? {
        if registered.is_half_made() {
            continue;
        }
        let Some(base) = &registered.checkout else {
            continue;
        };
        let Ok(inside) = comparable(base)
            .strip_prefix(&real_root)
            .map(Path::to_owned)
        else {
            continue;
        };
        out.push(ToolWorktree {
            branch: head_branch(&registered.admin),
            path: root.join(inside),
        });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// Forgets worktree entries whose folders are gone, like `git worktree prune` (locked entries
/// stay), and the registrations a process died making.
pub(crate) fn prune(repo_path: &Path) -> Result<()> {
    let repo = repo::open_to_read(repo_path)?;
    let common = repo.common_dir();
    let _lock = registry::AddLock::acquire(common)?;
    registry::sweep_half_made(common)?;
    for registered in registry::all(common)? {
        if registered.locked.is_some() {
            continue;
        }
        let gone = registered
            .checkout
            .as_ref()
            .is_none_or(|c| !c.join(".git").exists());
        if gone {
            registry::remove_tree(&registered.admin)?;
        }
    }
    Ok(())
}

/// A registration for `path` whose checkout is gone (no folder, or an empty one) blocks a new
/// worktree there: forget it, as `git worktree prune` would. One with a checkout is a
/// leftover: refuse it.
fn clear_stale_or_refuse(registered: &registry::Registration, path: &Path) -> Result<()> {
    let empty = std::fs::read_dir(path).is_ok_and(|mut d| d.next().is_none());
    if empty {
        std::fs::remove_dir(path).map_err(|e| error::io("cannot clear", path, &e))?;
    }
    if !path.exists() && registered.locked.is_none() {
        return registry::remove_tree(&registered.admin);
    }
    Err(error::vcs(format!(
        "a worktree is already registered at {}, a leftover of an earlier run: run \
         `codehands recover`, or `git worktree remove --force {}` if you do not need it",
        path.display(),
        path.display()
    )))
}

fn refuse_occupied(path: &Path) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Err(_) => Ok(()),
        Ok(meta) if meta.is_dir() => {
            let empty = std::fs::read_dir(path)
                .map_err(|e| error::io("cannot read", path, &e))?
                .next()
                .is_none();
            if empty {
                Ok(())
            } else {
                Err(error::vcs(format!(
                    "{} already exists and is not empty, a leftover of an earlier run: \
                     run `codehands recover`, or remove the folder if you do not need it",
                    path.display()
                )))
            }
        }
        Ok(_) => Err(error::vcs(format!(
            "{} already exists and is a file: move it away, or set CODEHANDS_HOME to another folder",
            path.display()
        ))),
    }
}

/// Worktrees never nest: refuse a path inside the checkout or the .git folder.
fn refuse_inside_repo(repo: &gix::Repository, path: &Path) -> Result<()> {
    let path = comparable(path);
    let top = repo::top_folder(repo)?;
    let common = comparable(repo.common_dir());
    if path.starts_with(&top) || path.starts_with(&common) {
        return Err(Error::invalid_input(format!(
            "the worktree path {} is inside the repo {}: worktrees go outside it, under \
             $CODEHANDS_HOME/worktrees",
            path.display(),
            top.display()
        )));
    }
    Ok(())
}

/// Creates the missing parents of `path`, returning those it made, deepest last.
fn create_parents(path: &Path) -> Result<Vec<PathBuf>> {
    let mut missing = Vec::new();
    let mut cursor = path.parent();
    while let Some(dir) = cursor {
        if dir.exists() {
            break;
        }
        missing.push(dir.to_owned());
        cursor = dir.parent();
    }
    missing.reverse();
    let mut made = Vec::new();
    for dir in missing {
        match std::fs::create_dir(&dir) {
            Ok(()) => made.push(dir),
            // Another run made it a moment ago: it is there, which is all we need.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => {}
            Err(e) => {
                remove_made_dirs(&made);
                return Err(error::io("cannot create the worktree folder", &dir, &e));
            }
        }
    }
    Ok(made)
}

fn remove_made_dirs(made: &[PathBuf]) {
    for dir in made.iter().rev() {
        // Only empty folders go: anything another process put there stays.
        let _ = std::fs::remove_dir(dir);
    }
}

fn absolute(path: &Path, what: &str) -> Result<PathBuf> {
    if !path.is_absolute() {
        return Err(Error::invalid_input(format!(
            "the {what} {} is relative: pass an absolute path",
            path.display()
        )));
    }
    Ok(path.to_owned())
}

/// The branch a worktree's HEAD file names, if it is on one.
fn head_branch(git_dir: &Path) -> Option<String> {
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    head.trim()
        .strip_prefix("ref: refs/heads/")
        .map(str::to_owned)
}
