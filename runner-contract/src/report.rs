//! The final report of a session, as a caller reads it (`codehands report ID --json`,
//! `Runner::report`): the types only. runner-core builds it from a session's record and log.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::agent_name::AgentName;
use crate::event::{FailureKind, FileChangeKind};
use crate::ids::SessionId;
use crate::options::DiffStat;
use crate::session::{SessionState, TokenCounts};

/// The key that counts commands in [`RunReport::tool_calls`]. `command.started` does not say
/// which of the agent's tools ran it (`Bash`, or a command-execution item), and
/// runner-core names no agent, so every agent's commands are counted under this one kind.
pub const COMMAND_TOOL: &str = "command";

/// The final report of a session: `codehands report ID --json` and `Runner::report(id)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunReport {
    /// The session's id.
    pub session_id: SessionId,
    /// The session's state, from its record.
    pub state: SessionState,
    /// The task the session is an attempt of, when it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<crate::ids::TaskId>,
    /// How the last run of the session ended, from its log.
    pub ended: RunEnding,
    /// The `ts` of the session's first event (RFC 3339), if it has any.
    #[serde(default)]
    pub started_at: Option<String>,
    /// The `ts` of the event that ended the last run (RFC 3339); `null` while it runs.
    #[serde(default)]
    pub ended_at: Option<String>,
    /// From `startedAt` to `endedAt` in milliseconds, pauses between resumed runs included.
    #[serde(default)]
    pub duration_ms: Option<u64>,
    /// The agent's name.
    pub agent: AgentName,
    /// The agent's program, as the caller resolved it.
    #[serde(default)]
    pub agent_program: Option<String>,
    /// The agent program's version, as the caller probed it.
    #[serde(default)]
    pub agent_version: Option<String>,
    /// The model: the one asked for, else the one the agent last reported in `task.started`.
    #[serde(default)]
    pub model: Option<String>,
    /// How many runs the agent made in this session (its `task.started` events).
    pub turns: u64,
    /// Tool calls by tool name; commands are counted under `"command"`. Each call counts once,
    /// however many events it made (one patch changing two files, a read that then failed).
    pub tool_calls: BTreeMap<String, u64>,
    /// The paths the agent read, sorted, each once.
    pub files_read: Vec<String>,
    /// The paths the agent changed, sorted, each once, with how they changed.
    pub files_changed: Vec<ChangedFile>,
    /// The commands the agent ran, in the order they ended.
    pub commands: Vec<CommandRun>,
    /// The test runs, by the agent or in the sandbox, in order.
    pub tests: Vec<TestOutcome>,
    /// The tools the agent was refused, in order.
    pub denied_tools: Vec<DeniedTool>,
    /// The agent's last text: its last assistant message, else its last result.
    #[serde(default)]
    pub last_assistant_text: Option<String>,
    // `cost_of` is runner-core's; the words stay as they are, for the schema's description.
    #[allow(rustdoc::broken_intra_doc_links)]
    /// What every run of the session cost in US dollars, summed ([`cost_of`]).
    #[serde(default)]
    pub cost_usd: Option<f64>,
    // `cost_of` is runner-core's; the words stay as they are, for the schema's description.
    #[allow(rustdoc::broken_intra_doc_links)]
    /// The tokens every run of the session used, summed ([`cost_of`]).
    #[serde(default)]
    pub tokens: Option<TokenCounts>,
    /// The change since base, from the last `task.finished` or `approval.requested`.
    #[serde(default)]
    pub diff_stat: Option<DiffStat>,
    /// How many events the log holds.
    pub event_count: u64,
    /// The seq of the log's last event (0 for an empty log).
    pub last_seq: u64,
}

/// How the last run of a session ended, as its log says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum RunEnding {
    /// `task.finished`: the agent finished.
    Finished {
        /// Whether `approval.requested` followed (the change waits for a person).
        approval_requested: bool,
    },
    /// `task.failed`: the run failed.
    Failed {
        /// Why, as a kind.
        reason: FailureKind,
        /// Why, in words.
        message: String,
        /// The agent's exit code, when it exited.
        #[serde(default)]
        exit_code: Option<i32>,
    },
    /// `task.stopped`: stopped by request; the session can be resumed.
    Stopped {
        /// Why, when it was not a plain request.
        #[serde(default)]
        reason: Option<String>,
    },
    /// The run is still going (the record says `queued` or `running`, or a workflow's
    /// driver is between two phases).
    Running,
    /// A workflow whose driver went away between two phases: nobody drives it now; the
    /// next command that looks at the session goes on with it (or `codehands recover`).
    Stalled {
        /// The phase next.
        phase: String,
    },
    /// The record says the run is over but the log does not say how (a log cut short).
    Unknown,
}

/// A path the agent changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChangedFile {
    /// The path, as the agent named it.
    pub path: String,
    /// How it changed over the session, when the agent said: a file added and then edited
    /// stays added, a deletion wins. The diff stat is the authority on the end result.
    #[serde(default)]
    pub change: Option<FileChangeKind>,
}

/// A command the agent ran, from its `command.finished`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CommandRun {
    /// The command line.
    pub command: String,
    /// The exit code, when the agent reported one.
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// Whether the agent marked the result as an error.
    pub is_error: bool,
}

/// A test run, from its `test.result`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TestOutcome {
    /// The test command.
    pub command: String,
    /// Whether the tests passed (false when the output shows failures behind exit code 0).
    pub passed: bool,
    /// The exit code, when known.
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// True when the tests ran in the locked sandbox rather than by the agent.
    pub sandboxed: bool,
    /// A one-line summary, when there is one.
    #[serde(default)]
    pub summary: Option<String>,
}

/// A tool the agent was refused, from a `message` with `denied: true`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeniedTool {
    /// The tool, when the agent named it.
    #[serde(default)]
    pub tool: Option<String>,
    /// What the refusal said.
    pub text: String,
}
