//! Everything that changed in a worktree since base: a stat and a patch `git apply` takes.

use std::path::Path;

use gix::bstr::ByteSlice;
use gix::diff::tree_with_rewrites::Change;
use runner_core::{DiffResult, DiffStat, Error, FileStat, Result};

use crate::patch::{self, Side};
use crate::{error, repo, snapshot};

/// The diff of `worktree`'s files (untracked ones included, ignored ones not) against `base`.
/// Nothing is written to the repository: new blobs and trees stay in memory.
pub(crate) fn diff(worktree: &Path, base: &str) -> Result<DiffResult> {
    let repo = open_worktree(worktree, repo::open_to_read)?.with_object_memory();
    let base = repo::parse_commit(&repo, base)?;
    let base_tree = tree_of(&repo, base)?;
    let new_tree = snapshot::worktree_tree(&repo, base_tree)?;
    render(&repo, base_tree, new_tree)
}

/// Opens a worktree made by `create_worktree` with `open` (to read or to write).
pub(crate) fn open_worktree(
    worktree: &Path,
    open: fn(&Path) -> Result<gix::Repository>,
) -> Result<gix::Repository> {
    if !worktree.is_dir() {
        return Err(Error::not_found(format!(
            "the worktree {} does not exist: it was removed, so there is nothing to diff or \
             approve; reject the session to clean up",
            worktree.display()
        )));
    }
    open(worktree)
}

/// The tree of commit `id`.
pub(crate) fn tree_of(repo: &gix::Repository, id: gix::ObjectId) -> Result<gix::ObjectId> {
    repo.find_commit(id)
        .and_then(|c| c.tree_id().map(|t| t.detach()))
        .map_err(|e| error::gix(format!("cannot read commit {id}"), &e))
}

/// The stat and patch between two trees, with renames found as `git diff` finds them.
pub(crate) fn render(
    repo: &gix::Repository,
    old_tree: gix::ObjectId,
    new_tree: gix::ObjectId,
) -> Result<DiffResult> {
    if old_tree == new_tree {
        return Ok(DiffResult::default());
    }
    let find_tree = |id| {
        repo.find_tree(id)
            .map_err(|e| error::gix(format!("cannot read tree {id}"), &e))
    };
    let (old, new) = (find_tree(old_tree)?, find_tree(new_tree)?);
    let mut changes = repo
        .diff_tree_to_tree(&old, &new, None)
        .map_err(|e| error::gix("cannot compare the trees", &e))?;
    changes.retain(|c| !c.entry_mode().is_tree() && !source_mode(c).is_some_and(|m| m.is_tree()));
    changes.sort_by(|a, b| a.location().cmp(b.location()));

    let mut text = String::new();
    let mut files = Vec::with_capacity(changes.len());
    for change in &changes {
        files.push(render_one(repo, change, &mut text)?);
    }
    Ok(DiffResult {
        patch: text,
        stat: DiffStat::from_files(files),
    })
}

fn source_mode(change: &Change) -> Option<gix::objs::tree::EntryMode> {
    match change {
        Change::Modification {
            previous_entry_mode,
            ..
        } => Some(*previous_entry_mode),
        Change::Rewrite {
            source_entry_mode, ..
        } => Some(*source_entry_mode),
        _ => None,
    }
}

/// One side's bytes: the blob, or for a submodule the line git shows for it.
fn content(
    repo: &gix::Repository,
    mode: gix::objs::tree::EntryMode,
    id: gix::ObjectId,
) -> Result<Vec<u8>> {
    if mode.is_commit() {
        return Ok(format!("Subproject commit {id}\n").into_bytes());
    }
    repo.find_blob(id)
        .map(|b| b.detach().data)
        .map_err(|e| error::gix(format!("cannot read blob {id}"), &e))
}

fn render_one(repo: &gix::Repository, change: &Change, out: &mut String) -> Result<FileStat> {
    let path_of = |p: &gix::bstr::BStr| p.to_str_lossy().into_owned();
    let (old, new): (Option<(String, _, _)>, Option<(String, _, _)>) = match change {
        Change::Addition {
            location,
            entry_mode,
            id,
            ..
        } => (None, Some((path_of(location.as_bstr()), *entry_mode, *id))),
        Change::Deletion {
            location,
            entry_mode,
            id,
            ..
        } => (Some((path_of(location.as_bstr()), *entry_mode, *id)), None),
        Change::Modification {
            location,
            previous_entry_mode,
            previous_id,
            entry_mode,
            id,
        } => (
            Some((
                path_of(location.as_bstr()),
                *previous_entry_mode,
                *previous_id,
            )),
            Some((path_of(location.as_bstr()), *entry_mode, *id)),
        ),
        Change::Rewrite {
            source_location,
            source_entry_mode,
            source_id,
            location,
            entry_mode,
            id,
            copy,
            ..
        } => {
            let source = (
                path_of(source_location.as_bstr()),
                *source_entry_mode,
                *source_id,
            );
            let target = (path_of(location.as_bstr()), *entry_mode, *id);
            if *copy {
                // Copies are found only when the repo's config asks (`diff.renames=copies`);
                // written as an added file, the patch applies all the same.
                (None, Some(target))
            } else {
                (Some(source), Some(target))
            }
        }
    };
    let load =
        |(path, mode, id): (String, gix::objs::tree::EntryMode, gix::ObjectId)| -> Result<Loaded> {
            Ok(Loaded {
                data: content(repo, mode, id)?,
                path,
                mode: mode.value(),
                id,
            })
        };
    let old = old.map(load).transpose()?;
    let new = new.map(load).transpose()?;
    let (old_side, new_side) = (
        old.as_ref().map(Loaded::side),
        new.as_ref().map(Loaded::side),
    );
    let counts = match (&old_side, &new_side) {
        // Git writes a change of kind (file to symlink, say) as a deletion and an addition.
        (Some(o), Some(n)) if o.mode & 0o170000 != n.mode & 0o170000 => {
            let removed = patch::write_file(out, Some(o), None);
            let added = patch::write_file(out, None, Some(n));
            removed.zip(added).map(|((_, d), (i, _))| (i, d))
        }
        _ => patch::write_file(out, old_side.as_ref(), new_side.as_ref()),
    };

    let path = new
        .as_ref()
        .or(old.as_ref())
        .map(|s| s.path.clone())
        .unwrap_or_default();
    let old_path = match (&old, &new) {
        (Some(o), Some(n)) if o.path != n.path => Some(o.path.clone()),
        _ => None,
    };
    let (insertions, deletions) = counts.unwrap_or((0, 0));
    Ok(FileStat {
        path,
        old_path,
        insertions,
        deletions,
        binary: counts.is_none(),
    })
}

/// One side of a change with its bytes read.
struct Loaded {
    path: String,
    mode: u16,
    id: gix::ObjectId,
    data: Vec<u8>,
}

impl Loaded {
    fn side(&self) -> Side<'_> {
        Side {
            path: &self.path,
            mode: self.mode,
            id: self.id,
            data: &self.data,
        }
    }
}
