//! The worktree registrations under `<common dir>/worktrees/`, read as plain files.
//!
//! gix's own listing fails as a whole on one registration whose `gitdir` file is still empty,
//! which is what another process's worktree looks like while gix makes it: reading them here
//! lets a half-made one be skipped instead. Making and sweeping registrations happens under
//! one lock per repository ([`AddLock`]), so a registration seen half-made while that lock is
//! held belongs to a process that died.

use std::fs::File;
use std::path::{Path, PathBuf};

use runner_contract::Result;

use crate::error;

/// One `<common dir>/worktrees/<name>` folder.
#[derive(Debug, Clone)]
pub(crate) struct Registration {
    /// The registration's own git folder, `<common dir>/worktrees/<name>`.
    pub admin: PathBuf,
    /// The checkout its `gitdir` file names, when that file is complete.
    pub checkout: Option<PathBuf>,
    /// Why it is locked, when a `locked` file is there.
    pub locked: Option<String>,
}

impl Registration {
    /// Whether this is a registration gix was still making (or died making).
    pub fn is_half_made(&self) -> bool {
        self.checkout.is_none() || self.locked.as_deref() == Some("initializing")
    }
}

/// Every registration of the repository whose common folder is `common`, sorted by folder.
pub(crate) fn all(common: &Path) -> Result<Vec<Registration>> {
    let dir = common.join("worktrees");
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(error::io("cannot read", &dir, &e)),
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let admin = entry.path();
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        found.push(Registration {
            checkout: checkout_of(&admin),
            locked: std::fs::read_to_string(admin.join("locked"))
                .ok()
                .map(|r| r.trim().to_owned()),
            admin,
        });
    }
    found.sort_by(|a, b| a.admin.cmp(&b.admin));
    Ok(found)
}

/// The complete registration whose checkout is `worktree`, if any.
pub(crate) fn find(common: &Path, worktree: &Path) -> Result<Option<Registration>> {
    let wanted = comparable(worktree);
    Ok(all(common)?.into_iter().find(|r| {
        r.checkout
            .as_deref()
            .is_some_and(|c| c.file_name() == wanted.file_name() && comparable(c) == wanted)
    }))
}

/// The checkout named by `admin/gitdir` (a path to `<checkout>/.git`), when it is whole.
fn checkout_of(admin: &Path) -> Option<PathBuf> {
    let text = std::fs::read(admin.join("gitdir")).ok()?;
    let text = std::str::from_utf8(&text).ok()?;
    // A whole file ends with the newline gix and git write last.
    let line = text.strip_suffix('\n')?.trim_end_matches('\r');
    if line.is_empty() || line.contains('\n') {
        return None;
    }
    let dot_git = admin.join(line);
    if dot_git.file_name()? != ".git" {
        return None;
    }
    dot_git.parent().map(Path::to_owned)
}

/// Removes a registration: its checkout folder (when `with_checkout`), then its git folder, in
/// the order git uses, so a crash in between leaves a registration whose folder is gone, which
/// [`crate::worktree::prune`] forgets. Parts already gone are fine.
pub(crate) fn remove(reg: &Registration, with_checkout: bool) -> Result<()> {
    if with_checkout && let Some(checkout) = &reg.checkout {
        remove_tree(checkout)?;
    }
    remove_tree(&reg.admin)
}

/// `remove_dir_all` that accepts a folder already gone, and makes folders the agent made
/// read-only writable again so their files can go. A big checkout's subfolders go first, in
/// parallel ([`remove_subfolders_in_parallel`]): deleting 20,000 files one by one was
/// slower than `git worktree remove`.
pub(crate) fn remove_tree(path: &Path) -> Result<()> {
    remove_subfolders_in_parallel(path);
    match std::fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(first) => {
            make_writable(path);
            match std::fs::remove_dir_all(path) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(_) => Err(error::io("cannot remove", path, &first)),
            }
        }
    }
}

/// How many threads delete a checkout's subfolders at once (the disk, not the CPU, is the
/// limit: more did not help on a 2-core machine).
const REMOVERS: usize = 4;

/// Deletes the subfolders of `path` (and, when it has few, theirs) with [`REMOVERS`]
/// threads; what is left, and every error, is for the `remove_dir_all` that follows.
///
/// The worktree is hostile ground: every folder is opened without following a link
/// (`O_NOFOLLOW`), and each subfolder is named through its opened parent
/// (`/proc/self/fd/N/name`), so a folder the agent swaps for a link meanwhile is never
/// entered; `remove_dir_all` itself removes a link and never follows one.
#[cfg(target_os = "linux")]
fn remove_subfolders_in_parallel(path: &Path) {
    use std::os::fd::AsRawFd;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let Some(top) = open_folder(path) else {
        return;
    };
    let mut parents = vec![top];
    let mut work: Vec<(usize, std::ffi::OsString)> = subfolders(&parents[0])
        .into_iter()
        .map(|name| (0, name))
        .collect();
    // A checkout with a few big folders (`src/`, `tests/`): one level further down.
    if work.len() < 2 * REMOVERS {
        let mut deeper = Vec::new();
        for (_, name) in &work {
            let Some(folder) = open_folder(&fd_path(&parents[0]).join(name)) else {
                continue;
            };
            let names = subfolders(&folder);
            parents.push(folder);
            deeper.extend(names.into_iter().map(|n| (parents.len() - 1, n)));
        }
        work = deeper;
    }
    if work.len() < 2 {
        return;
    }
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..REMOVERS {
            scope.spawn(|| {
                while let Some((parent, name)) = work.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let _ = std::fs::remove_dir_all(fd_path(&parents[*parent]).join(name));
                }
            });
        }
    });

    fn fd_path(folder: &File) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", folder.as_raw_fd()))
    }
}

#[cfg(not(target_os = "linux"))]
fn remove_subfolders_in_parallel(_path: &Path) {}

/// `path` opened as a folder, never through a link.
#[cfg(target_os = "linux")]
fn open_folder(path: &Path) -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .open(path)
        .ok()
}

/// The names of the folders (not links) in an opened folder.
#[cfg(target_os = "linux")]
fn subfolders(folder: &File) -> Vec<std::ffi::OsString> {
    use std::os::fd::AsRawFd;
    let Ok(entries) = std::fs::read_dir(format!("/proc/self/fd/{}", folder.as_raw_fd())) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name())
        .collect()
}

#[cfg(unix)]
fn make_writable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if !meta.is_dir() {
        return;
    }
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700));
    if let Ok(entries) = std::fs::read_dir(path) {
        for entry in entries.flatten() {
            make_writable(&entry.path());
        }
    }
}

#[cfg(not(unix))]
fn make_writable(_path: &Path) {}

/// The lock that serialises making and sweeping worktree registrations of one repository
/// across processes: `<common dir>/codehands-worktrees.lock`, held with `flock`, so a process
/// that dies lets go of it.
pub(crate) struct AddLock {
    _file: File,
}

impl AddLock {
    /// Waits for the lock of the repository whose common folder is `common`.
    pub fn acquire(common: &Path) -> Result<Self> {
        let path = common.join("codehands-worktrees.lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| error::io("cannot open the worktree lock", &path, &e))?;
        file.lock()
            .map_err(|e| error::io("cannot take the worktree lock", &path, &e))?;
        Ok(Self { _file: file })
    }
}

/// Removes the registrations a process died making. Call with the [`AddLock`] held: then no
/// registration is being made by anyone else using codehands.
pub(crate) fn sweep_half_made(common: &Path) -> Result<()> {
    for reg in all(common)? {
        if reg.is_half_made() {
            // Only the registration goes: its folder may not be ours to remove (a person's own
            // `git worktree add` that died); codehands' recover removes the folders it owns.
            remove(&reg, false)?;
        }
    }
    Ok(())
}

/// `path` with its longest existing prefix canonicalized, so spellings of one folder compare equal.
pub(crate) fn comparable(path: &Path) -> PathBuf {
    let mut tail = Vec::new();
    let mut head = path;
    loop {
        if let Ok(real) = std::fs::canonicalize(head) {
            let mut out = real;
            for part in tail.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (head.parent(), head.file_name()) {
            (Some(parent), Some(name)) => {
                tail.push(name.to_owned());
                head = parent;
            }
            _ => return path.to_owned(),
        }
    }
}
