//! What callers pass in (start options) and get back (diffs, approvals, recovery reports).

use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::agent_name::AgentName;
use crate::ids::SessionId;

/// The budget of one run when the caller gives none, in US dollars.
pub const DEFAULT_BUDGET_USD: f64 = 0.50;

/// What `Runner::start` needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StartOptions {
    /// The caller's id for the session (a UUID).
    pub session_id: SessionId,
    /// The person's repository.
    pub repo_path: PathBuf,
    /// What the agent should do. Always sent as text, never parsed as a flag.
    pub prompt: String,
    /// Which agent runs it, by name (see `codehands agents`).
    pub agent: AgentName,
    /// The model, in the agent's own naming (for example "sonnet").
    #[serde(default)]
    pub model: Option<String>,
    /// The budget for the run in US dollars; [`DEFAULT_BUDGET_USD`] when absent.
    #[serde(default)]
    pub budget_usd: Option<f64>,
    /// Run the repo's tests in the sandbox after the agent finishes.
    #[serde(default)]
    pub verify: bool,
    /// What happens when the agent wants a tool outside its allow list: denied (the
    /// default) or asked of the caller as a `permission.requested` event.
    #[serde(default)]
    pub permissions: Permissions,
    /// Whether the agent runs in a box (the default) or unconfined; every turn of the
    /// session runs alike.
    #[serde(default)]
    pub isolation: Isolation,
    /// Where the box runs (this machine by default, or a Docker engine or Swarm cluster);
    /// every turn of the session runs alike. Anything but `local` needs `isolation: box`.
    #[serde(default, skip_serializing_if = "Engine::is_local")]
    pub engine: Engine,
    /// What the person's settings allow beyond the defaults (folders the box reads, tool
    /// rules); every turn of the session runs alike.
    #[serde(default, skip_serializing_if = "crate::Allowances::is_empty")]
    pub allowances: crate::Allowances,
    /// The wall-clock limit of each turn in milliseconds: a turn still running after it is
    /// ended as `task.failed` with reason `timeout`, its change kept. No limit when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// The task this session is an attempt of, when it is one (`LocalRunner::start_task`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<crate::ids::TaskId>,
}

/// Where a session's box runs (docs/engines in README.md, "Where runs run").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    /// On this machine, in the bubblewrap box with the worktree bound in (the default).
    #[default]
    Local,
    /// In a container on the Docker engine `DOCKER_HOST` names (unix, tcp with TLS, ssh):
    /// the base tree is shipped in and the result brought back as data.
    Docker,
    /// As a Docker Swarm `replicated-job` service on the cluster `DOCKER_HOST` names.
    Swarm,
}

impl Engine {
    /// `local`, `docker` or `swarm`, as the command line and the records spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::Docker => "docker",
            Self::Swarm => "swarm",
        }
    }

    /// Whether this is the default, [`Engine::Local`] (records leave it out).
    pub fn is_local(&self) -> bool {
        *self == Self::Local
    }
}

impl std::fmt::Display for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether an agent runs confined.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Isolation {
    /// In a box (the default): the agent and everything it starts write only the worktree
    /// and a private home, read nothing of the caller's home but the login handed to it,
    /// reach only its provider over the network and see no process of the caller's. A
    /// machine that cannot make a box refuses the start, saying why.
    #[default]
    Box,
    /// Unconfined: the agent runs with the caller's rights, as every run did before boxes
    /// existed (and as a session recorded then goes on running).
    None,
}

impl Isolation {
    /// What a session record without the field ran with: none (it was made before boxes).
    pub fn before_boxes() -> Self {
        Self::None
    }

    /// `box` or `none`, as the command line and the records spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Box => "box",
            Self::None => "none",
        }
    }
}

impl std::fmt::Display for Isolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl StartOptions {
    /// Options with the defaults for everything optional.
    pub fn new(
        session_id: SessionId,
        repo_path: impl Into<PathBuf>,
        prompt: impl Into<String>,
        agent: AgentName,
    ) -> Self {
        Self {
            session_id,
            repo_path: repo_path.into(),
            prompt: prompt.into(),
            agent,
            model: None,
            budget_usd: None,
            verify: false,
            permissions: Permissions::default(),
            isolation: Isolation::default(),
            engine: Engine::default(),
            allowances: crate::Allowances::default(),
            timeout_ms: None,
            task_id: None,
        }
    }
}

/// Reads a wall-clock limit as people write it (`90s`, `10m`, `1h 30m`) into milliseconds:
/// at least one second, at most a week.
pub fn parse_timeout(text: &str) -> crate::error::Result<u64> {
    let duration = humantime::parse_duration(text.trim()).map_err(|e| {
        crate::error::Error::invalid_input(format!(
            "the timeout {text:?} is not a duration ({e}): write it like `90s`, `10m` or `1h`"
        ))
    })?;
    let ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
    if !(1_000..=MAX_TIMEOUT_MS).contains(&ms) {
        return Err(crate::error::Error::invalid_input(format!(
            "the timeout {text:?} is out of range: give 1s to 7 days"
        )));
    }
    Ok(ms)
}

/// The longest wall-clock limit of a turn: a week.
pub const MAX_TIMEOUT_MS: u64 = 7 * 24 * 3600 * 1000;

/// How long a permission request waits for an answer when the caller gives no limit.
pub const DEFAULT_PERMISSION_TIMEOUT_SECS: u64 = 300;

/// Whether a tool outside the agent's allow list is refused or asked about.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PermissionMode {
    /// Refused at once, and reported as a denied `message` (the default).
    #[default]
    Deny,
    /// Asked of the caller: a `permission.requested` event, answered with
    /// `Runner::answer`; only for an agent whose capabilities say it can ask.
    Ask,
}

/// How a session's permission requests are handled; kept on its record, so a follow-up
/// turn asks as the first did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Permissions {
    /// Deny or ask.
    #[serde(default)]
    pub mode: PermissionMode,
    /// How long a request waits for an answer before it is denied, in seconds
    /// ([`DEFAULT_PERMISSION_TIMEOUT_SECS`] when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
}

impl Permissions {
    /// Asking, with the default time limit.
    pub fn ask() -> Self {
        Self {
            mode: PermissionMode::Ask,
            timeout_secs: None,
        }
    }

    /// Whether these are the defaults (kept off a record that uses them).
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// How long a request waits for an answer.
    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.timeout_secs.unwrap_or(DEFAULT_PERMISSION_TIMEOUT_SECS))
    }
}

/// A caller's answer to a `permission.requested` event (`Runner::answer`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", tag = "behavior", deny_unknown_fields)]
pub enum PermissionAnswer {
    /// Let the tool run, with its input changed when `updated_input` is given.
    Allow {
        /// The input to run the tool with instead of the one asked for.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        updated_input: Option<serde_json::Value>,
    },
    /// Refuse it; the agent is told `message`.
    Deny {
        /// What the agent is told.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
}

/// How an approve goes beyond its message (runner-core's `LocalRunner::approve_with`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ApproveOptions {
    /// Approve even when the run was verified and the sandbox's tests failed or could not
    /// run (`codehands approve --force`).
    pub force: bool,
}

/// What a reject did (runner-core's `LocalRunner::reject_session`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RejectResult {
    /// The session, now `rejected`.
    pub session_id: SessionId,
    /// The branch, when it was kept because the agent committed to it (as `recover` keeps
    /// a failed session's); `None` when it was deleted or never made.
    #[serde(default)]
    pub kept_branch: Option<String>,
}

/// One file's share of a diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FileStat {
    /// The path, relative to the repo root (the new path for a rename).
    pub path: String,
    /// The old path, for a rename.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    /// Lines added.
    pub insertions: u64,
    /// Lines removed.
    pub deletions: u64,
    /// True for a binary file (no line counts).
    #[serde(default)]
    pub binary: bool,
    /// True for a file over the diff's size limit: the patch says "too large to show" and
    /// has no line counts; approve still commits it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub too_large: bool,
}

/// How much changed since the base commit.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DiffStat {
    /// How many files changed.
    pub files_changed: u64,
    /// Lines added in all.
    pub insertions: u64,
    /// Lines removed in all.
    pub deletions: u64,
    /// Per file, sorted by path.
    #[serde(default)]
    pub files: Vec<FileStat>,
}

impl DiffStat {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.files_changed == 0
    }

    /// Builds the totals from per-file stats.
    pub fn from_files(mut files: Vec<FileStat>) -> Self {
        files.sort_by(|a, b| a.path.cmp(&b.path));
        Self {
            files_changed: files.len() as u64,
            insertions: files.iter().map(|f| f.insertions).sum(),
            deletions: files.iter().map(|f| f.deletions).sum(),
            files,
        }
    }
}

/// What `Runner::diff` returns.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DiffResult {
    /// A unified patch that `git apply` accepts on the base commit.
    pub patch: String,
    /// The stat of the same change.
    pub stat: DiffStat,
}

/// What `Runner::approve` returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApproveResult {
    /// The branch holding the commit.
    pub branch: String,
    /// The commit's id.
    pub commit: String,
}

/// Something recover() could not clean up; tried again next time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CleanupError {
    /// The session concerned, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
    /// The path concerned.
    pub path: PathBuf,
    /// What went wrong.
    pub message: String,
}

/// What recover() did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecoveryReport {
    /// Sessions that were queued or running with nothing to finish from (a start cut short
    /// before its agent could run), now failed.
    pub failed: Vec<SessionId>,
    /// Running sessions whose agent was alive with nobody supervising it: supervised again.
    #[serde(default)]
    pub adopted: Vec<SessionId>,
    /// Running sessions whose agent ended while nobody watched: finished from its output.
    #[serde(default)]
    pub finished: Vec<SessionId>,
    /// Branches kept because the agent had committed to them.
    #[serde(default)]
    pub kept_branches: Vec<String>,
    /// Worktrees on disk with no live session, removed.
    #[serde(default)]
    pub removed_worktrees: Vec<PathBuf>,
    /// What could not be cleaned.
    #[serde(default)]
    pub cleanup_errors: Vec<CleanupError>,
    /// Records that could not be read, with why.
    #[serde(default)]
    pub unreadable: Vec<CleanupError>,
    /// Worktrees kept because a record that could not be read may own them; fix or move
    /// the record away, and the next recover decides.
    #[serde(default)]
    pub kept_worktrees: Vec<PathBuf>,
    /// Sessions whose approve or reject was cut short, now finished or taken back.
    #[serde(default)]
    pub settled: Vec<SessionId>,
    /// Tasks whose pick or reject was cut short, now finished or taken back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settled_tasks: Vec<crate::ids::TaskId>,
    /// Workflows whose driver had died between two phases, driven on to their end.
    #[serde(default)]
    pub resumed_workflows: Vec<SessionId>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_reads_as_people_write_it_and_refuses_the_rest() {
        assert_eq!(parse_timeout("10m").unwrap(), 600_000);
        assert_eq!(parse_timeout(" 1h 30m ").unwrap(), 5_400_000);
        assert_eq!(parse_timeout("90s").unwrap(), 90_000);
        for bad in ["soon", "", "10", "500ms", "8days", "-1m"] {
            let refused = parse_timeout(bad).unwrap_err();
            assert!(
                refused.message().contains("`10m`") || refused.message().contains("1s to 7 days"),
                "{bad}: {refused}"
            );
        }
    }
}

/// What [`Runner::gc`](crate::traits::runner::Runner::gc) removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcOptions {
    /// Sessions whose record last changed longer ago than this go.
    pub older_than: Duration,
    /// Only say what would go; change nothing.
    pub dry_run: bool,
}

impl Default for GcOptions {
    fn default() -> Self {
        Self {
            older_than: Duration::from_secs(14 * 86_400),
            dry_run: false,
        }
    }
}

/// What [`Runner::gc`](crate::traits::runner::Runner::gc) did (or, with `dry_run`, would do).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GcReport {
    /// The sessions rejected (or that would be).
    pub removed: Vec<SessionId>,
    /// Branches kept because the agent committed to them.
    pub kept_branches: Vec<String>,
    /// Sessions that could not be removed, with why.
    pub errors: Vec<(SessionId, String)>,
    /// Disk use of each repo's worktrees (by repo path), before and after.
    pub disk: Vec<RepoDisk>,
}

/// The disk one repo's worktrees use under the home.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RepoDisk {
    /// The repository.
    pub repo: String,
    /// Bytes in its worktrees before.
    pub bytes_before: u64,
    /// Bytes in its worktrees after (the same as before with `dry_run`).
    pub bytes_after: u64,
}
