//! `runs/<sessionId>/test-<n>.json`: one file per sandbox run, numbered across restarts.
//! Like everything under the codehands home, private (0600 files in 0700 folders) and
//! never written through a symbolic link.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use runner_contract::private::PrivateRoot;
use runner_contract::{SandboxResult, SessionId};

/// The folder of a session's runs under the codehands home.
pub(crate) fn runs_dir(home: &Path, session: &SessionId) -> PathBuf {
    runner_contract::Home::new(home).run_dir(session)
}

fn result_path(dir: &Path, n: u32) -> PathBuf {
    dir.join(runner_contract::run_folder::sandbox_result(n.into()))
}

/// Reserves the next run number by creating its file empty (so two sandboxes,
/// or a restarted one, never share a number); the result replaces it later.
pub(crate) fn reserve(home: &Path, session: &SessionId) -> Result<u32, String> {
    let dir = runs_dir(home, session);
    let private = PrivateRoot::new(home);
    private
        .ensure_dir(&dir)
        .map_err(|e| format!("{e}; check that the codehands home is writable"))?;
    let entries = fs::read_dir(&dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut n = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            name.strip_prefix(runner_contract::run_folder::SANDBOX_RESULT_PREFIX)?
                .strip_suffix(".json")?
                .parse::<u32>()
                .ok()
        })
        .max()
        .unwrap_or(0);
    loop {
        n += 1;
        match private.create_new(&result_path(&dir, n)) {
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
    let path = result_path(&runs_dir(home, session), result.n);
    let json = serde_json::to_vec_pretty(result).map_err(|e| e.to_string())?;
    PrivateRoot::new(home)
        .write_atomically(&path, &json)
        .map_err(|e| e.to_string())
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

    #[test]
    fn results_are_private_and_never_written_through_a_link() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777;
        let home = tempfile::tempdir().unwrap();
        let id = SessionId::new_random();
        let n = reserve(home.path(), &id).unwrap();
        let result = SandboxResult {
            n,
            command: "npm test".into(),
            image: "x".into(),
            passed: true,
            exit_code: Some(0),
            timed_out: false,
            out_of_memory: false,
            output: String::new(),
            duration_ms: 1,
            error: None,
        };
        write(home.path(), &id, &result).unwrap();
        let dir = runs_dir(home.path(), &id);
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(dir.parent().unwrap()), 0o700);
        assert_eq!(mode(&result_path(&dir, n)), 0o600);

        let elsewhere = tempfile::tempdir().unwrap();
        let planted = SessionId::new_random();
        std::os::unix::fs::symlink(elsewhere.path(), runs_dir(home.path(), &planted)).unwrap();
        let err = reserve(home.path(), &planted).unwrap_err();
        assert!(err.contains("symbolic link"), "{err}");
        assert_eq!(fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    }
}
