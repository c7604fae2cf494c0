//! The base a remote box starts from: the worktree's files as a tar.

use std::path::Path;

use crate::{Limits, TransferError};

/// The files, folders and links of `worktree` (its `.git` left out: the box gets no
/// history, and never the person's other branches) as a tar with paths relative to it.
/// Links are stored as links, never followed; the caps apply as they do to a result.
pub fn pack_tree(worktree: &Path, limits: &Limits) -> Result<Vec<u8>, TransferError> {
    let mut builder = tar::Builder::new(Vec::new());
    builder.follow_symlinks(false);
    let mut count = 0usize;
    let mut bytes = 0u64;
    let mut stack = vec![worktree.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .map_err(|e| TransferError::io("cannot read the folder", &dir, e))?
            .filter_map(|e| e.ok())
            .collect();
        // Sorted, so a tree packs to the same bytes every time.
        names.sort_by_key(|e| e.file_name());
        for entry in names {
            let path = entry.path();
            let relative = path.strip_prefix(worktree).unwrap_or(&path);
            if relative == Path::new(".git") {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path)
                .map_err(|e| TransferError::io("cannot read", &path, e))?;
            count += 1;
            if count > limits.max_entries {
                return Err(TransferError::TooBig {
                    what: "tree's entry count",
                    limit: limits.max_entries as u64,
                });
            }
            if meta.is_file() {
                bytes += meta.len();
                if bytes > limits.max_bytes {
                    return Err(TransferError::TooBig {
                        what: "tree's size",
                        limit: limits.max_bytes,
                    });
                }
            } else if meta.is_dir() {
                stack.push(path.clone());
            } else if !meta.file_type().is_symlink() {
                // Sockets and fifos in a worktree are the agent's leftovers, not source.
                continue;
            }
            builder
                .append_path_with_name(&path, relative)
                .map_err(|e| TransferError::io("cannot pack", &path, e))?;
        }
    }
    builder
        .into_inner()
        .map_err(|e| TransferError::io("cannot pack", worktree, e))
}
