//! Where a plugin library may be loaded from. A library runs in our process with our rights
//! (the crate docs), so whoever can put a file where we load it can run code as us: a file
//! reached through a symbolic link (its target may be anywhere, and change), a file others
//! may write, or a file in a folder others may write (they replace it between runs) is
//! refused before it is opened, saying what to fix.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Write permission for users other than the owner and the group.
const OTHERS_WRITE: u32 = 0o002;
/// The sticky bit: in a folder others may write, only a file's owner may rename or remove it.
const STICKY: u32 = 0o1000;

/// Refuses `path` (absolute) when it is a link, when others may write it, or when others may
/// write its folder (unless the folder is sticky, as `/tmp` is: then they cannot replace it).
pub(super) fn check(path: &Path) -> Result<(), String> {
    let missing = || {
        format!(
            "there is no plugin library at {}: give the path of a .so file",
            path.display()
        )
    };
    let file = std::fs::symlink_metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => missing(),
        _ => format!("cannot read the plugin library {}: {e}", path.display()),
    })?;
    if file.file_type().is_symlink() {
        return Err(format!(
            "the plugin library {} is a symbolic link, which codehands does not follow (its \
             target could be swapped for other code): copy the library itself there",
            path.display()
        ));
    }
    if !file.is_file() {
        return Err(missing());
    }
    if file.permissions().mode() & OTHERS_WRITE != 0 {
        return Err(format!(
            "the plugin library {} may be written by any user, who could put code of theirs \
             in it for codehands to run: `chmod o-w {}`",
            path.display(),
            path.display()
        ));
    }
    let folder = path.parent().unwrap_or(Path::new("/"));
    let dir = std::fs::metadata(folder)
        .map_err(|e| format!("cannot read the folder {}: {e}", folder.display()))?;
    let mode = dir.permissions().mode();
    if mode & OTHERS_WRITE != 0 && mode & STICKY == 0 {
        return Err(format!(
            "the plugin library {} is in {}, a folder any user may write, who could replace it \
             with code of theirs for codehands to run: `chmod o-w {}`",
            path.display(),
            folder.display(),
            folder.display()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(mode: u32) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(mode)).unwrap();
        dir
    }

    fn library(dir: &Path, mode: u32) -> std::path::PathBuf {
        let path = dir.join("agent.so");
        std::fs::write(&path, b"not checked here").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    #[test]
    fn a_private_library_passes() {
        let dir = folder(0o755);
        assert_eq!(check(&library(dir.path(), 0o644)), Ok(()));
    }

    #[test]
    fn a_symlinked_library_is_refused() {
        let dir = folder(0o755);
        let real = library(dir.path(), 0o644);
        let link = dir.path().join("linked.so");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let message = check(&link).unwrap_err();
        assert!(message.contains("is a symbolic link"), "{message}");
        assert!(message.contains("copy the library itself"), "{message}");
    }

    #[test]
    fn a_world_writable_folder_or_library_is_refused() {
        let dir = folder(0o777);
        let message = check(&library(dir.path(), 0o644)).unwrap_err();
        assert!(message.contains("a folder any user may write"), "{message}");
        assert!(message.contains("chmod o-w"), "{message}");
        let dir = folder(0o755);
        let message = check(&library(dir.path(), 0o666)).unwrap_err();
        assert!(message.contains("may be written by any user"), "{message}");
    }

    #[test]
    fn a_sticky_shared_folder_passes() {
        let dir = folder(0o1777);
        assert_eq!(check(&library(dir.path(), 0o644)), Ok(()));
    }
}
