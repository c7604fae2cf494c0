//! A box's result: read whole and checked in memory, then applied to the worktree.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use crate::{Limits, TransferError};

/// What one path of a result is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryKind {
    /// A folder.
    Dir,
    /// A file with its bytes; `executable` when any execute bit was set.
    File {
        /// The content.
        data: Vec<u8>,
        /// Whether it is made executable.
        executable: bool,
    },
    /// A link, with a target that stays inside the tree.
    Symlink(PathBuf),
}

/// One path of a result, relative to the worktree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Relative, only normal components.
    pub path: PathBuf,
    /// What it is.
    pub kind: EntryKind,
}

/// A result that passed every check; only [`read_result`] makes one.
#[derive(Debug, Clone, Default)]
pub struct ResultTree {
    entries: BTreeMap<PathBuf, EntryKind>,
}

impl ResultTree {
    /// The entries, parents before children.
    pub fn entries(&self) -> impl Iterator<Item = Entry> + '_ {
        self.entries.iter().map(|(path, kind)| Entry {
            path: path.clone(),
            kind: kind.clone(),
        })
    }

    /// How many entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Reads the tar `bytes` (a box's tree; `strip` is the folder name the engine's archive API
/// puts in front of every path, when it does) and checks all of it: every path relative and
/// inside the tree (a top-level `.git` is left out: the box's history is not the run's), only
/// files, folders and links, no link leaving the tree or looping, nothing written through a
/// link, and the caps. The first failed check is the error; nothing is written either way.
pub fn read_result(
    bytes: &[u8],
    strip: Option<&str>,
    limits: &Limits,
) -> Result<ResultTree, TransferError> {
    let malformed = |e: std::io::Error| TransferError::Malformed(e.to_string());
    let mut archive = tar::Archive::new(bytes);
    let mut entries = BTreeMap::new();
    let mut total = 0u64;
    for entry in archive.entries().map_err(malformed)? {
        let mut entry = entry.map_err(malformed)?;
        let raw = entry.path().map_err(malformed)?.into_owned();
        let Some(path) = relative(&raw, strip)? else {
            continue;
        };
        if path.components().count() > limits.max_depth {
            return Err(TransferError::TooBig {
                what: "result's path depth",
                limit: limits.max_depth as u64,
            });
        }
        let kind = match entry.header().entry_type() {
            tar::EntryType::Directory => EntryKind::Dir,
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                let size = entry.header().size().map_err(malformed)?;
                total = total.saturating_add(size);
                if total > limits.max_bytes {
                    return Err(TransferError::TooBig {
                        what: "result's size",
                        limit: limits.max_bytes,
                    });
                }
                let mut data = Vec::with_capacity(size.min(1 << 20) as usize);
                entry.read_to_end(&mut data).map_err(malformed)?;
                let mode = entry.header().mode().unwrap_or(0o644);
                EntryKind::File {
                    data,
                    executable: mode & 0o111 != 0,
                }
            }
            tar::EntryType::Symlink => {
                let target = entry
                    .link_name()
                    .map_err(malformed)?
                    .ok_or_else(|| {
                        TransferError::Malformed(format!("{raw:?}: a link without a target"))
                    })?
                    .into_owned();
                EntryKind::Symlink(target)
            }
            other => {
                return Err(TransferError::Special {
                    path,
                    kind: format!("{other:?}"),
                });
            }
        };
        entries.insert(path, kind);
        if entries.len() > limits.max_entries {
            return Err(TransferError::TooBig {
                what: "result's entry count",
                limit: limits.max_entries as u64,
            });
        }
    }
    let tree = ResultTree { entries };
    check_links(&tree)?;
    Ok(tree)
}

/// `raw` relative to the worktree, `None` for the tree's own folder and what a box's
/// `.git` holds; an error for anything that would leave the tree.
fn relative(raw: &Path, strip: Option<&str>) -> Result<Option<PathBuf>, TransferError> {
    let mut out = PathBuf::new();
    let mut components = raw.components().peekable();
    while components.peek() == Some(&Component::CurDir) {
        components.next();
    }
    if let Some(prefix) = strip {
        match components.next() {
            Some(Component::Normal(first)) if first == prefix => {}
            _ => return Err(TransferError::OutsideTree(raw.to_owned())),
        }
    }
    for component in components {
        match component {
            Component::Normal(part) => {
                if part == ".git" {
                    if out.as_os_str().is_empty() {
                        return Ok(None);
                    }
                    // A repo inside the tree could carry hooks and config into the person's
                    // tools: nothing of the kind comes back.
                    return Err(TransferError::OutsideTree(raw.to_owned()));
                }
                out.push(part);
            }
            Component::CurDir => {}
            _ => return Err(TransferError::OutsideTree(raw.to_owned())),
        }
    }
    Ok((!out.as_os_str().is_empty()).then_some(out))
}

/// Every link resolves inside the tree without looping, and no entry sits below a link
/// (writing it would write wherever the link points).
fn check_links(tree: &ResultTree) -> Result<(), TransferError> {
    for (path, kind) in &tree.entries {
        for ancestor in path.ancestors().skip(1) {
            if let Some(EntryKind::Symlink(target)) = tree.entries.get(ancestor) {
                return Err(TransferError::BadLink {
                    path: ancestor.to_owned(),
                    target: target.clone(),
                    why: "has entries written through it",
                });
            }
        }
        if let EntryKind::Symlink(target) = kind {
            resolve(tree, path, target)?;
        }
    }
    Ok(())
}

/// Follows `link` → `target` through the tree's own links, lexically; errs when it leaves the
/// tree or comes back to a link it has passed.
fn resolve(tree: &ResultTree, link: &Path, target: &Path) -> Result<(), TransferError> {
    let bad = |why| TransferError::BadLink {
        path: link.to_owned(),
        target: target.to_owned(),
        why,
    };
    let mut seen = BTreeSet::from([link.to_owned()]);
    let mut here = link.parent().unwrap_or(Path::new("")).to_owned();
    let mut queue: VecDeque<Component<'_>> = VecDeque::new();
    push_front(&mut queue, target).ok_or_else(|| bad("leaves the tree"))?;
    while let Some(component) = queue.pop_front() {
        match component {
            Component::Normal(part) => here.push(part),
            Component::ParentDir => {
                if !here.pop() {
                    return Err(bad("leaves the tree"));
                }
                continue;
            }
            _ => continue,
        }
        if let Some(EntryKind::Symlink(inner)) = tree.entries.get(&here) {
            if !seen.insert(here.clone()) || seen.len() > 64 {
                return Err(bad("loops"));
            }
            here.pop();
            push_front(&mut queue, inner).ok_or_else(|| bad("leaves the tree"))?;
        }
    }
    Ok(())
}

/// Puts `path`'s components in front of `queue`; `None` for an absolute path.
fn push_front<'a>(queue: &mut VecDeque<Component<'a>>, path: &'a Path) -> Option<()> {
    if path.has_root() {
        return None;
    }
    for component in path.components().rev() {
        queue.push_front(component);
    }
    Some(())
}

/// Makes `worktree` hold exactly `tree` (its `.git` untouched): paths the result lacks are
/// removed, the others written. Nothing is followed: a link in the worktree is replaced, not
/// written through.
pub fn apply(tree: &ResultTree, worktree: &Path) -> Result<(), TransferError> {
    let mut existing = Vec::new();
    walk(worktree, worktree, &mut existing)?;
    // Deepest first, so a folder is empty when its turn comes.
    existing.sort_by_key(|(path, _)| std::cmp::Reverse(path.components().count()));
    for (relative, meta) in &existing {
        let keep = match tree.entries.get(relative) {
            Some(EntryKind::Dir) => meta.is_dir(),
            Some(EntryKind::File { .. }) => meta.is_file(),
            Some(EntryKind::Symlink(_)) | None => false,
        };
        if !keep {
            let path = worktree.join(relative);
            let removed = if meta.is_dir() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
            removed.map_err(|e| TransferError::io("cannot remove", &path, e))?;
        }
    }
    for (relative, kind) in &tree.entries {
        let path = worktree.join(relative);
        match kind {
            EntryKind::Dir => match std::fs::create_dir(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                    return Err(TransferError::io("cannot make the folder", &path, e));
                }
                _ => {}
            },
            EntryKind::File { data, executable } => write_file(&path, data, *executable)?,
            EntryKind::Symlink(target) => std::os::unix::fs::symlink(target, &path)
                .map_err(|e| TransferError::io("cannot make the link", &path, e))?,
        }
    }
    Ok(())
}

fn write_file(path: &Path, data: &[u8], executable: bool) -> Result<(), TransferError> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc_o_nofollow())
        .mode(0o644)
        .open(path)
        .map_err(|e| TransferError::io("cannot write", path, e))?;
    file.write_all(data)
        .map_err(|e| TransferError::io("cannot write", path, e))?;
    let mode = if executable { 0o755 } else { 0o644 };
    file.set_permissions(std::fs::Permissions::from_mode(mode))
        .map_err(|e| TransferError::io("cannot set the mode of", path, e))
}

/// `O_NOFOLLOW` on Linux (the only platform the box runs on); std has no constant for it.
fn libc_o_nofollow() -> i32 {
    0o400000
}

fn walk(
    root: &Path,
    dir: &Path,
    out: &mut Vec<(PathBuf, std::fs::Metadata)>,
) -> Result<(), TransferError> {
    for entry in std::fs::read_dir(dir).map_err(|e| TransferError::io("cannot read", dir, e))? {
        let entry = entry.map_err(|e| TransferError::io("cannot read", dir, e))?;
        let path = entry.path();
        let relative = path.strip_prefix(root).unwrap_or(&path).to_owned();
        if relative == Path::new(".git") {
            continue;
        }
        let meta = std::fs::symlink_metadata(&path)
            .map_err(|e| TransferError::io("cannot read", &path, e))?;
        if meta.is_dir() {
            walk(root, &path, out)?;
        }
        out.push((relative, meta));
    }
    Ok(())
}
