//! `runs/<sessionId>/test-<n>.json`: one file per sandbox run, numbered across restarts.

use std::fs::{self, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

use runner_core::{SandboxResult, SessionId};

/// The folder of a session's runs under the codehands home.
pub(crate) fn runs_dir(home: &Path, session: &SessionId) -> PathBuf {
    // A SessionId is always a plain UUID, so it is safe as a path component.
    home.join("runs").join(session.to_string())
}

fn result_path(dir: &Path, n: u32) -> PathBuf {
    dir.join(format!("test-{n}.json"))
}

/// Reserves the next run number by creating its file empty (so two sandboxes,
/// or a restarted one, never share a number); the result replaces it later.
pub(crate) fn reserve(home: &Path, session: &SessionId) -> Result<u32, String> {
    let dir = runs_dir(home, session);
    fs::create_dir_all(&dir).map_err(|e| {
        format!(
            "cannot create {}: {e}; check that the codehands home is writable",
            dir.display()
        )
    })?;
    let entries = fs::read_dir(&dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut n = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            name.strip_prefix("test-")?
                .strip_suffix(".json")?
                .parse::<u32>()
                .ok()
        })
        .max()
        .unwrap_or(0);
    loop {
        n += 1;
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(result_path(&dir, n))
        {
            Ok(_) => return Ok(n),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(format!(
                    "cannot create {}: {e}",
                    result_path(&dir, n).display()
                ));
            }
        }
    }
}

/// Writes a result atomically (temp file, fsync, rename) over its reserved file.
pub(crate) fn write(
    home: &Path,
    session: &SessionId,
    result: &SandboxResult,
) -> Result<(), String> {
    let dir = runs_dir(home, session);
    let path = result_path(&dir, result.n);
    let json = serde_json::to_vec_pretty(result).map_err(|e| e.to_string())?;
    let mut tmp = tempfile::NamedTempFile::new_in(&dir)
        .map_err(|e| format!("cannot write in {}: {e}", dir.display()))?;
    tmp.write_all(&json)
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    tmp.persist(&path)
        .map_err(|e| format!("cannot write {}: {}", path.display(), e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_continue_after_what_is_on_disk() {
        let home = tempfile::tempdir().unwrap();
        let id = SessionId::new_random();
        assert_eq!(reserve(home.path(), &id).unwrap(), 1);
        assert_eq!(reserve(home.path(), &id).unwrap(), 2);
        fs::write(runs_dir(home.path(), &id).join("test-9.json"), "{}").unwrap();
        fs::write(runs_dir(home.path(), &id).join("transcript.jsonl"), "").unwrap();
        assert_eq!(reserve(home.path(), &id).unwrap(), 10);
        let other = SessionId::new_random();
        assert_eq!(reserve(home.path(), &other).unwrap(), 1);
    }
}
