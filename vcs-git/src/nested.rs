//! Git folders an agent made inside its worktree, taken out after each boxed turn.
//!
//! The box keeps the repository's git folders read-only, but the worktree is the agent's to
//! write, and git looks for repositories inside it: a `.git` folder (or a `.git` file naming a
//! folder, or a link) at a path the worktree's index holds as a submodule (a gitlink, mode
//! 160000) is entered by the person's next `git status`, `git diff` or `git commit` there,
//! which reads that folder's config and runs what `core.fsmonitor`, `core.hooksPath` or its
//! hooks name, as the person. Writing a gitlink needs no object (`git update-index
//! --cacheinfo 160000,<id>,sub`), and the worktree's own index is writable in the box; in a
//! repository whose base has submodules, a `.git` at a submodule's path is enough. A `.git`
//! anywhere else is read by git run in that folder.
//!
//! So after each turn (ARCHITECTURE.md, `vcs-git`): every `.git` below the worktree's top is
//! moved into the run's `quarantine/` (nothing of the agent's is lost; the person can look),
//! except a plain `.git` file naming a folder inside the worktree's own `modules/` (where git
//! keeps a linked worktree's submodules; read-only in the box, so never the agent's making);
//! and the index's gitlinks the base commit does not hold at that path are dropped. Approve
//! never commits either ([`crate::snapshot`]).

use std::path::{Path, PathBuf};

use gix::bstr::{BStr, ByteSlice};
use runner_contract::traits::vcs::NestedGit;
use runner_contract::{Result, WorktreeSpec};

use crate::{error, registry, repo};

/// What a `.git` is called once in the quarantine.
pub(crate) const QUARANTINED_NAME: &str = "dot-git";

/// Takes every `.git` the agent made below `spec`'s top out into `quarantine`, and drops the
/// index's gitlinks that the base commit does not have.
pub(crate) fn take_out(spec: &WorktreeSpec, quarantine: &Path) -> Result<NestedGit> {
    let main = repo::open_to_read(&spec.repo)?;
    let registration = registry::find(main.common_dir(), &spec.path)?.ok_or_else(|| {
        error::vcs(format!(
            "{} is not a worktree of {}: its git folders cannot be checked; reject the session",
            spec.path.display(),
            spec.repo.display()
        ))
    })?;
    let modules = registration.admin.join("modules").canonicalize().ok();
    let mut found = NestedGit::default();
    for (rela, path) in dot_gits(&spec.path, &mut found.failed) {
        if modules
            .as_deref()
            .is_some_and(|m| names_a_folder_inside(&path, m))
        {
            continue;
        }
        move_out(&path, &rela, quarantine, &mut found);
    }
    let base = repo::parse_commit(&main, &spec.base)?;
    drop_gitlinks(&main, base, &registration.admin.join("index"), &mut found)?;
    Ok(found)
}

/// Whether the last component of `path` is one git takes for a repository's folder: `.git`,
/// in any case (a file system that ignores case finds `.GIT` for `.git`).
pub(crate) fn is_dot_git(name: &[u8]) -> bool {
    name.eq_ignore_ascii_case(b".git")
}

/// Whether a path in the repository (`/`-separated) has a `.git` component: git refuses such
/// paths in its index and trees, and checking one out would write into a git folder.
pub(crate) fn has_dot_git(path: &BStr) -> bool {
    path.split_str("/").any(is_dot_git)
}

/// Every `.git` below `top` (not `top/.git`, the worktree's own), as its `/`-separated path
/// in the worktree and its path on disk. Links are never followed; a `.git` folder is not
/// entered (it moves whole). A folder that cannot be read is said in `unread` and the walk
/// goes on: the agent must not stop the check of the rest (and of the index) by making one.
fn dot_gits(top: &Path, unread: &mut Vec<String>) -> Vec<(String, PathBuf)> {
    let mut found = Vec::new();
    let mut folders = vec![(top.to_owned(), String::new())];
    let mut cannot_read = |folder: &Path, e: std::io::Error| {
        unread.push(format!(
            "the folder {} could not be read to look for a `.git` in it ({e})",
            folder.display()
        ));
    };
    while let Some((folder, rela)) = folders.pop() {
        let entries = match std::fs::read_dir(&folder) {
            Ok(entries) => entries,
            Err(e) => {
                cannot_read(&folder, e);
                continue;
            }
        };
        for entry in entries {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    cannot_read(&folder, e);
                    break;
                }
            };
            let name = entry.file_name();
            let name_text = name.to_string_lossy();
            let child_rela = if rela.is_empty() {
                name_text.into_owned()
            } else {
                format!("{rela}/{name_text}")
            };
            if is_dot_git(name.as_encoded_bytes()) {
                if !rela.is_empty() {
                    found.push((child_rela, entry.path()));
                }
                continue;
            }
            // The entry's own type (lstat): a link to a folder is not entered.
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => folders.push((entry.path(), child_rela)),
                Ok(_) => {}
                Err(e) => cannot_read(&entry.path(), e),
            }
        }
    }
    found.sort();
    found
}

/// Whether `dot_git` is a plain `.git` file of one `gitdir:` line naming a folder inside
/// `modules` (resolved through every link, so `..` or a link cannot lead out of it).
fn names_a_folder_inside(dot_git: &Path, modules: &Path) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(dot_git) else {
        return false;
    };
    if !meta.is_file() || meta.len() > 4096 {
        return false;
    }
    let Ok(text) = std::fs::read_to_string(dot_git) else {
        return false;
    };
    let Some(target) = text
        .strip_prefix("gitdir: ")
        .map(|t| t.trim_end_matches(['\n', '\r']))
        .filter(|t| !t.is_empty() && !t.contains('\n'))
    else {
        return false;
    };
    let target = match dot_git.parent() {
        Some(folder) => folder.join(target),
        None => PathBuf::from(target),
    };
    target
        .canonicalize()
        .is_ok_and(|real| real != modules && real.starts_with(modules))
}

/// Moves `path` (the `.git` at `rela` in the worktree) to the same folder under `quarantine`,
/// named `dot-git` there: a `.git` in the quarantine would be entered by a shell prompt that
/// runs `git status` in any folder the person goes to look at. When it cannot be moved there
/// (another disk), removes it: git must not find it in the worktree.
fn move_out(path: &Path, rela: &str, quarantine: &Path, found: &mut NestedGit) {
    let folder = rela.rsplit_once('/').map_or("", |(folder, _)| folder);
    let dest = free_name(&quarantine.join(folder).join(QUARANTINED_NAME));
    let moved = dest
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::rename(path, &dest));
    let why = match moved {
        Ok(()) => return found.moved.push((rela.to_owned(), dest)),
        Err(e) => e,
    };
    let removed = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => registry::remove_tree(path).map_err(|e| e.to_string()),
        Ok(_) => std::fs::remove_file(path).map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    match removed {
        Ok(()) => found.removed.push(rela.to_owned()),
        Err(e) => found.failed.push(format!(
            "{rela} could not be moved to {} ({why}) nor removed ({e})",
            dest.display()
        )),
    }
}

/// `path`, or `path.1`, `path.2` … when taken (a turn taken over by another supervisor).
fn free_name(path: &Path) -> PathBuf {
    let mut candidate = path.to_owned();
    let mut n = 0;
    while std::fs::symlink_metadata(&candidate).is_ok() {
        n += 1;
        let mut name = path.as_os_str().to_owned();
        name.push(format!(".{n}"));
        candidate = PathBuf::from(name);
    }
    candidate
}

/// Drops from the index at `index` every gitlink whose path is not a gitlink in `base`'s
/// tree (a submodule the base has may point at another commit: that is a change like any
/// other).
fn drop_gitlinks(
    main: &gix::Repository,
    base: gix::ObjectId,
    index: &Path,
    found: &mut NestedGit,
) -> Result<()> {
    if !index.is_file() {
        return Ok(());
    }
    let mut file = gix::index::File::at(index, main.object_hash(), false, Default::default())
        .map_err(|e| error::gix(format!("cannot read the index {}", index.display()), &e))?;
    let tree = main
        .find_commit(base)
        .and_then(|c| c.tree())
        .map_err(|e| error::gix(format!("cannot read commit {base}"), &e))?;
    let mut dropped = Vec::new();
    for entry in file.entries() {
        if entry.mode != gix::index::entry::Mode::COMMIT {
            continue;
        }
        let path = entry.path(&file);
        let in_base = tree
            .lookup_entry(path.split_str("/"))
            .map_err(|e| error::gix(format!("cannot read the tree of {base}"), &e))?
            .is_some_and(|e| e.mode().is_commit());
        if !in_base {
            dropped.push(path.to_owned());
        }
    }
    if dropped.is_empty() {
        return Ok(());
    }
    file.remove_entries(|_, path, entry| {
        entry.mode == gix::index::entry::Mode::COMMIT && dropped.iter().any(|d| d == path)
    });
    // Written as git would, taking `index.lock`; the tree cache is invalidated on write. The
    // permissions: the umask's (the default), as for any file codehands writes.
    match file.write(Default::default(), Default::default()) {
        Ok(()) => found
            .gitlinks
            .extend(dropped.iter().map(|p| p.to_str_lossy().into_owned())),
        Err(e) => found.failed.push(format!(
            "the submodule entries {} could not be dropped from the index {}: {}",
            dropped
                .iter()
                .map(|p| p.to_str_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(", "),
            index.display(),
            error::chain(&e)
        )),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_git_in_any_case_is_a_git_folder_and_nothing_else_is() {
        for name in [".git", ".GIT", ".Git"] {
            assert!(is_dot_git(name.as_bytes()), "{name}");
        }
        for name in ["git", ".git2", ".gitignore", "a.git", ".git/"] {
            assert!(!is_dot_git(name.as_bytes()), "{name}");
        }
    }

    #[test]
    fn a_path_through_a_git_folder_is_found_at_any_depth() {
        for path in [
            ".git",
            "sub/.git",
            "a/.GIT/config",
            "a/b/.git/hooks/pre-commit",
        ] {
            assert!(has_dot_git(path.into()), "{path}");
        }
        for path in ["src/git.rs", ".gitmodules", "a/.gitignore", "x.git/y"] {
            assert!(!has_dot_git(path.into()), "{path}");
        }
    }

    #[test]
    fn the_walk_skips_the_tops_own_follows_no_link_and_says_what_it_cannot_read() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path();
        std::fs::create_dir_all(top.join("a/.git")).unwrap();
        std::fs::create_dir_all(top.join("b/c")).unwrap();
        std::fs::write(top.join(".git"), "gitdir: elsewhere\n").unwrap();
        std::os::unix::fs::symlink(top.join("a"), top.join("b/c/link")).unwrap();
        let mut unread = Vec::new();
        let found = dot_gits(top, &mut unread);
        assert_eq!(
            found,
            vec![("a/.git".to_owned(), top.join("a/.git"))],
            "the top's own .git is not one, and a link is not followed"
        );
        assert!(unread.is_empty(), "{unread:?}");
        // Permissions do not stop root (the tests run as root): a folder gone is the
        // refusal every user meets.
        let mut unread = Vec::new();
        assert!(dot_gits(&top.join("not-there"), &mut unread).is_empty());
        assert_eq!(unread.len(), 1, "{unread:?}");
    }

    #[test]
    fn a_taken_name_gets_a_number() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/dot-git");
        assert_eq!(free_name(&path), path);
        std::fs::create_dir_all(&path).unwrap();
        assert_eq!(free_name(&path), dir.path().join("sub/dot-git.1"));
    }

    #[test]
    fn only_a_plain_file_naming_a_folder_inside_modules_is_a_submodules_link() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let modules = root.join("admin/modules");
        std::fs::create_dir_all(modules.join("lib")).unwrap();
        std::fs::create_dir_all(root.join("wt/lib")).unwrap();
        std::fs::create_dir_all(root.join("evil")).unwrap();
        let dot_git = root.join("wt/lib/.git");
        let says = |text: &str| {
            std::fs::write(&dot_git, text).unwrap();
            names_a_folder_inside(&dot_git, &modules)
        };
        assert!(says(&format!(
            "gitdir: {}\n",
            modules.join("lib").display()
        )));
        assert!(says("gitdir: ../../admin/modules/lib\n"), "relative");
        assert!(!says(&format!("gitdir: {}\n", root.join("evil").display())));
        assert!(!says("gitdir: ../../admin/modules/lib/../../../evil\n"));
        assert!(!says(&format!("gitdir: {}\n", modules.display())));
        assert!(!says("gitdir: ../../admin/modules/missing\n"));
        assert!(!says("not a gitdir line\n"));
        std::fs::remove_file(&dot_git).unwrap();
        std::os::unix::fs::symlink(modules.join("lib"), &dot_git).unwrap();
        assert!(!names_a_folder_inside(&dot_git, &modules), "a link");
    }
}
