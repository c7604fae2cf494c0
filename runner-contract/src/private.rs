//! Files and folders under a private root (`$CODEHANDS_HOME`, or a store's own folder):
//! folders 0700, files 0600 whatever the umask, and never reached through a symbolic link.
//!
//! The home holds transcripts (everything the agent printed), notes and records: other
//! users must not read them, and a link planted under the home (by a pre-created folder
//! or a careless script) must not redirect a write to the person's files or a read of
//! them into the agent's prompt. So every folder below the root is made, or checked,
//! one component at a time without following links; files are opened with `O_NOFOLLOW`
//! and replaced by an atomic rename (which replaces a link rather than following it).
//! The root itself may be a link the person set up; it is made private too.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind as IoKind, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use crate::error::{Error, ErrorKind, Result};

/// The mode of every folder under a private root.
pub const DIR_MODE: u32 = 0o700;
/// The mode of every file under a private root.
pub const FILE_MODE: u32 = 0o600;

/// A folder whose whole tree is private to the user running codehands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrivateRoot {
    root: PathBuf,
}

impl PrivateRoot {
    /// A private tree at `root` (nothing is made until it is used).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The root folder.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// Makes `dir` (the root or a folder under it) and every folder between, each 0700,
    /// refusing any that is a symbolic link, not a folder, or another user's.
    pub fn ensure_dir(&self, dir: &Path) -> Result<()> {
        let below = self.below(dir)?;
        fs::create_dir_all(&self.root)
            .map_err(|e| Error::io(format!("cannot create {}", self.root.display()), &e))?;
        let meta = fs::metadata(&self.root)
            .map_err(|e| Error::io(format!("cannot read {}", self.root.display()), &e))?;
        if meta.mode() & 0o1000 != 0 {
            // A sticky folder is shared by design (/tmp): never take it over.
            return Err(Error::invalid_input(format!(
                "{} is a shared folder (like /tmp): set CODEHANDS_HOME to a folder of its own",
                self.root.display()
            )));
        }
        make_private(&self.root, &meta)?;
        let mut path = self.root.clone();
        for part in below.components() {
            path.push(part);
            match fs::DirBuilder::new().mode(DIR_MODE).create(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == IoKind::AlreadyExists => {}
                Err(e) => return Err(Error::io(format!("cannot create {}", path.display()), &e)),
            }
            let meta = fs::symlink_metadata(&path)
                .map_err(|e| Error::io(format!("cannot read {}", path.display()), &e))?;
            if meta.file_type().is_symlink() {
                return Err(link_refused(&path));
            }
            make_private(&path, &meta)?;
        }
        Ok(())
    }

    /// Refuses `path` if it exists as anything but a regular file (a symbolic link, a
    /// folder, a pipe): for a file codehands is about to create or append to.
    pub fn check_file(&self, path: &Path) -> Result<()> {
        self.below(path)?;
        match fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => Err(link_refused(path)),
            Ok(meta) if !meta.is_file() => Err(Error::new(
                ErrorKind::Io,
                format!(
                    "{} is not a regular file: move it away (codehands makes it again)",
                    path.display()
                ),
            )),
            Ok(_) => Ok(()),
            Err(e) if e.kind() == IoKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(format!("cannot read {}", path.display()), &e)),
        }
    }

    /// Opens `path` for appending, creating it 0600 (its folders 0700); never through a link.
    pub fn append(&self, path: &Path) -> Result<File> {
        self.open(path, OpenOptions::new().create(true).append(true))
    }

    /// Opens `path` with `options` (its folders made 0700 first), never through a link; a
    /// file it opens is 0600 afterwards, also one made before under another umask.
    pub fn open(&self, path: &Path, options: &mut OpenOptions) -> Result<File> {
        self.ensure_parent(path)?;
        let file = open_no_follow(path, options)?;
        fix_file_mode(path, &file)?;
        Ok(file)
    }

    /// Creates `path` 0600, failing if anything (a link included) is already there.
    pub fn create_new(&self, path: &Path) -> std::io::Result<File> {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(FILE_MODE)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
    }

    /// The bytes of `path`, `None` when it does not exist; refuses a link.
    pub fn read(&self, path: &Path) -> Result<Option<Vec<u8>>> {
        self.below(path)?;
        read_no_follow(path)
    }

    /// Writes `bytes` to `path` so that readers see the old file or the new one, never a
    /// mix, and the new one survives a power cut: temp file (0600) in the same folder,
    /// fsync, rename, fsync of the folder.
    pub fn write_atomically(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        self.replace(path, bytes, true)
    }

    /// Like [`PrivateRoot::write_atomically`] without the fsyncs: readers still never see
    /// half a file, but a power cut may lose it. For files about live processes.
    pub fn replace_file(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        self.replace(path, bytes, false)
    }

    fn replace(&self, path: &Path, bytes: &[u8], durable: bool) -> Result<()> {
        let dir = self.ensure_parent(path)?;
        let context = || format!("cannot write {}", path.display());
        // tempfile makes its file 0600 with O_EXCL (no link is followed).
        let mut temp = tempfile::Builder::new()
            .prefix(".tmp-")
            .suffix(".partial")
            .tempfile_in(&dir)
            .map_err(|e| Error::io(context(), &e))?;
        temp.write_all(bytes)
            .map_err(|e| Error::io(context(), &e))?;
        if durable {
            temp.as_file()
                .sync_all()
                .map_err(|e| Error::io(context(), &e))?;
        }
        temp.persist(path)
            .map_err(|e| Error::io(context(), &e.error))?;
        // The rename is durable only once the folder itself is synced.
        if durable && let Ok(folder) = File::open(&dir) {
            let _ = folder.sync_all();
        }
        Ok(())
    }

    fn ensure_parent(&self, path: &Path) -> Result<PathBuf> {
        let dir = path
            .parent()
            .ok_or_else(|| Error::internal(format!("{} has no folder", path.display())))?;
        self.ensure_dir(dir)?;
        Ok(dir.to_owned())
    }

    /// `path` relative to the root; refuses a path outside it or with `..`.
    fn below<'a>(&self, path: &'a Path) -> Result<&'a Path> {
        let rest = path.strip_prefix(&self.root).map_err(|_| {
            Error::internal(format!(
                "{} is not under {}",
                path.display(),
                self.root.display()
            ))
        })?;
        if rest
            .components()
            .any(|c| !matches!(c, Component::Normal(_)))
        {
            return Err(Error::internal(format!(
                "{} is not a plain path under {}",
                path.display(),
                self.root.display()
            )));
        }
        Ok(rest)
    }
}

/// Opens `path` with `options`, never through a link, with mode 0600 if it is created.
pub fn open_no_follow(path: &Path, options: &mut OpenOptions) -> Result<File> {
    let file = options
        .mode(FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| open_error(path, &e))?;
    let meta = file
        .metadata()
        .map_err(|e| Error::io(format!("cannot read {}", path.display()), &e))?;
    if !meta.is_file() {
        return Err(Error::new(
            ErrorKind::Io,
            format!(
                "{} is not a regular file: move it away (codehands makes it again)",
                path.display()
            ),
        ));
    }
    Ok(file)
}

/// The bytes of `path`, `None` when it does not exist; a link is refused, not followed.
pub fn read_no_follow(path: &Path) -> Result<Option<Vec<u8>>> {
    let mut file = match open_no_follow(path, OpenOptions::new().read(true)) {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| Error::io(format!("cannot read {}", path.display()), &e))?;
    Ok(Some(bytes))
}

/// The JSON record at `path` (a session or task record, a workflow's state, a verdict),
/// read strictly: `None` when there is none; a link refused; bytes that are not one whole
/// `T` are a [`ErrorKind::CorruptRecord`] naming the file, what it should be (`what`, "a
/// task record") and what the person can do (`to_go_on`, "move it away to continue").
pub fn read_record<T: serde::de::DeserializeOwned>(
    path: &Path,
    what: &str,
    to_go_on: &str,
) -> Result<Option<T>> {
    let Some(bytes) = read_no_follow(path)? else {
        return Ok(None);
    };
    serde_json::from_slice(&bytes).map(Some).map_err(|e| {
        Error::new(
            ErrorKind::CorruptRecord,
            format!("{} is not {what} ({e}); {to_go_on}", path.display()),
        )
    })
}

/// [`read_record`] of a `noun` record ("session", "task") that names its own id (`id_of`):
/// one that holds another id than `id`, the one its file name gives, is corrupt too.
pub fn read_keyed_record<T, I>(
    path: &Path,
    noun: &str,
    id: &I,
    id_of: impl Fn(&T) -> &I,
) -> Result<Option<T>>
where
    T: serde::de::DeserializeOwned,
    I: PartialEq + std::fmt::Display,
{
    const TO_GO_ON: &str = "move it away to continue";
    let what = format!("a valid {noun} record");
    let Some(record) = read_record::<T>(path, &what, TO_GO_ON)? else {
        return Ok(None);
    };
    let held = id_of(&record);
    if held != id {
        return Err(Error::new(
            ErrorKind::CorruptRecord,
            format!(
                "{} holds {noun} {held}, not {id}; {TO_GO_ON}",
                path.display()
            ),
        ));
    }
    Ok(Some(record))
}

fn open_error(path: &Path, e: &std::io::Error) -> Error {
    // ELOOP is how O_NOFOLLOW says the last component is a link.
    if e.raw_os_error() == Some(libc::ELOOP) {
        return link_refused(path);
    }
    if e.kind() == IoKind::NotFound {
        return Error::not_found(format!("{} does not exist", path.display()));
    }
    Error::io(format!("cannot open {}", path.display()), e)
}

fn link_refused(path: &Path) -> Error {
    Error::new(
        ErrorKind::InvalidInput,
        format!(
            "{} is a symbolic link, which codehands never follows under its home: \
             remove the link (codehands makes a private folder or file there itself)",
            path.display()
        ),
    )
}

/// Makes an existing folder 0700, refusing one that is not a folder or not ours.
fn make_private(path: &Path, meta: &fs::Metadata) -> Result<()> {
    if !meta.is_dir() {
        return Err(Error::new(
            ErrorKind::Io,
            format!(
                "{} is not a folder: move it away (codehands makes the folder itself)",
                path.display()
            ),
        ));
    }
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "{} belongs to user {}, not to you (user {me}): codehands keeps its files only \
                 in folders of your own; remove it or set CODEHANDS_HOME to a folder of yours",
                path.display(),
                meta.uid()
            ),
        ));
    }
    if meta.mode() & 0o7777 != DIR_MODE {
        fs::set_permissions(path, fs::Permissions::from_mode(DIR_MODE))
            .map_err(|e| Error::io(format!("cannot make {} private", path.display()), &e))?;
    }
    Ok(())
}

/// Makes an open file 0600 (one made before, or under another umask).
fn fix_file_mode(path: &Path, file: &File) -> Result<()> {
    let meta = file
        .metadata()
        .map_err(|e| Error::io(format!("cannot read {}", path.display()), &e))?;
    if meta.mode() & 0o7777 != FILE_MODE {
        file.set_permissions(fs::Permissions::from_mode(FILE_MODE))
            .map_err(|e| Error::io(format!("cannot make {} private", path.display()), &e))?;
    }
    Ok(())
}

/// Opens the lock file `path` to `flock` it: made 0600 whatever the umask when missing (like
/// every file under the home), never truncated (another process may hold it).
pub fn open_lock_file(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(FILE_MODE)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        fs::symlink_metadata(path).unwrap().mode() & 0o777
    }

    #[test]
    fn folders_and_files_are_private_and_loose_ones_are_tightened() {
        let dir = tempfile::tempdir().unwrap();
        let root = PrivateRoot::new(dir.path().join("home"));
        let deep = root.path().join("runs/abc");
        fs::create_dir_all(root.path().join("runs")).unwrap();
        fs::set_permissions(root.path().join("runs"), fs::Permissions::from_mode(0o755)).unwrap();
        root.ensure_dir(&deep).unwrap();
        for path in [root.path(), &root.path().join("runs"), &deep] {
            assert_eq!(mode(path), 0o700, "{}", path.display());
        }
        let loose = deep.join("loose.txt");
        fs::write(&loose, "x").unwrap();
        fs::set_permissions(&loose, fs::Permissions::from_mode(0o644)).unwrap();
        root.append(&loose).unwrap();
        assert_eq!(mode(&loose), 0o600);
        root.write_atomically(&deep.join("a.json"), b"{}").unwrap();
        assert_eq!(mode(&deep.join("a.json")), 0o600);
        root.create_new(&deep.join("n.json")).unwrap();
        assert_eq!(mode(&deep.join("n.json")), 0o600);
    }

    #[test]
    fn links_are_refused_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("secret"), "secret").unwrap();
        let root = PrivateRoot::new(dir.path().join("home"));
        root.ensure_dir(root.path()).unwrap();
        std::os::unix::fs::symlink(&outside, root.path().join("runs")).unwrap();
        let err = root.ensure_dir(&root.path().join("runs/x")).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert!(!outside.join("x").exists());
        let file = root.path().join("notes.md");
        std::os::unix::fs::symlink(outside.join("secret"), &file).unwrap();
        for err in [
            root.read(&file).unwrap_err(),
            root.append(&file).unwrap_err(),
            root.check_file(&file).unwrap_err(),
        ] {
            assert!(err.to_string().contains("symbolic link"), "{err}");
        }
        assert_eq!(
            fs::read_to_string(outside.join("secret")).unwrap(),
            "secret"
        );
        // An atomic write replaces the link itself.
        root.write_atomically(&file, b"mine").unwrap();
        assert_eq!(
            fs::read_to_string(outside.join("secret")).unwrap(),
            "secret"
        );
        assert_eq!(root.read(&file).unwrap().unwrap(), b"mine");
        assert_eq!(root.read(&root.path().join("missing")).unwrap(), None);
    }

    #[test]
    fn a_shared_folder_is_never_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o1777)).unwrap();
        let err = PrivateRoot::new(dir.path())
            .ensure_dir(dir.path())
            .unwrap_err();
        assert!(err.to_string().contains("shared folder"), "{err}");
        assert_eq!(mode(dir.path()), 0o777, "its mode is left alone");
    }
}
