//! Everything that changed in a worktree since base: a stat and a patch `git apply` takes.

use gix::bstr::ByteSlice;
use gix::diff::tree_with_rewrites::Change;
use runner_contract::{DiffResult, DiffStat, FileStat, Result, WorktreeSpec};

use crate::patch::{self, Side};
use crate::snapshot::Large;
use crate::{error, repo, session, snapshot};

/// The diff of the session worktree's files (untracked ones included, ignored ones not)
/// against its base. Nothing is written to the repository: new blobs and trees stay in memory,
/// and files over `large_limit` bytes are hashed from a stream and shown as too large.
pub(crate) fn diff(spec: &WorktreeSpec, large_limit: u64) -> Result<DiffResult> {
    let opened = session::open(spec, repo::open_to_read)?;
    let repo = opened.wt.with_object_memory();
    let base = repo::parse_commit(&repo, &spec.base)?;
    let base_tree = tree_of(&repo, base)?;
    let mut large = Large::new(large_limit, false);
    let new_tree = snapshot::worktree_tree(&repo, base_tree, &mut large)?;
    render(&repo, base_tree, new_tree, &large)
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
    large: &Large,
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
        files.push(render_one(repo, change, large, &mut text)?);
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

/// One side's bytes: the blob, or for a submodule the line git shows for it; for a blob over
/// the size limit, only its size (it is never loaded).
fn content(
    repo: &gix::Repository,
    mode: gix::objs::tree::EntryMode,
    id: gix::ObjectId,
    large: &Large,
) -> Result<(Vec<u8>, Option<u64>)> {
    if mode.is_commit() {
        return Ok((format!("Subproject commit {id}\n").into_bytes(), None));
    }
    let size = match large.blobs.get(&id) {
        Some(size) => *size,
        None => repo
            .find_header(id)
            .map(|h| h.size())
            .map_err(|e| error::gix(format!("cannot read blob {id}"), &e))?,
    };
    if size > large.limit {
        return Ok((Vec::new(), Some(size)));
    }
    repo.find_blob(id)
        .map(|b| (b.detach().data, None))
        .map_err(|e| error::gix(format!("cannot read blob {id}"), &e))
}

fn render_one(
    repo: &gix::Repository,
    change: &Change,
    large: &Large,
    out: &mut String,
) -> Result<FileStat> {
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
            let (data, too_large) = content(repo, mode, id, large)?;
            Ok(Loaded {
                data,
                too_large,
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
    let counts = patch::write_change(out, old_side.as_ref(), new_side.as_ref());

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
    let too_large = old.iter().chain(new.iter()).any(|s| s.too_large.is_some());
    Ok(FileStat {
        path,
        old_path,
        insertions,
        deletions,
        binary: counts.is_none(),
        too_large,
    })
}

/// One side of a change with its bytes read.
struct Loaded {
    path: String,
    mode: u16,
    id: gix::ObjectId,
    data: Vec<u8>,
    too_large: Option<u64>,
}

impl Loaded {
    fn side(&self) -> Side<'_> {
        Side {
            path: &self.path,
            mode: self.mode,
            id: self.id,
            data: &self.data,
            too_large: self.too_large,
        }
    }
}
