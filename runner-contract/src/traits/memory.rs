//! `MemoryStore`: per-repo notes and the repo profile.

use std::path::Path;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::Result;

/// The language of a repo.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Language {
    /// JavaScript or TypeScript with a package.json.
    Node,
    /// Python.
    Python,
    /// Rust.
    Rust,
    /// Go.
    Go,
    /// Nothing recognised.
    #[default]
    Unknown,
}

/// The package manager a repo uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PackageManager {
    /// npm.
    Npm,
    /// pnpm.
    Pnpm,
    /// Yarn.
    Yarn,
    /// pip (requirements.txt or pyproject.toml).
    Pip,
    /// Poetry.
    Poetry,
    /// uv.
    Uv,
    /// Cargo.
    Cargo,
    /// Go modules.
    Go,
}

/// What a repo is, read from its files with no model call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RepoProfile {
    /// The language.
    pub language: Language,
    /// The package manager, if one is recognised.
    #[serde(default)]
    pub package_manager: Option<PackageManager>,
    /// The command that runs the tests, if there is one.
    #[serde(default)]
    pub test_command: Option<String>,
    /// The Node version from .nvmrc or engines.node.
    #[serde(default)]
    pub node_version: Option<String>,
    /// Whether dependencies must be installed before the tests can run.
    #[serde(default)]
    pub needs_install: bool,
}

/// What a finished run leaves in the repo's notes.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    /// The session.
    pub session_id: crate::ids::SessionId,
    /// What was asked.
    pub prompt: String,
    /// The session's branch.
    pub branch: String,
    /// The agent's final text, if any.
    pub result: Option<String>,
    /// What changed.
    pub diff_stat: crate::options::DiffStat,
    /// When the run finished (RFC 3339).
    pub finished_at: String,
}

/// Per-repo memory: notes the agent gets as context, and the repo's profile.
/// Missing data reads as empty, never as an error.
///
/// `repo_key` is what `Vcs::repo_key` returns (12 lowercase hex characters); it names a
/// folder, so every method refuses anything else with `ErrorKind::InvalidInput`.
///
/// The runner reads `notes_for_prompt` before a run, saves `detect_profile`'s answer with
/// `save_profile`, calls `record_run` after a finished run (never after a stop or a
/// failure) and `record_outcome` once it is approved or rejected; a memory error never
/// fails a run or a decision.
#[async_trait]
pub trait MemoryStore: Send + Sync {
    /// All notes of the repo, oldest first (empty when there are none).
    async fn notes(&self, repo_key: &str) -> Result<String>;

    /// Appends a note (its text: the store adds a heading with the time); concurrent
    /// writers lose nothing. Refuses an empty note, or one longer than the prompt cap.
    async fn add_note(&self, repo_key: &str, note: &str) -> Result<()>;

    /// The notes as the agent gets them: the newest end, capped (about 6,000 characters).
    async fn notes_for_prompt(&self, repo_key: &str) -> Result<String>;

    /// Adds the note of a finished run: its branch, and its summary (the prompt, what
    /// changed, the agent's result) on one line.
    async fn record_run(&self, repo_key: &str, run: &RunSummary) -> Result<()>;

    /// Records how the session whose run left the note of `branch` ended (approved or
    /// rejected), so the next run reads what became of it. Nothing happens when no note
    /// names the branch; stores that keep no notes need not implement it.
    async fn record_outcome(
        &self,
        repo_key: &str,
        branch: &str,
        outcome: crate::session::SessionState,
    ) -> Result<()> {
        let _ = (repo_key, branch, outcome);
        Ok(())
    }

    /// The saved profile, if any.
    async fn profile(&self, repo_key: &str) -> Result<Option<RepoProfile>>;

    /// Saves the profile.
    async fn save_profile(&self, repo_key: &str, profile: &RepoProfile) -> Result<()>;

    /// Reads what the repo at `dir` is; never fails (an unknown repo is `Language::Unknown`).
    fn detect_profile(&self, dir: &Path) -> RepoProfile;
}
