//! Tasks: one prompt given to several attempts (agents, models) from one base commit, side
//! by side, one picked. The record on disk (`$CODEHANDS_HOME/tasks/<taskId>.json`), the
//! options of a start and the side-by-side report; runner-core keeps and acts on them
//! (`LocalRunner::start_task`, `pick`, `reject_task`, `task_report`).

use std::fmt;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::agent_name::AgentName;
use crate::error::{Error, ErrorKind, Result};
use crate::ids::SessionId;
use crate::options::{DiffStat, Isolation, Permissions};
use crate::report::TestOutcome;
use crate::session::{SessionState, TokenCounts};
use crate::traits::runner::EventStream;

pub use crate::ids::TaskId;

/// One attempt asked for: an agent and, optionally, a model in the agent's own naming.
/// Written `AGENT[:MODEL]` on the command line (`my-agent:large`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AttemptSpec {
    /// The agent, by name.
    pub agent: AgentName,
    /// The model; the agent's default when absent.
    #[serde(default)]
    pub model: Option<String>,
    /// The id of the attempt's session; a random one when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
}

impl AttemptSpec {
    /// An attempt of `agent` with its default model.
    pub fn new(agent: AgentName) -> Self {
        Self {
            agent,
            model: None,
            session_id: None,
        }
    }

    /// Parses `AGENT[:MODEL]`; the model is everything after the first `:`.
    pub fn parse(text: &str) -> Result<Self> {
        let (agent, model) = match text.split_once(':') {
            Some((agent, model)) => (agent, Some(model)),
            None => (text, None),
        };
        let agent = AgentName::parse(agent.trim())?;
        let model = match model.map(str::trim) {
            Some("") => {
                return Err(Error::invalid_input(format!(
                    "attempt {text:?} names no model after `:`: write AGENT or AGENT:MODEL"
                )));
            }
            other => other.map(str::to_owned),
        };
        Ok(Self {
            agent,
            model,
            session_id: None,
        })
    }

    /// A comma-separated list of `AGENT[:MODEL]`, at least one; at most [`MAX_ATTEMPTS`].
    pub fn parse_list(text: &str) -> Result<Vec<Self>> {
        let attempts = text
            .split(',')
            .map(|part| Self::parse(part.trim()))
            .collect::<Result<Vec<_>>>()?;
        check_count(attempts.len())?;
        Ok(attempts)
    }
}

impl fmt::Display for AttemptSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.model {
            Some(model) => write!(f, "{}:{model}", self.agent),
            None => write!(f, "{}", self.agent),
        }
    }
}

/// The most attempts one task may have: each is a worktree and an agent at once.
pub const MAX_ATTEMPTS: usize = 16;

/// Refuses a count of attempts that is zero or over [`MAX_ATTEMPTS`].
pub fn check_count(n: usize) -> Result<()> {
    if n == 0 || n > MAX_ATTEMPTS {
        return Err(Error::invalid_input(format!(
            "a task has 1 to {MAX_ATTEMPTS} attempts, not {n}: pass a list like \
             `agent-a,agent-b:model` or a number"
        )));
    }
    Ok(())
}

/// What `LocalRunner::start_task` needs: the options every attempt shares, and the attempts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskOptions {
    /// The caller's id for the task.
    pub task_id: TaskId,
    /// The person's repository.
    pub repo_path: PathBuf,
    /// What every attempt should do.
    pub prompt: String,
    /// One session per entry, in this order.
    pub attempts: Vec<AttemptSpec>,
    /// The budget of the whole task in US dollars, split evenly across the attempts (each
    /// gets `budgetUsd / attempts`); each attempt gets the default budget when absent.
    #[serde(default)]
    pub budget_usd: Option<f64>,
    /// Run the repo's tests in the sandbox after each attempt.
    #[serde(default)]
    pub verify: bool,
    /// Every attempt's permissions.
    #[serde(default)]
    pub permissions: Permissions,
    /// Every attempt's isolation.
    #[serde(default)]
    pub isolation: Isolation,
    /// Every attempt's wall-clock limit in milliseconds: an attempt still running after it
    /// fails with reason `timeout`, its change kept. No limit when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Where every attempt's box runs: on a Docker engine or swarm each attempt is a box of
    /// its own there (README.md, "Where runs run"). Anything but `local` needs `isolation: box`.
    #[serde(default, skip_serializing_if = "crate::options::Engine::is_local")]
    pub engine: crate::options::Engine,
}

/// Where a task is: its attempts run and wait on their own; these states journal the pick
/// and the reject of the whole task, which a crash may cut short.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// Attempts run or wait for a person.
    Open,
    /// A pick is under way (`picked` names the attempt): the next command on the task or
    /// `recover` finishes it (the attempt is approved: the others are rejected) or takes it
    /// back to `open` (it is not).
    Picking,
    /// One attempt approved; the others rejected, unless the pick kept them (final).
    Picked,
    /// Every attempt is being rejected; the next command or `recover` finishes it.
    Rejecting,
    /// Every attempt rejected (final).
    Rejected,
}

impl TaskState {
    /// Whether `self → to` is legal: `open → picking → picked | open`,
    /// `open → rejecting → rejected`.
    pub fn can_move_to(self, to: TaskState) -> bool {
        use TaskState::*;
        matches!(
            (self, to),
            (Open, Picking | Rejecting) | (Picking, Picked | Open) | (Rejecting, Rejected)
        )
    }

    /// `open`, `picking` …, as the records spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Picking => "picking",
            Self::Picked => "picked",
            Self::Rejecting => "rejecting",
            Self::Rejected => "rejected",
        }
    }
}

impl fmt::Display for TaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One attempt of a task: its agent and model, and the session that runs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskAttempt {
    /// The agent, by name.
    pub agent: AgentName,
    /// The model asked for.
    #[serde(default)]
    pub model: Option<String>,
    /// The session of this attempt.
    pub session_id: SessionId,
    /// The test box's verdict on the attempt's change, once its tests ran there (`verify`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<AttemptVerdict>,
}

/// The test box's verdict on one attempt, as the task's record keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AttemptVerdict {
    /// Passed, failed, or the box could not run the tests.
    pub outcome: VerifyVerdict,
    /// The test command the box ran.
    pub command: String,
    /// One line a person can read: why the tests failed or could not run.
    pub reason: String,
}

/// A task on disk: `$CODEHANDS_HOME/tasks/<taskId>.json`, written atomically, read strictly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskRecord {
    /// The task's id.
    pub task_id: TaskId,
    /// Where the task is (the pick's and the reject's journal).
    pub state: TaskState,
    /// The person's repository.
    pub repo_path: PathBuf,
    /// The commit every attempt started from.
    pub base_commit: String,
    /// What every attempt was asked to do.
    pub prompt: String,
    /// The attempts, in the order they were asked for.
    pub attempts: Vec<TaskAttempt>,
    /// The budget of the whole task in US dollars, when the caller gave one.
    #[serde(default)]
    pub budget_usd: Option<f64>,
    /// The attempt being picked or picked.
    #[serde(default)]
    pub picked: Option<SessionId>,
    /// Whether the pick keeps the other attempts instead of rejecting them.
    #[serde(default)]
    pub keep_others: bool,
    /// When the task was made (RFC 3339).
    pub created_at: String,
    /// When the record last changed (RFC 3339).
    pub updated_at: String,
}

impl TaskRecord {
    /// Moves to `to`, checked against the table; `what` names the action for the error.
    pub fn move_to(&mut self, to: TaskState, what: &str) -> Result<()> {
        if !self.state.can_move_to(to) {
            return Err(Error::new(
                ErrorKind::IllegalMove,
                format!(
                    "cannot {what}: task {} is {}, and {} → {to} is not a legal move",
                    self.task_id, self.state, self.state
                ),
            ));
        }
        self.state = to;
        Ok(())
    }

    /// Which attempt (1, 2 …) session `id` is, if it is one of this task's.
    pub fn attempt_of(&self, id: &SessionId) -> Option<usize> {
        self.attempts
            .iter()
            .position(|a| a.session_id == *id)
            .map(|i| i + 1)
    }
}

/// The sandbox's verdict on an attempt's change (`--verify`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VerifyVerdict {
    /// The tests ran in the locked box and passed.
    Passed,
    /// They ran and failed.
    Failed,
    /// The box could not run them.
    CouldNotRun,
}

/// One attempt, side by side with the others: `codehands task ID --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AttemptReport {
    /// 1, 2 …, in the order the attempts were asked for.
    pub attempt: usize,
    /// The attempt's session.
    pub session_id: SessionId,
    /// The agent.
    pub agent: AgentName,
    /// The model asked for, else the one the agent reported.
    #[serde(default)]
    pub model: Option<String>,
    /// The session's state.
    pub state: SessionState,
    /// The session's branch.
    pub branch: String,
    /// From its first event to the end of its last run, in milliseconds.
    #[serde(default)]
    pub duration_ms: Option<u64>,
    /// What it cost in US dollars.
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// The tokens it used.
    #[serde(default)]
    pub tokens: Option<TokenCounts>,
    /// Its change since the base commit.
    #[serde(default)]
    pub diff_stat: Option<DiffStat>,
    /// The files it changed, sorted.
    pub files_changed: Vec<String>,
    /// The test runs, by the agent or in the sandbox, in order.
    pub tests: Vec<TestOutcome>,
    /// The sandbox's verdict, for a verified attempt.
    #[serde(default)]
    pub verify: Option<VerifyVerdict>,
    /// The test box's verdict with its command and reason, for a verified attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<AttemptVerdict>,
    /// Whether `costUsd` was worked out from the tokens and the model's price (the agent
    /// reported no cost).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cost_estimated: bool,
    /// Whether it passes: finished, and its verdict passed (verified) or its last test run
    /// passed (not verified). An attempt that ran no test does not pass.
    pub passing: bool,
    /// The cheapest of the passing attempts (one at most; the first on a tie).
    pub cheapest_passing: bool,
    /// Its place in the ranking (1 is the best): passing first, then the smaller diff,
    /// then the lower cost, then the shorter time.
    #[serde(default)]
    pub rank: usize,
    /// Why it is in that place, in words.
    #[serde(default)]
    pub why: String,
    /// Why it failed, for a failed attempt.
    #[serde(default)]
    pub failure: Option<String>,
    /// How many tool uses its agent was refused (each a `message` with `denied: true`, or a
    /// permission request not allowed).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub refused: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// A task's attempts side by side: `codehands task ID --json` and `LocalRunner::task_report`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskReport {
    /// The task's id.
    pub task_id: TaskId,
    /// Where the task is.
    pub state: TaskState,
    /// The person's repository.
    pub repo_path: PathBuf,
    /// The commit every attempt started from.
    pub base_commit: String,
    /// The prompt.
    pub prompt: String,
    /// The attempt picked, once one is.
    #[serde(default)]
    pub picked: Option<SessionId>,
    /// Every attempt, in order.
    pub attempts: Vec<AttemptReport>,
    /// What the attempts cost together in US dollars (those that say).
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// Whether every attempt's run has ended (none is queued or running).
    pub settled: bool,
    /// The best attempt by the ranking, when one passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best: Option<SessionId>,
}

/// What a pick did (`LocalRunner::pick`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PickResult {
    /// The task.
    pub task_id: TaskId,
    /// The attempt approved.
    pub session_id: SessionId,
    /// Its branch.
    pub branch: String,
    /// Its commit.
    pub commit: String,
    /// The other attempts rejected by the pick.
    pub rejected: Vec<SessionId>,
    /// The other attempts left as they were (`keep_others`, or already decided).
    pub kept: Vec<SessionId>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_parse_agent_and_model() {
        let list = AttemptSpec::parse_list("agent-a, agent-b,agent-a:large").unwrap();
        assert_eq!(list.len(), 3);
        assert_eq!(list[1].agent.as_str(), "agent-b");
        assert_eq!(list[2].model.as_deref(), Some("large"));
        assert_eq!(list[2].to_string(), "agent-a:large");
        for bad in ["", "agent-a:", "Agent", "a,,b", "../x"] {
            assert!(AttemptSpec::parse_list(bad).is_err(), "accepted {bad:?}");
        }
        let many = vec!["fake"; MAX_ATTEMPTS + 1].join(",");
        assert!(AttemptSpec::parse_list(&many).is_err());
    }

    #[test]
    fn task_ids_are_uuids_before_they_are_paths() {
        for bad in ["../x", "", "a/b", "3f2a9c1e"] {
            assert!(TaskId::parse(bad).is_err(), "accepted {bad:?}");
        }
        let id = TaskId::new_random();
        assert_eq!(TaskId::parse(&id.to_string()).unwrap(), id);
        assert!(serde_json::from_str::<TaskId>("\"../x\"").is_err());
    }

    #[test]
    fn the_task_table_journals_pick_and_reject() {
        use TaskState::*;
        assert!(Open.can_move_to(Picking));
        assert!(Picking.can_move_to(Open));
        assert!(Picking.can_move_to(Picked));
        assert!(Rejecting.can_move_to(Rejected));
        assert!(!Open.can_move_to(Picked));
        assert!(!Picked.can_move_to(Open));
        assert!(!Rejected.can_move_to(Open));
    }
}

/// How a pick goes beyond choosing the attempt.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PickOptions {
    /// The commit message (the prompt's first line when empty).
    pub message: String,
    /// Approve even when the attempt's verify did not pass.
    pub force: bool,
    /// Keep the other attempts as they are instead of rejecting them.
    pub keep_others: bool,
}

/// A task whose attempts have all started.
pub struct StartedTask {
    /// The task's id.
    pub task_id: TaskId,
    /// Each attempt's session and its events, in the order asked for.
    pub attempts: Vec<(SessionId, EventStream)>,
}
