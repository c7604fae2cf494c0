//! `FileMemory`: repo memory as files, `<memory root>/<repoKey>/{notes.md,profile.json}`.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use runner_contract::private::PrivateRoot;
use runner_contract::{
    Error, ErrorKind, MemoryStore, RepoProfile, Result, RunSummary, SessionState,
};

use crate::key::validate_repo_key;
use crate::lock::{FolderLock, blocking};
use crate::notes::{self, PROMPT_CAP_CHARS};
use crate::profile::detect_repo_profile;

const NOTES_FILE: &str = "notes.md";
const PROFILE_FILE: &str = "profile.json";

/// Repo memory kept as files, one folder per repo key:
/// `<memory root>/<repoKey>/notes.md` and `<memory root>/<repoKey>/profile.json`.
///
/// Missing files read as empty. Writes hold the repo's lock (threads and processes alike)
/// and replace the file atomically, so concurrent writers lose no note and a crash leaves
/// the old file or the new one. Reads take no lock: a rename is seen whole or not at all.
/// Every folder is 0700 and every file 0600, and none is reached through a symbolic link:
/// a `notes.md` that links elsewhere is refused, never read into the agent's prompt.
#[derive(Debug, Clone)]
pub struct FileMemory {
    private: PrivateRoot,
    root: PathBuf,
}

impl FileMemory {
    /// A store whose memory root is `memory_root` itself: repo folders go directly in it
    /// (`<memory_root>/<repoKey>/notes.md`). Nothing is made until the first write.
    pub fn new(memory_root: impl Into<PathBuf>) -> Self {
        let root = memory_root.into();
        Self {
            private: PrivateRoot::new(&root),
            root,
        }
    }

    /// A store under the codehands home: the memory root is `<home>/memory`
    /// (`$CODEHANDS_HOME/memory/<repoKey>/notes.md`), and the home is kept private too.
    pub fn in_home(home: impl AsRef<Path>) -> Self {
        let home = home.as_ref();
        Self {
            private: PrivateRoot::new(home),
            root: runner_contract::Home::new(home).memory_dir(),
        }
    }

    /// The memory root, the folder that holds one folder per repo key.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn repo_dir(&self, repo_key: &str) -> Result<PathBuf> {
        validate_repo_key(repo_key)?;
        Ok(self.root.join(repo_key))
    }

    /// Adds an already formatted note under the repo's lock.
    async fn append(&self, repo_key: &str, note: String) -> Result<()> {
        let dir = self.repo_dir(repo_key)?;
        let private = self.private.clone();
        blocking(move || {
            let _lock = FolderLock::acquire(&private, &dir)?;
            let path = dir.join(NOTES_FILE);
            let old = read_text(&private, &path)?.unwrap_or_default();
            private.write_atomically(&path, notes::append(&old, &note).as_bytes())
        })
        .await
    }
}

#[async_trait]
impl MemoryStore for FileMemory {
    async fn notes(&self, repo_key: &str) -> Result<String> {
        let path = self.repo_dir(repo_key)?.join(NOTES_FILE);
        let private = self.private.clone();
        blocking(move || Ok(read_text(&private, &path)?.unwrap_or_default())).await
    }

    async fn add_note(&self, repo_key: &str, note: &str) -> Result<()> {
        validate_repo_key(repo_key)?;
        notes::check_note_text(note)?;
        let note = notes::format_note(&runner_contract::now_rfc3339(), note);
        self.append(repo_key, note).await
    }

    async fn notes_for_prompt(&self, repo_key: &str) -> Result<String> {
        let all = self.notes(repo_key).await?;
        Ok(notes::notes_for_prompt(&all, PROMPT_CAP_CHARS))
    }

    async fn record_run(&self, repo_key: &str, run: &RunSummary) -> Result<()> {
        validate_repo_key(repo_key)?;
        self.append(repo_key, notes::run_note(run)).await
    }

    async fn record_outcome(
        &self,
        repo_key: &str,
        branch: &str,
        outcome: SessionState,
    ) -> Result<()> {
        let dir = self.repo_dir(repo_key)?;
        let private = self.private.clone();
        let branch = branch.to_owned();
        blocking(move || {
            let _lock = FolderLock::acquire(&private, &dir)?;
            let path = dir.join(NOTES_FILE);
            let old = read_text(&private, &path)?.unwrap_or_default();
            match notes::set_outcome(&old, &branch, outcome.as_str()) {
                Some(new) => private.write_atomically(&path, new.as_bytes()),
                None => Ok(()),
            }
        })
        .await
    }

    async fn profile(&self, repo_key: &str) -> Result<Option<RepoProfile>> {
        let path = self.repo_dir(repo_key)?.join(PROFILE_FILE);
        let private = self.private.clone();
        blocking(move || {
            let Some(text) = read_text(&private, &path)? else {
                return Ok(None);
            };
            serde_json::from_str(&text).map(Some).map_err(|e| {
                Error::new(
                    ErrorKind::CorruptRecord,
                    format!(
                        "{} is not a repo profile ({e}): delete it, and the next run writes it again",
                        path.display()
                    ),
                )
            })
        })
        .await
    }

    async fn save_profile(&self, repo_key: &str, profile: &RepoProfile) -> Result<()> {
        let dir = self.repo_dir(repo_key)?;
        let mut json = serde_json::to_string_pretty(profile)
            .map_err(|e| Error::internal(format!("cannot write a repo profile as JSON: {e}")))?;
        json.push('\n');
        let private = self.private.clone();
        blocking(move || {
            let _lock = FolderLock::acquire(&private, &dir)?;
            private.write_atomically(&dir.join(PROFILE_FILE), json.as_bytes())
        })
        .await
    }

    fn detect_profile(&self, dir: &Path) -> RepoProfile {
        detect_repo_profile(dir)
    }
}

/// The file's text, `None` when it does not exist; a link is refused, never followed.
fn read_text(private: &PrivateRoot, path: &Path) -> Result<Option<String>> {
    let Some(bytes) = private.read(path)? else {
        return Ok(None);
    };
    String::from_utf8(bytes).map(Some).map_err(|_| {
        Error::new(
            ErrorKind::CorruptRecord,
            format!(
                "{} is not UTF-8 text: fix or delete it (codehands starts it again)",
                path.display()
            ),
        )
    })
}
