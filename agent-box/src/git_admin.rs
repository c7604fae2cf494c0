//! The repository's git folders in a box: what the agent may write there, and what stays
//! read-only because git reads it as configuration or as a program.
//!
//! A linked worktree's git lives in two folders: the repository's common folder (`config`,
//! `hooks/`, `info/`, `objects/`, `refs/`, every other worktree's registration) and the
//! worktree's own `<common>/worktrees/<name>/` (its admin folder: `HEAD`, `index`, `logs/`,
//! per-worktree refs, the state of a merge or rebase under way). The box binds the common
//! folder read-only and the admin folder writable over it, so `git status`, `git diff` and
//! index updates work; over that, read-only again, everything of the admin folder git reads
//! as configuration or a program (gitrepository-layout(5), git-worktree(1) "CONFIGURATION
//! FILE", git-config(1) "FILES"; git's `path.c` names what of a worktree's folder is its own):
//!
//! - `config.worktree`: the worktree's config, read when the common config sets
//!   `extensions.worktreeConfig` (as `git sparse-checkout init` does): `core.fsmonitor`,
//!   `core.hooksPath`, filters, `core.sshCommand`… would run as the person at their next
//!   `git status` in that worktree;
//! - `info/`: its `sparse-checkout` is per worktree (the rest of `info/` is the common folder's);
//! - `modules/`: the git folders of the worktree's submodules, each with its own `config` and
//!   `hooks/`, which `git submodule update` in the worktree reuses when they are there;
//! - `gitdir` and `commondir`: the registration, so it cannot be pointed at another checkout
//!   or another repository (whose config git would read);
//! - the worktree's own `.git` file, outside the admin folder, for the same reason.
//!
//! A file that is not there cannot be bound over, and the agent could make it: so
//! [`git_dirs`] makes an empty `config.worktree` (an empty config says nothing) and empty
//! `info/` and `modules/` folders first. It runs before every box, so a worktree made by an older codehands
//! gets them too, which making them once when vcs-git adds the worktree would not give.
//!
//! What the box cannot keep from the agent, and what codehands does about it: a `locked` file
//! and any `HEAD` (git writes its lock files and `HEAD` in that folder, so it must stay
//! writable; vcs-git removes a session's worktree over a lock and never reads its HEAD).

use std::path::{Path, PathBuf};

use runner_contract::{Error, Result};

use crate::plan::GitDirs;

/// The files of the admin folder the box keeps read-only, and whether each is a folder.
pub const ADMIN_READ_ONLY: &[(&str, Kind)] = &[
    ("gitdir", Kind::File),
    ("commondir", Kind::File),
    ("config.worktree", Kind::File),
    ("info", Kind::Folder),
    ("modules", Kind::Folder),
];

/// What a read-only entry of the admin folder is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A plain file.
    File,
    /// A folder.
    Folder,
}

/// The plan's git folders for `worktree`: the real common and admin folders, and the files kept
/// read-only over them and over the worktree (made first when git has not made them yet).
/// Refuses a registration the agent of an earlier turn could have pointed elsewhere.
pub fn git_dirs(dirs: &runner_contract::GitDirs, worktree: &Path) -> Result<GitDirs> {
    let real = |p: &Path| {
        p.canonicalize()
            .map_err(|e| Error::io(format!("cannot find {}", p.display()), &e))
    };
    let common = real(&dirs.common)?;
    let admin = real(&dirs.admin)?;
    if admin.parent() != Some(common.join("worktrees").as_path()) {
        return Err(Error::invalid_input(format!(
            "{} is not a worktree's folder of the git folder {}: the box gives an agent only its \
             own worktree's",
            admin.display(),
            common.display()
        )));
    }
    let mut keep = Vec::new();
    for (name, kind) in ADMIN_READ_ONLY {
        let path = admin.join(name);
        make_if_missing(&path, *kind)?;
        check_kind(&path, *kind)?;
        keep.push(path);
    }
    let dot_git = worktree.join(".git");
    check_dot_git(&dot_git, &admin)?;
    keep.push(dot_git);
    Ok(GitDirs {
        common,
        admin,
        keep,
    })
}

/// Makes an empty `config.worktree`, `info/` or `modules/` that git has not made (`gitdir` and
/// `commondir` are always there in a registration, and never made here).
fn make_if_missing(path: &Path, kind: Kind) -> Result<()> {
    let made = match kind {
        Kind::File if path.ends_with("config.worktree") => std::fs::OpenOptions::new()
            .write(true)
            // Never through a link left at that name: `create_new` does not follow one.
            .create_new(true)
            .open(path)
            .map(drop),
        Kind::Folder => std::fs::create_dir(path),
        Kind::File => return Ok(()),
    };
    match made {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(Error::io(
            format!(
                "cannot make {} before the box starts (the box keeps it read-only)",
                path.display()
            ),
            &e,
        )),
    }
}

/// Refuses an entry that is not what git makes there: a link (bound read-only, it would
/// show the box whatever it points at, and the planner would have made nothing) or the
/// wrong kind.
fn check_kind(path: &Path, kind: Kind) -> Result<()> {
    let meta = std::fs::symlink_metadata(path)
        .map_err(|e| Error::io(format!("cannot read {}", path.display()), &e))?;
    let right = match kind {
        Kind::File => meta.is_file(),
        Kind::Folder => meta.is_dir(),
    };
    if right {
        return Ok(());
    }
    Err(Error::invalid_input(format!(
        "{} is not a plain {} any more: git reads it as the worktree's configuration, so the \
         session's git folder was changed; reject the session (or, if you made it, put back \
         what git made there)",
        path.display(),
        match kind {
            Kind::File => "file",
            Kind::Folder => "folder",
        }
    )))
}

/// Refuses a worktree whose `.git` file is not a plain file pointing at `admin` (an agent of
/// an earlier turn, before the box kept it read-only, could have pointed it at a git folder
/// of its own; vcs-git refuses the same at diff and approve).
fn check_dot_git(dot_git: &Path, admin: &Path) -> Result<()> {
    let bad = |what: &str| {
        Error::invalid_input(format!(
            "the worktree's .git file {} {what}: it should point at {}, the git folder codehands \
             made; reject the session",
            dot_git.display(),
            admin.display()
        ))
    };
    check_kind(dot_git, Kind::File)?;
    let text = std::fs::read(dot_git)
        .map_err(|e| Error::io(format!("cannot read {}", dot_git.display()), &e))?;
    let target = std::str::from_utf8(&text)
        .ok()
        .and_then(|t| t.strip_prefix("gitdir: "))
        .map(|t| t.trim_end_matches(['\n', '\r']))
        .filter(|t| !t.is_empty() && !t.contains('\n'))
        .ok_or_else(|| bad("does not hold one `gitdir:` line"))?;
    let target = PathBuf::from(target);
    let target = match dot_git.parent() {
        Some(worktree) if target.is_relative() => worktree.join(target),
        _ => target,
    };
    if target.canonicalize().ok().as_deref() == Some(admin) {
        Ok(())
    } else {
        Err(bad(&format!("points at {}", target.display())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A common folder with one registration, as git lays it out, and its worktree.
    struct Layout {
        _dir: tempfile::TempDir,
        common: PathBuf,
        admin: PathBuf,
        worktree: PathBuf,
    }

    fn layout() -> Layout {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let common = root.join("repo/.git");
        let admin = common.join("worktrees/wt");
        let worktree = root.join("wt");
        std::fs::create_dir_all(&admin).unwrap();
        std::fs::create_dir_all(&worktree).unwrap();
        std::fs::write(
            admin.join("gitdir"),
            format!("{}/.git\n", worktree.display()),
        )
        .unwrap();
        std::fs::write(admin.join("commondir"), "../..\n").unwrap();
        std::fs::write(
            worktree.join(".git"),
            format!("gitdir: {}\n", admin.display()),
        )
        .unwrap();
        Layout {
            _dir: dir,
            common,
            admin,
            worktree,
        }
    }

    fn plan(l: &Layout) -> Result<GitDirs> {
        let dirs = runner_contract::GitDirs {
            common: l.common.clone(),
            admin: l.admin.clone(),
        };
        git_dirs(&dirs, &l.worktree)
    }

    #[test]
    fn every_configuration_file_is_kept_and_the_missing_ones_made_empty() {
        let l = layout();
        let dirs = plan(&l).unwrap();
        let names: Vec<PathBuf> = ["gitdir", "commondir", "config.worktree", "info", "modules"]
            .iter()
            .map(|n| l.admin.join(n))
            .chain([l.worktree.join(".git")])
            .collect();
        assert_eq!(dirs.keep, names);
        assert_eq!(std::fs::read(l.admin.join("config.worktree")).unwrap(), b"");
        for folder in ["info", "modules"] {
            assert_eq!(std::fs::read_dir(l.admin.join(folder)).unwrap().count(), 0);
        }
    }

    #[test]
    fn what_is_there_is_kept_as_it_is() {
        let l = layout();
        std::fs::write(
            l.admin.join("config.worktree"),
            "[core]\n\tsparseCheckout = true\n",
        )
        .unwrap();
        std::fs::create_dir(l.admin.join("info")).unwrap();
        std::fs::write(l.admin.join("info/sparse-checkout"), "/src/\n").unwrap();
        plan(&l).unwrap();
        assert_eq!(
            std::fs::read_to_string(l.admin.join("config.worktree")).unwrap(),
            "[core]\n\tsparseCheckout = true\n"
        );
        assert_eq!(
            std::fs::read_to_string(l.admin.join("info/sparse-checkout")).unwrap(),
            "/src/\n"
        );
    }

    #[test]
    fn a_link_in_place_of_a_configuration_file_is_refused_and_nothing_made_through_it() {
        let l = layout();
        let elsewhere = l.worktree.join("planted");
        std::os::unix::fs::symlink(&elsewhere, l.admin.join("config.worktree")).unwrap();
        let err = plan(&l).unwrap_err();
        assert!(err.to_string().contains("reject the session"), "{err}");
        assert!(
            !elsewhere.exists(),
            "nothing was made where the link points"
        );
    }

    #[test]
    fn a_file_in_place_of_info_is_refused() {
        let l = layout();
        std::fs::write(l.admin.join("info"), "").unwrap();
        assert!(plan(&l).is_err());
    }

    #[test]
    fn a_dot_git_pointing_elsewhere_is_refused() {
        let l = layout();
        let other = l.worktree.join("evil-git");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(
            l.worktree.join(".git"),
            format!("gitdir: {}\n", other.display()),
        )
        .unwrap();
        let err = plan(&l).unwrap_err();
        assert!(err.to_string().contains("points at"), "{err}");
        std::fs::write(
            l.worktree.join(".git"),
            "gitdir: ../repo/.git/worktrees/wt\n",
        )
        .unwrap();
        plan(&l).expect("a relative path to the right folder is fine");
    }

    #[test]
    fn another_repositorys_folder_is_refused() {
        let l = layout();
        let dirs = runner_contract::GitDirs {
            common: l.common.clone(),
            admin: l.common.join("worktrees"),
        };
        assert!(git_dirs(&dirs, &l.worktree).is_err());
    }
}
