//! `InMemory`: repo memory in a map, for tests and the fake runner.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use async_trait::async_trait;
use runner_contract::{MemoryStore, RepoProfile, Result, RunSummary, SessionState};

use crate::key::validate_repo_key;
use crate::notes::{self, PROMPT_CAP_CHARS};
use crate::profile::detect_repo_profile;

/// Repo memory that lives as long as the value: the same notes format, trimming, cap and
/// key checks as [`FileMemory`](crate::FileMemory), nothing on disk.
#[derive(Debug, Default)]
pub struct InMemory {
    repos: Mutex<HashMap<String, Repo>>,
}

#[derive(Debug, Default)]
struct Repo {
    notes: String,
    profile: Option<RepoProfile>,
}

impl InMemory {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn with_repo<T>(&self, repo_key: &str, f: impl FnOnce(&mut Repo) -> T) -> Result<T> {
        validate_repo_key(repo_key)?;
        // A panic elsewhere cannot leave a half-changed repo: every change is one assignment.
        let mut repos = self.repos.lock().unwrap_or_else(|e| e.into_inner());
        Ok(f(repos.entry(repo_key.to_owned()).or_default()))
    }

    fn read<T>(&self, repo_key: &str, f: impl FnOnce(Option<&Repo>) -> T) -> Result<T> {
        validate_repo_key(repo_key)?;
        let repos = self.repos.lock().unwrap_or_else(|e| e.into_inner());
        Ok(f(repos.get(repo_key)))
    }
}

#[async_trait]
impl MemoryStore for InMemory {
    async fn notes(&self, repo_key: &str) -> Result<String> {
        self.read(repo_key, |r| r.map(|r| r.notes.clone()).unwrap_or_default())
    }

    async fn add_note(&self, repo_key: &str, note: &str) -> Result<()> {
        validate_repo_key(repo_key)?;
        notes::check_note_text(note)?;
        let note = notes::format_note(&runner_contract::now_rfc3339(), note);
        self.with_repo(repo_key, |r| r.notes = notes::append(&r.notes, &note))
    }

    async fn notes_for_prompt(&self, repo_key: &str) -> Result<String> {
        let all = self.notes(repo_key).await?;
        Ok(notes::notes_for_prompt(&all, PROMPT_CAP_CHARS))
    }

    async fn record_run(&self, repo_key: &str, run: &RunSummary) -> Result<()> {
        let note = notes::run_note(run);
        self.with_repo(repo_key, |r| r.notes = notes::append(&r.notes, &note))
    }

    async fn record_outcome(
        &self,
        repo_key: &str,
        branch: &str,
        outcome: SessionState,
    ) -> Result<()> {
        self.with_repo(repo_key, |r| {
            if let Some(notes) = notes::set_outcome(&r.notes, branch, outcome.as_str()) {
                r.notes = notes;
            }
        })
    }

    async fn profile(&self, repo_key: &str) -> Result<Option<RepoProfile>> {
        self.read(repo_key, |r| r.and_then(|r| r.profile.clone()))
    }

    async fn save_profile(&self, repo_key: &str, profile: &RepoProfile) -> Result<()> {
        self.with_repo(repo_key, |r| r.profile = Some(profile.clone()))
    }

    fn detect_profile(&self, dir: &Path) -> RepoProfile {
        detect_repo_profile(dir)
    }
}
