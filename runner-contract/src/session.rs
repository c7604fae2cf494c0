//! The record of a session kept on disk, and the check every action on a session starts
//! with. The states and their table of legal moves live in `state`, re-exported here.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::agent_name::AgentName;
use crate::error::{Error, Result};
use crate::ids::SessionId;
use crate::options::StartOptions;
use crate::traits::vcs::WorktreeSpec;

pub use crate::state::SessionState;

impl SessionState {
    /// Refuses, as an illegal move to `reported` named by `what`, a session whose state cannot
    /// move to `to` (the first state the action writes: `approving` for approve). The check
    /// every action on a session starts with.
    pub fn check_move(self, to: SessionState, reported: SessionState, what: &str) -> Result<()> {
        if self.can_move_to(to) {
            Ok(())
        } else {
            Err(Error::illegal_move(self, reported, what))
        }
    }
}

/// What the runner keeps about a session so that diff, approve, reject and resume
/// work after a restart. Never holds a pid (that lives in `runs/<sessionId>/`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionRecord {
    /// The session's id.
    pub session_id: SessionId,
    /// The current state; change it only through [`SessionRecord::move_to`].
    pub state: SessionState,
    /// Which agent runs the session, by name. Records written when names were a closed
    /// list read the same: they held names of this pattern.
    pub agent: AgentName,
    /// The person's repository (never written to except for the branch on approve).
    pub repo_path: PathBuf,
    /// The repo's key (names its worktree and memory folders).
    pub repo_key: String,
    /// The private worktree.
    pub worktree_path: PathBuf,
    /// The session's branch, `codehands/<slug>-<id8>`.
    pub branch: String,
    /// The commit the worktree was made from.
    pub base_commit: String,
    /// The prompt of the first run.
    pub prompt: String,
    /// The model asked for, if any.
    #[serde(default)]
    pub model: Option<String>,
    /// The budget in US dollars for one run.
    #[serde(default)]
    pub budget_usd: Option<f64>,
    /// The agent's own session or thread id, for resume when it differs from ours.
    #[serde(default)]
    pub agent_session_id: Option<String>,
    /// The last seq handed out, so that a resume continues the numbering.
    pub last_seq: u64,
    /// Why the session failed, when it did.
    #[serde(default)]
    pub failure: Option<String>,
    /// The approve's commit: once written while `approving`, and once approved.
    #[serde(default)]
    pub commit: Option<String>,
    /// What the agent's runs of this session cost in US dollars, summed over its turns, as
    /// the agent reported it (`None`: it reported nothing).
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// The tokens the agent's runs of this session used, summed over its turns.
    #[serde(default)]
    pub tokens: Option<TokenCounts>,
    /// How the agent's permission requests are handled, in every turn (deny by default).
    #[serde(
        default,
        skip_serializing_if = "crate::options::Permissions::is_default"
    )]
    pub permissions: crate::options::Permissions,
    /// Whether the agent runs in a box, in every turn (none for a record made before boxes).
    #[serde(default = "crate::options::Isolation::before_boxes")]
    pub isolation: crate::options::Isolation,
    /// Where the box runs, in every turn (`local` for a record made before engines).
    #[serde(default, skip_serializing_if = "crate::options::Engine::is_local")]
    pub engine: crate::options::Engine,
    /// What the person's settings allowed beyond the defaults, in every turn.
    #[serde(default, skip_serializing_if = "crate::Allowances::is_empty")]
    pub allowances: crate::Allowances,
    /// The wall-clock limit of each of its turns in milliseconds, when the caller gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// The task this session is an attempt of, when it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<crate::ids::TaskId>,
    /// A failed turn's change was kept for inspection (a timeout, a repeating agent, a
    /// workflow phase that broke its rules): the worktree stays until the session is
    /// rejected or collected (`failed → rejecting → rejected`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub kept: bool,
    /// When the session was created (RFC 3339).
    pub created_at: String,
    /// When the record last changed (RFC 3339).
    pub updated_at: String,
}

/// Tokens used, as the agent reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TokenCounts {
    /// Input tokens, cached reads and writes included.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
}

/// Both counts added, saturating: a count past `u64::MAX` is a broken report, not a reason to panic.
impl std::ops::Add for TokenCounts {
    type Output = TokenCounts;

    fn add(self, other: TokenCounts) -> TokenCounts {
        TokenCounts {
            input: self.input.saturating_add(other.input),
            output: self.output.saturating_add(other.output),
        }
    }
}

impl SessionRecord {
    /// The record of a session about to start, `queued`: what the caller asked for
    /// (`options`), where its work happens (`worktree`, whose repo is `options.repo_path`'s
    /// repository as found, and `repo_key`), and nothing that happened yet. Every record is
    /// made here; change what differs (a default budget, a test's state) on the value.
    pub fn queued(options: &StartOptions, repo_key: String, worktree: WorktreeSpec) -> Self {
        let now = crate::now_rfc3339();
        Self {
            session_id: options.session_id,
            state: SessionState::Queued,
            agent: options.agent.clone(),
            repo_path: worktree.repo,
            repo_key,
            worktree_path: worktree.path,
            branch: worktree.branch,
            base_commit: worktree.base,
            prompt: options.prompt.clone(),
            model: options.model.clone(),
            budget_usd: options.budget_usd,
            agent_session_id: None,
            last_seq: 0,
            failure: None,
            commit: None,
            cost_usd: None,
            tokens: None,
            permissions: options.permissions,
            isolation: options.isolation,
            engine: options.engine,
            allowances: options.allowances.clone(),
            timeout_ms: options.timeout_ms,
            task_id: options.task_id,
            kept: false,
            created_at: now.clone(),
            updated_at: now,
        }
    }

    /// The worktree this session's git work happens in, as recorded.
    pub fn worktree_spec(&self) -> WorktreeSpec {
        WorktreeSpec {
            repo: self.repo_path.clone(),
            base: self.base_commit.clone(),
            branch: self.branch.clone(),
            path: self.worktree_path.clone(),
        }
    }

    /// Moves to `to` if the table allows it; `what` names the action for the error.
    pub fn move_to(&mut self, to: SessionState, what: &str) -> Result<()> {
        if !self.state.can_move_to(to) {
            return Err(Error::illegal_move(self.state, to, what));
        }
        self.state = to;
        self.updated_at = crate::now_rfc3339();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::SessionState::{self, *};

    /// The move table of [`SessionState::can_move_to`], written out pair by pair so a change to it is a visible diff.
    const LEGAL: &[(SessionState, SessionState)] = &[
        (Queued, Running),
        (Queued, Failed),
        (Running, AwaitingApproval),
        (Running, Stopped),
        (Running, Failed),
        (AwaitingApproval, Failed),
        (Stopped, Running),
        (AwaitingApproval, Running),
        (Stopped, Rejecting),
        (Stopped, Rejected),
        (AwaitingApproval, Approved),
        (AwaitingApproval, Rejected),
        (AwaitingApproval, Approving),
        (Approving, Approved),
        (Approving, AwaitingApproval),
        (AwaitingApproval, Rejecting),
        (Rejecting, Rejected),
        (Failed, Rejecting),
        (Failed, Rejected),
    ];

    #[test]
    fn every_pair_of_states_matches_the_table() {
        let mut legal = 0;
        for from in SessionState::ALL {
            for to in SessionState::ALL {
                let expected = LEGAL.contains(&(from, to));
                assert_eq!(from.can_move_to(to), expected, "{from} → {to}");
                legal += usize::from(expected);
            }
        }
        assert_eq!(legal, LEGAL.len());
    }

    #[test]
    fn final_states_have_no_way_out() {
        for from in SessionState::ALL.into_iter().filter(|s| s.is_final()) {
            // A failed session whose change was kept is rejected to remove it.
            let way_out = |to: &SessionState| from == Failed && matches!(to, Rejecting | Rejected);
            assert!(
                SessionState::ALL
                    .iter()
                    .all(|to| way_out(to) || !from.can_move_to(*to)),
                "{from}"
            );
        }
    }

    #[test]
    fn state_names_match_serde() {
        for s in SessionState::ALL {
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
    }
}
