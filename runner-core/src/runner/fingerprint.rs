//! The worktree's fingerprint around a read-only turn (a workflow's plan or review phase):
//! its supervisor keeps one before the agent runs, and the workflow compares after the turn,
//! so a read-only phase that wrote anyway is caught, whatever its agent's program promised.
//!
//! The fingerprint reads the worktree as hostile data: no link is followed (a link counts
//! as its target's text), no special file is opened, `.git` at the top is left out, and the
//! walk is bounded in files, depth and bytes.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::control::RunFiles;
use runner_contract::error::{Error, Result};

/// The most entries a fingerprint walks.
const MAX_ENTRIES: usize = 200_000;
/// The deepest folder a fingerprint walks into.
const MAX_DEPTH: usize = 64;
/// The most bytes a fingerprint reads.
const MAX_BYTES: u64 = 4 << 30;
/// Where a read-only turn's fingerprint from before its agent ran is kept.
const BEFORE_FILE: &str = runner_contract::run_folder::PHASE_BEFORE;

/// Every entry of a worktree (but its top `.git`) with what it holds: a file's mode and
/// content hash, a link's target, a folder, a special file's kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Fingerprint(BTreeMap<String, String>);

/// What the supervisor of a read-only turn keeps before its agent runs.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Before {
    turn: u64,
    #[serde(default)]
    fingerprint: Option<Fingerprint>,
    #[serde(default)]
    error: Option<String>,
}

impl Fingerprint {
    /// The fingerprint of the worktree at `root`.
    pub(crate) fn of(root: &Path) -> Result<Self> {
        let mut walk = Walk {
            entries: BTreeMap::new(),
            bytes: 0,
        };
        walk.dir(root, "", 0)?;
        Ok(Self(walk.entries))
    }

    /// The paths that differ between `self` (before) and `after`, at most `limit` of them.
    pub(crate) fn changes(&self, after: &Self, limit: usize) -> Vec<String> {
        let mut changed: Vec<String> = self
            .0
            .iter()
            .filter(|(path, held)| after.0.get(*path) != Some(held))
            .map(|(path, _)| path.clone())
            .chain(
                after
                    .0
                    .keys()
                    .filter(|path| !self.0.contains_key(*path))
                    .cloned(),
            )
            .collect();
        changed.sort();
        changed.dedup();
        changed.truncate(limit);
        changed
    }
}

struct Walk {
    entries: BTreeMap<String, String>,
    bytes: u64,
}

impl Walk {
    fn dir(&mut self, dir: &Path, prefix: &str, depth: usize) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(too_big(format!("folders deeper than {MAX_DEPTH}")));
        }
        let read = std::fs::read_dir(dir)
            .map_err(|e| Error::io(format!("cannot read {}", dir.display()), &e))?;
        for entry in read {
            let entry =
                entry.map_err(|e| Error::io(format!("cannot read {}", dir.display()), &e))?;
            let name = entry.file_name();
            if depth == 0 && name == ".git" {
                continue;
            }
            if self.entries.len() >= MAX_ENTRIES {
                return Err(too_big(format!("more than {MAX_ENTRIES} files")));
            }
            // Debug of the name keeps names that are not UTF-8 apart.
            let key = format!("{prefix}/{name:?}");
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path)
                .map_err(|e| Error::io(format!("cannot look at {}", path.display()), &e))?;
            let mode = meta.mode() & 0o7777;
            let kind = meta.file_type();
            let held = if kind.is_symlink() {
                let target = std::fs::read_link(&path)
                    .map_err(|e| Error::io(format!("cannot read {}", path.display()), &e))?;
                format!("link {target:?}")
            } else if kind.is_dir() {
                self.entries.insert(key.clone(), format!("dir {mode:o}"));
                self.dir(&path, &key, depth + 1)?;
                continue;
            } else if kind.is_file() {
                format!("file {mode:o} {}", self.hash(&path)?)
            } else {
                format!("special {:o}", meta.mode())
            };
            self.entries.insert(key, held);
        }
        Ok(())
    }

    /// The content hash of a regular file, opened without following a link and without
    /// waiting on one swapped for a pipe.
    fn hash(&mut self, path: &Path) -> Result<String> {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)
            .map_err(|e| Error::io(format!("cannot open {}", path.display()), &e))?;
        let mut hasher = sha1_smol::Sha1::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = file
                .read(&mut buf)
                .map_err(|e| Error::io(format!("cannot read {}", path.display()), &e))?;
            if n == 0 {
                break;
            }
            self.bytes += n as u64;
            if self.bytes > MAX_BYTES {
                return Err(too_big(format!("more than {MAX_BYTES} bytes")));
            }
            hasher.update(&buf[..n]);
        }
        Ok(hasher.digest().to_string())
    }
}

fn too_big(what: String) -> Error {
    Error::invalid_input(format!(
        "the worktree holds {what}, too much to check that a read-only phase changed nothing"
    ))
}

/// Keeps the fingerprint of the worktree before turn `turn`'s agent runs (the supervisor of
/// a read-only phase calls it before the spawn); a fingerprint that cannot be taken is kept
/// as its error, which fails the phase once the turn ends.
pub(crate) async fn keep_before(files: &RunFiles, worktree: &Path, turn: u64) -> Result<()> {
    let root = worktree.to_owned();
    let taken = tokio::task::spawn_blocking(move || Fingerprint::of(&root))
        .await
        .map_err(|e| Error::internal(format!("the fingerprint's task failed: {e}")))?;
    let before = match taken {
        Ok(fingerprint) => Before {
            turn,
            fingerprint: Some(fingerprint),
            error: None,
        },
        Err(e) => Before {
            turn,
            fingerprint: None,
            error: Some(e.to_string()),
        },
    };
    let bytes = serde_json::to_vec(&before)
        .map_err(|e| Error::internal(format!("cannot encode the fingerprint: {e}")))?;
    files.write_private(BEFORE_FILE, &bytes).map(drop)
}

/// Why read-only turn `turn` broke its rule, if it did: the worktree now differs from the
/// fingerprint its supervisor kept before the agent ran (or there is none to compare).
pub(crate) async fn wrote_anyway(files: &RunFiles, worktree: &Path, turn: u64) -> Option<String> {
    let bytes = runner_contract::private::read_no_follow(&files.dir().join(BEFORE_FILE))
        .ok()
        .flatten();
    let before: Option<Before> = bytes.and_then(|b| serde_json::from_slice(&b).ok());
    let before = match before {
        Some(before) if before.turn == turn => before,
        _ => {
            return Some(
                "no fingerprint of the worktree was taken before the read-only phase ran, so \
                 nothing shows it changed nothing"
                    .into(),
            );
        }
    };
    let Some(fingerprint) = before.fingerprint else {
        return Some(before.error.unwrap_or_default());
    };
    let root = worktree.to_owned();
    let after = tokio::task::spawn_blocking(move || Fingerprint::of(&root)).await;
    let after = match after {
        Ok(Ok(after)) => after,
        Ok(Err(e)) => return Some(e.to_string()),
        Err(e) => return Some(format!("the fingerprint's task failed: {e}")),
    };
    let changed = fingerprint.changes(&after, 5);
    (!changed.is_empty()).then(|| {
        let names: Vec<String> = changed
            .iter()
            .map(|k| {
                k.trim_start_matches('/')
                    .replace("\"/\"", "/")
                    .replace('"', "")
            })
            .collect();
        format!(
            "the read-only phase changed the worktree ({}): its agent wrote anyway",
            names.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_a_new_file_a_mode_and_a_link_are_seen_and_git_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.txt"), "a").unwrap();
        std::fs::write(root.join(".git"), "gitdir: elsewhere").unwrap();
        let before = Fingerprint::of(root).unwrap();
        std::fs::write(root.join(".git"), "gitdir: moved").unwrap();
        assert!(
            before
                .changes(&Fingerprint::of(root).unwrap(), 5)
                .is_empty()
        );
        std::fs::write(root.join("src/a.txt"), "b").unwrap();
        assert_eq!(before.changes(&Fingerprint::of(root).unwrap(), 5).len(), 1);
        std::fs::write(root.join("src/a.txt"), "a").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("link")).unwrap();
        let after = Fingerprint::of(root).unwrap();
        assert_eq!(before.changes(&after, 5), vec!["/\"link\"".to_owned()]);
        assert!(after.0["/\"link\""].starts_with("link"), "never followed");
    }
}
