//! The per-repo write lock, and running blocking file work off the async threads.
//!
//! Every write to a repo's memory folder (notes and profile) happens while holding an
//! exclusive advisory lock on `<repo folder>/.lock`, taken with std's `File::lock`
//! (`flock` on Unix, `LockFileEx` on Windows). Each writer opens the lock file itself, so
//! the lock keeps threads of one process apart as well as separate processes, and the
//! operating system drops it when a writer dies. The lock file is never replaced; the
//! notes file is, by an atomic rename, which is why it cannot carry the lock itself.

use std::fs::{self, File, OpenOptions};
use std::path::Path;

use runner_contract::private::PrivateRoot;
use runner_contract::{Error, Result};

const LOCK_FILE: &str = ".lock";

/// Held while a repo's memory folder is written; unlocked when dropped.
pub(crate) struct FolderLock {
    file: File,
}

impl FolderLock {
    /// Makes `dir` (private, under `private`) if needed and waits for its lock.
    pub(crate) fn acquire(private: &PrivateRoot, dir: &Path) -> Result<Self> {
        let path = dir.join(LOCK_FILE);
        let file = private.open(
            &path,
            OpenOptions::new().create(true).truncate(false).write(true),
        )?;
        file.lock()
            .map_err(|e| Error::io(format!("cannot lock {}", path.display()), &e))?;
        let lock = Self { file };
        lock.remove_leftovers(dir);
        Ok(lock)
    }

    /// Removes temp files of writers that died mid-write. Every writer makes its temp file
    /// while holding this lock, so any temp file there now belongs to no live writer.
    fn remove_leftovers(&self, dir: &Path) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with(".tmp-") && name.ends_with(".partial") {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
}

impl Drop for FolderLock {
    fn drop(&mut self) {
        // Closing the file would unlock it too; saying so keeps the intent visible.
        let _ = self.file.unlock();
    }
}

/// Runs file work on tokio's blocking pool, so waiting for the lock never stalls the
/// async threads; outside a tokio runtime it runs in place.
pub(crate) async fn blocking<T, F>(work: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
{
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => handle
            .spawn_blocking(work)
            .await
            .map_err(|e| Error::internal(format!("a repo memory task did not finish: {e}")))?,
        Err(_) => work(),
    }
}
