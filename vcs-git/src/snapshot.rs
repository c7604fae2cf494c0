//! The tree of a worktree's files as they are on disk: what `git add -A` would stage.
//!
//! Built from the base tree plus the changes gix's status reports, so only changed files are
//! read and hashed: unchanged files are recognised by the index's stat data.

use std::io::Read;
use std::path::Path;

use gix::bstr::{BStr, ByteSlice};
use gix::objs::tree::EntryKind;
use gix::status::index_worktree::Item as WorktreeItem;
use runner_core::Result;

use crate::error;

/// Writes the blobs and trees of everything not ignored in `repo`'s worktree into its object
/// store (in memory when the repo was opened with object memory) and returns the root tree.
pub(crate) fn worktree_tree(
    repo: &gix::Repository,
    base_tree: gix::ObjectId,
) -> Result<gix::ObjectId> {
    let workdir = repo
        .workdir()
        .ok_or_else(|| error::vcs("the worktree has no checkout folder"))?
        .to_owned();
    let items = repo
        .status(gix::progress::Discard)
        .and_then(|status| {
            status
                .head_tree(base_tree)
                .untracked_files(gix::status::UntrackedFiles::Files)
                .index_worktree_rewrites(None)
                .tree_index_track_renames(gix::status::tree_index::TrackRenames::Disabled)
                .index_worktree_submodules(None)
                .into_iter(Vec::new())
        })
        .map_err(|e| {
            error::gix(
                format!("cannot read the status of {}", workdir.display()),
                &e,
            )
        })?;

    let mut staged = Vec::new();
    let mut on_disk = Vec::new();
    for item in items {
        match item.map_err(|e| {
            error::gix(
                format!("cannot read the status of {}", workdir.display()),
                &e,
            )
        })? {
            gix::status::Item::TreeIndex(change) => staged.push(change),
            gix::status::Item::IndexWorktree(item) => on_disk.push(item),
        }
    }

    let mut editor = repo
        .edit_tree(base_tree)
        .map_err(|e| error::gix("cannot read the base tree", &e))?;
    // First what the index holds beyond base (the agent may have staged or committed), then
    // what the working files hold beyond the index: the later edit of a path wins.
    for change in &staged {
        apply_staged(&mut editor, change)?;
    }
    let mut files = FileReader::new(repo, &workdir)?;
    for item in &on_disk {
        apply_on_disk(&mut editor, &mut files, item)?;
    }
    editor
        .write()
        .map(|id| id.detach())
        .map_err(|e| error::gix("cannot write the worktree's tree", &e))
}

fn apply_staged(
    editor: &mut gix::object::tree::Editor<'_>,
    change: &gix::diff::index::Change,
) -> Result<()> {
    let edit_err = |e: gix::Error| error::gix("cannot build the worktree's tree", &e);
    let old = change.lhs_fields();
    let new = change.rhs_fields();
    if let Some((old_path, ..)) = old
        && new.is_none_or(|(new_path, ..)| new_path != old_path)
    {
        editor.remove(old_path).map_err(edit_err)?;
    }
    if let Some((path, _, mode, id)) = new {
        match mode.to_tree_entry_mode() {
            Some(mode) => {
                editor
                    .upsert(path, mode.kind(), id.to_owned())
                    .map_err(edit_err)?;
            }
            None => {
                editor.remove(path).map_err(edit_err)?;
            }
        }
    }
    Ok(())
}

fn apply_on_disk(
    editor: &mut gix::object::tree::Editor<'_>,
    files: &mut FileReader<'_>,
    item: &WorktreeItem,
) -> Result<()> {
    use gix::status::plumbing::index_as_worktree::{Change, EntryStatus};
    let edit_err = |e: gix::Error| error::gix("cannot build the worktree's tree", &e);
    match item {
        WorktreeItem::Modification {
            rela_path,
            status,
            entry,
            ..
        } => match status {
            EntryStatus::NeedsUpdate(_) => {}
            EntryStatus::Change(Change::Removed) => {
                editor.remove(rela_path.as_bstr()).map_err(edit_err)?;
            }
            EntryStatus::Change(Change::SubmoduleModification(_)) => {}
            _ if entry.mode == gix::index::entry::Mode::COMMIT => {}
            _ => match files.read(rela_path.as_bstr())? {
                Some((kind, id)) => {
                    editor
                        .upsert(rela_path.as_bstr(), kind, id)
                        .map_err(edit_err)?;
                }
                None => {
                    editor.remove(rela_path.as_bstr()).map_err(edit_err)?;
                }
            },
        },
        WorktreeItem::DirectoryContents { entry, .. } => {
            use gix::dir::entry::{Kind, Status};
            let is_file = matches!(entry.disk_kind, Some(Kind::File | Kind::Symlink));
            if entry.status == Status::Untracked
                && is_file
                && let Some((kind, id)) = files.read(entry.rela_path.as_bstr())?
            {
                editor
                    .upsert(entry.rela_path.as_bstr(), kind, id)
                    .map_err(edit_err)?;
            }
        }
        WorktreeItem::Rewrite { .. } => {
            // Rewrites are off for the status; renames are found later, between trees.
        }
    }
    Ok(())
}

/// Reads working files the way `git add` does: through the repo's filters, as blobs.
struct FileReader<'r> {
    repo: &'r gix::Repository,
    workdir: &'r Path,
    pipeline: gix::filter::Pipeline<'r>,
    index: gix::worktree::IndexPersistedOrInMemory,
    trust_exec_bit: bool,
    buf: Vec<u8>,
}

impl<'r> FileReader<'r> {
    fn new(repo: &'r gix::Repository, workdir: &'r Path) -> Result<Self> {
        let (pipeline, index) = repo
            .filter_pipeline(None)
            .map_err(|e| error::gix("cannot set up the repo's file filters", &e))?;
        let trust_exec_bit = repo
            .config_snapshot()
            .boolean("core.fileMode")
            .unwrap_or(true);
        Ok(Self {
            repo,
            workdir,
            pipeline,
            index,
            trust_exec_bit,
            buf: Vec::new(),
        })
    }

    /// The tree entry kind and blob id of the file at `rela_path`, or `None` when it is gone.
    fn read(&mut self, rela_path: &BStr) -> Result<Option<(EntryKind, gix::ObjectId)>> {
        let rela = gix::path::from_bstr(rela_path).map_err(|_| {
            error::vcs(format!(
                "the path {rela_path} cannot be read on this system"
            ))
        })?;
        let path = self.workdir.join(&rela);
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(error::io("cannot read", &path, &e)),
        };
        let write_err = |e: gix::Error| error::gix(format!("cannot store {}", path.display()), &e);
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path)
                .map_err(|e| error::io("cannot read the link", &path, &e))?;
            let bytes = gix::path::into_bstr(target)
                .map_err(|e| error::gix(format!("cannot read the link {}", path.display()), &e))?
                .into_owned();
            let id = self.repo.write_blob(bytes.as_slice()).map_err(write_err)?;
            return Ok(Some((EntryKind::Link, id.detach())));
        }
        if !meta.is_file() {
            return Ok(None);
        }
        // With core.fileMode off the disk's bits mean nothing: keep what the index says.
        let executable = if self.trust_exec_bit {
            is_executable(&meta)
        } else {
            self.index_says_executable(rela_path)
        };
        let kind = if executable {
            EntryKind::BlobExecutable
        } else {
            EntryKind::Blob
        };
        let file = std::fs::File::open(&path).map_err(|e| error::io("cannot read", &path, &e))?;
        let outcome = self
            .pipeline
            .convert_to_git(file, &rela, &self.index)
            .map_err(|e| error::gix(format!("cannot filter {}", path.display()), &e))?;
        self.buf.clear();
        use gix::filter::plumbing::pipeline::convert::ToGitOutcome;
        match outcome {
            ToGitOutcome::Unchanged(mut file) => {
                file.read_to_end(&mut self.buf)
                    .map_err(|e| error::io("cannot read", &path, &e))?;
            }
            ToGitOutcome::Process(mut stream) => {
                stream
                    .read_to_end(&mut self.buf)
                    .map_err(|e| error::io("cannot filter", &path, &e))?;
            }
            ToGitOutcome::Buffer(bytes) => self.buf.extend_from_slice(bytes),
        }
        let id = self.repo.write_blob(&self.buf).map_err(write_err)?;
        Ok(Some((kind, id.detach())))
    }

    fn index_says_executable(&self, rela_path: &BStr) -> bool {
        self.index
            .entry_by_path(rela_path)
            .is_some_and(|e| e.mode == gix::index::entry::Mode::FILE_EXECUTABLE)
    }
}

#[cfg(unix)]
fn is_executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_meta: &std::fs::Metadata) -> bool {
    false
}
