//! The tree of a worktree's files as they are on disk: what `git add -A` would stage.
//!
//! Built from the base tree plus the changes gix's status reports, so only changed files are
//! read and hashed: unchanged files are recognised by the index's stat data.

use std::io::Read;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use gix::bstr::{BStr, ByteSlice};
use gix::objs::tree::EntryKind;
use gix::status::index_worktree::Item as WorktreeItem;
use runner_contract::Result;

use crate::{error, nested};

/// Writes the blobs and trees of everything not ignored in `repo`'s worktree into its object
/// store (in memory when the repo was opened with object memory) and returns the root tree.
pub(crate) fn worktree_tree(
    repo: &gix::Repository,
    base_tree: gix::ObjectId,
    large: &mut Large,
) -> Result<gix::ObjectId> {
    let workdir = repo
        .workdir()
        .ok_or_else(|| error::vcs("the worktree has no checkout folder"))?
        .to_owned();
    let index = repo.index_or_empty().map_err(|e| {
        error::gix(
            format!("cannot read the index of {}", workdir.display()),
            &e,
        )
    })?;
    let status_err = |e: gix::Error| {
        error::gix(
            format!("cannot read the status of {}", workdir.display()),
            &e,
        )
    };

    // What the index holds beyond base (the agent may have staged or committed).
    let mut staged = Vec::new();
    repo.tree_index_status(
        &base_tree,
        &index,
        None,
        gix::status::tree_index::TrackRenames::Disabled,
        |change, _, _| {
            staged.push(change.into_owned());
            Ok(std::ops::ControlFlow::Continue(()))
        },
    )
    .map_err(status_err)?;

    // What the working files hold beyond the index. The comparison never reads a file through
    // gix's filter pipeline (which would run the filters that `.gitattributes` and the config
    // name): a file whose stat data changed counts as changed here, and is read as bytes below.
    let dirwalk = repo
        .dirwalk_options()
        .map_err(status_err)?
        .emit_untracked(gix::dir::walk::EmissionMode::Matching);
    let mut recorder = gix::status::plumbing::index_as_worktree_with_renames::Recorder::default();
    repo.index_worktree_status(
        &index,
        None::<&BStr>,
        &mut recorder,
        ChangedUnlessStatSays,
        NoSubmodules,
        &mut gix::progress::Discard,
        &AtomicBool::new(false),
        gix::status::index_worktree::Options {
            dirwalk_options: Some(dirwalk),
            ..Default::default()
        },
    )
    .map_err(status_err)?;
    let on_disk: Vec<WorktreeItem> = recorder.records.into_iter().map(Into::into).collect();

    let mut editor = repo
        .edit_tree(base_tree)
        .map_err(|e| error::gix("cannot read the base tree", &e))?;
    // First what the index holds beyond base (the agent may have staged or committed), then
    // what the working files hold beyond the index: the later edit of a path wins.
    let base = repo
        .find_tree(base_tree)
        .map_err(|e| error::gix("cannot read the base tree", &e))?;
    for change in &staged {
        if !is_agents_git(&base, change)? {
            apply_staged(&mut editor, change)?;
        }
    }
    let mut files = FileReader::new(repo, &workdir, &index, large);
    for item in &on_disk {
        apply_on_disk(&mut editor, &mut files, item)?;
    }
    editor
        .write()
        .map(|id| id.detach())
        .map_err(|e| error::gix("cannot write the worktree's tree", &e))
}

/// Whether the index's `change` puts a git folder of the agent's into the tree, which is never
/// taken (`nested.rs`): a path with a `.git` component (git refuses one, but the index is the
/// agent's to write as bytes), or a gitlink where the base has none (a submodule the agent
/// made up; it writes no object, and checking it out would have git enter the agent's
/// `.git`). The path keeps what the base has there.
fn is_agents_git(base: &gix::Tree<'_>, change: &gix::diff::index::Change) -> Result<bool> {
    let Some((path, _, mode, _)) = change.rhs_fields() else {
        return Ok(false);
    };
    if nested::has_dot_git(path) {
        return Ok(true);
    }
    if !mode.to_tree_entry_mode().is_some_and(|m| m.is_commit()) {
        return Ok(false);
    }
    let in_base = base
        .lookup_entry(path.split_str("/"))
        .map_err(|e| error::gix("cannot read the base tree", &e))?
        .is_some_and(|e| e.mode().is_commit());
    Ok(!in_base)
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
            _ if nested::has_dot_git(rela_path.as_bstr()) => {}
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
                && !nested::has_dot_git(entry.rela_path.as_bstr())
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

/// Reads working files as bytes, as blobs: no filter, no attribute and no config of the
/// worktree changes what is read, and nothing is run. A file over the size limit is never held
/// in memory whole: its id is hashed from a stream, and it is streamed into the object store
/// only when the snapshot is kept (approve).
struct FileReader<'r> {
    repo: &'r gix::Repository,
    workdir: &'r Path,
    index: &'r gix::index::State,
    trust_exec_bit: bool,
    large: &'r mut Large,
    buf: Vec<u8>,
}

impl<'r> FileReader<'r> {
    fn new(
        repo: &'r gix::Repository,
        workdir: &'r Path,
        index: &'r gix::index::State,
        large: &'r mut Large,
    ) -> Self {
        let trust_exec_bit = repo
            .config_snapshot()
            .boolean("core.fileMode")
            .unwrap_or(true);
        Self {
            repo,
            workdir,
            index,
            trust_exec_bit,
            large,
            buf: Vec::new(),
        }
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
        // Opened without following a symlink put there since the stat above.
        let mut file = open_no_follow(&path).map_err(|e| error::io("cannot read", &path, &e))?;
        let size = file
            .metadata()
            .map_err(|e| error::io("cannot read", &path, &e))?
            .len();
        if size > self.large.limit {
            let id = self.large.store(self.repo, &mut file, size, &path)?;
            return Ok(Some((kind, id)));
        }
        self.buf.clear();
        file.read_to_end(&mut self.buf)
            .map_err(|e| error::io("cannot read", &path, &e))?;
        let id = self.repo.write_blob(&self.buf).map_err(write_err)?;
        Ok(Some((kind, id.detach())))
    }

    fn index_says_executable(&self, rela_path: &BStr) -> bool {
        self.index
            .entry_by_path(rela_path)
            .is_some_and(|e| e.mode == gix::index::entry::Mode::FILE_EXECUTABLE)
    }
}

/// Files over the size limit: their ids and sizes, and whether they are streamed into the
/// repository's object store (approve) or only hashed (diff).
pub(crate) struct Large {
    /// Files of more bytes than this are large.
    pub limit: u64,
    /// Stream large files into the object store, rather than only hashing them.
    pub keep: bool,
    /// The blobs of large files, with their sizes.
    pub blobs: std::collections::HashMap<gix::ObjectId, u64>,
}

impl Large {
    /// Large files hashed only (a diff), or kept (`keep`, approve).
    pub fn new(limit: u64, keep: bool) -> Self {
        Self {
            limit,
            keep,
            blobs: Default::default(),
        }
    }

    fn store(
        &mut self,
        repo: &gix::Repository,
        file: &mut std::fs::File,
        size: u64,
        path: &Path,
    ) -> Result<gix::ObjectId> {
        let mut reader = std::io::Read::take(file, size);
        let id = if self.keep {
            use gix::objs::Write;
            let objects = repo.common_dir().join("objects");
            gix::odb::loose::Store::at(objects, repo.object_hash()).write_stream(
                gix::object::Kind::Blob,
                size,
                &mut reader,
            )
        } else {
            gix::objs::compute_stream_hash(
                repo.object_hash(),
                gix::object::Kind::Blob,
                &mut reader,
                size,
                &mut gix::progress::Discard,
                &AtomicBool::new(false),
            )
            .and_then(|id| {
                // Trees are only written over objects that exist: the diff's in-memory store
                // gets a small stand-in under the real id. It is never shown (the size says
                // "too large") and never leaves memory.
                use gix::objs::Write;
                let stand_in = format!("codehands: a large file of {size} bytes, {id}\n");
                repo.objects.write_buf_with_known_id(
                    gix::object::Kind::Blob,
                    stand_in.as_bytes(),
                    id,
                )
            })
        }
        .map_err(|e| error::gix(format!("cannot store {}", path.display()), &e))?;
        self.blobs.insert(id, size);
        Ok(id)
    }
}

#[cfg(unix)]
fn open_no_follow(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

#[cfg(not(unix))]
fn open_no_follow(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::File::open(path)
}

/// A comparison that never reads a file: a file whose stat data changed counts as changed,
/// and the snapshot reads it as bytes (a changed file whose bytes are the same gives the
/// same blob, so nothing is lost).
#[derive(Clone, Copy)]
struct ChangedUnlessStatSays;

impl gix::status::plumbing::index_as_worktree::traits::CompareBlobs for ChangedUnlessStatSays {
    type Output = ();

    fn compare_blobs<'a, 'b>(
        &mut self,
        _entry: &gix::index::Entry,
        _worktree_blob_size: u64,
        _data: impl gix::status::plumbing::index_as_worktree::traits::ReadData<'a>,
        _buf: &mut Vec<u8>,
    ) -> std::result::Result<Option<()>, gix::Error> {
        Ok(Some(()))
    }
}

/// Submodules are left as they are: their commits are not the agent's change.
#[derive(Clone, Copy)]
struct NoSubmodules;

impl gix::status::plumbing::index_as_worktree::traits::SubmoduleStatus for NoSubmodules {
    type Output = gix::submodule::Status;

    fn status(
        &mut self,
        _entry: &gix::index::Entry,
        _rela_path: &BStr,
    ) -> std::result::Result<Option<Self::Output>, gix::Error> {
        Ok(None)
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
