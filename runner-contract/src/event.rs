//! The events: the product. One envelope, a typed payload per event type.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::SessionId;
use crate::options::DiffStat;

/// One event as a daemon receives it:
/// `{ "sessionId", "seq", "ts", "type", "payload", "raw" }`.
// No `deny_unknown_fields` here: serde does not support it together with `flatten`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// The session this event belongs to.
    pub session_id: SessionId,
    /// 1, 2, 3 … per session, continuing across resume.
    pub seq: u64,
    /// When the event was made, RFC 3339 with milliseconds, UTC.
    pub ts: String,
    /// The type and its payload.
    #[serde(flatten)]
    pub body: EventBody,
    /// The agent's original output line, where there is one.
    #[serde(default)]
    pub raw: Option<String>,
}

/// The event types, each with its payload. In JSON: `"type": "task.started", "payload": {…}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", content = "payload")]
pub enum EventBody {
    /// The agent started (its first line that says so, such as an init or thread-started line).
    #[serde(rename = "task.started")]
    TaskStarted(TaskStarted),
    /// Text from the agent or about the run; `denied: true` for a refused tool.
    #[serde(rename = "message")]
    Message(Message),
    /// The agent read files (Read, Glob, Grep).
    #[serde(rename = "file.read")]
    FileRead(FileRead),
    /// The agent changed a file (Edit, Write, MultiEdit, NotebookEdit, a patch).
    #[serde(rename = "file.changed")]
    FileChanged(FileChanged),
    /// The agent started a command.
    #[serde(rename = "command.started")]
    CommandStarted(CommandStarted),
    /// A command ended.
    #[serde(rename = "command.finished")]
    CommandFinished(CommandFinished),
    /// A test run's outcome, seen in a command's output or from the sandbox.
    #[serde(rename = "test.result")]
    TestResult(TestResult),
    /// Something about the model provider: rate limits, expired auth, outages.
    #[serde(rename = "provider.status")]
    ProviderStatus(ProviderStatus),
    /// The agent finished; held back until its process exited, so it carries `diffStat`.
    #[serde(rename = "task.finished")]
    TaskFinished(TaskFinished),
    /// The run failed; final.
    #[serde(rename = "task.failed")]
    TaskFailed(TaskFailed),
    /// The run was stopped by request; the session can be resumed.
    #[serde(rename = "task.stopped")]
    TaskStopped(TaskStopped),
    /// A person should approve or reject; right after `task.finished`, never after a stop or failure.
    #[serde(rename = "approval.requested")]
    ApprovalRequested(ApprovalRequested),
    /// The agent asks to use a tool outside its allow list; the caller answers with
    /// `Runner::answer` (only in a run that asks, see `StartOptions::permissions`).
    #[serde(rename = "permission.requested")]
    PermissionRequested(PermissionRequested),
    /// How a permission request ended: allowed, denied, or denied for want of an answer.
    #[serde(rename = "permission.resolved")]
    PermissionResolved(PermissionResolved),
    /// A phase of a workflow began: its turn's events follow (`LocalRunner::run_workflow`).
    #[serde(rename = "phase.started")]
    PhaseStarted(PhaseStarted),
    /// A phase of a workflow ended, with what its turn cost.
    #[serde(rename = "phase.finished")]
    PhaseFinished(PhaseFinished),
    /// One finding of a review phase, read from the reviewer's JSON answer.
    #[serde(rename = "review.finding")]
    ReviewFinding(crate::workflow::Finding),
    /// A command in the box failed for want of a program the caller's PATH has: the box
    /// hides it (a warning, right after the `command.finished` it explains).
    #[serde(rename = "box.hidden")]
    BoxHidden(BoxHidden),
}

impl EventBody {
    /// The `type` string of this event.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::TaskStarted(_) => "task.started",
            Self::Message(_) => "message",
            Self::FileRead(_) => "file.read",
            Self::FileChanged(_) => "file.changed",
            Self::CommandStarted(_) => "command.started",
            Self::CommandFinished(_) => "command.finished",
            Self::TestResult(_) => "test.result",
            Self::ProviderStatus(_) => "provider.status",
            Self::TaskFinished(_) => "task.finished",
            Self::TaskFailed(_) => "task.failed",
            Self::TaskStopped(_) => "task.stopped",
            Self::ApprovalRequested(_) => "approval.requested",
            Self::PermissionRequested(_) => "permission.requested",
            Self::PermissionResolved(_) => "permission.resolved",
            Self::PhaseStarted(_) => "phase.started",
            Self::PhaseFinished(_) => "phase.finished",
            Self::ReviewFinding(_) => "review.finding",
            Self::BoxHidden(_) => "box.hidden",
        }
    }

    /// Whether this event ends a run (nothing of the run follows it but `approval.requested`).
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            Self::TaskFinished(_) | Self::TaskFailed(_) | Self::TaskStopped(_)
        )
    }
}

/// Payload of `task.started`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskStarted {
    /// The model the agent reports, if it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The agent's own session or thread id (kept for resume).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_session_id: Option<String>,
    /// The folder the agent works in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The tools the agent says it has.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// Whether this start is a resume of an earlier run.
    #[serde(default)]
    pub resumed: bool,
    /// Whether the agent can continue this conversation in a later turn (a follow-up, a
    /// resume), when it says so as the turn starts: `false` for an ACP agent whose
    /// `initialize` offers neither `session/load` nor `session/resume`, and a follow-up is
    /// then refused before anything is touched. Absent: as the agent's capabilities say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub can_continue: Option<bool>,
}

/// Who a message comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MessageRole {
    /// The agent's own text.
    #[default]
    Assistant,
    /// Said by the agent program or by codehands about the run (refusals, warnings, unparsable lines).
    System,
    /// The caller's input as the agent took it in (a follow-up or a message that steers a
    /// turn in flight), where the agent says so.
    User,
}

/// Payload of `message`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Message {
    /// The text.
    pub text: String,
    /// Who said it.
    #[serde(default)]
    pub role: MessageRole,
    /// True when this reports a tool the agent was refused.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub denied: bool,
    /// The tool concerned, for refusals and tool errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
}

/// Payload of `file.read`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FileRead {
    /// The file, folder or pattern read.
    pub path: String,
    /// The tool that read it (Read, Glob, Grep …).
    pub tool: String,
    /// The agent's id for the tool call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
}

/// Payload of `file.changed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FileChanged {
    /// The file changed.
    pub path: String,
    /// The tool that changed it (Edit, Write, MultiEdit, NotebookEdit, apply_patch …).
    pub tool: String,
    /// How it changed, when the agent says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<FileChangeKind>,
    /// The agent's id for the tool call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
}

/// How a file changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FileChangeKind {
    /// A new file.
    Added,
    /// An existing file changed.
    Modified,
    /// The file was removed.
    Deleted,
    /// The file moved.
    Renamed,
}

/// Payload of `command.started`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CommandStarted {
    /// The command line as the agent gave it.
    pub command: String,
    /// The agent's id for the tool call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
}

/// Payload of `command.finished`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CommandFinished {
    /// The command line, matched from its start by tool use id.
    pub command: String,
    /// The exit code, when the agent reports one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Whether the agent marked the result as an error.
    #[serde(default)]
    pub is_error: bool,
    /// The command's output as the agent saw it.
    #[serde(default)]
    pub output: String,
    /// The agent's id for the tool call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
}

/// Payload of `box.hidden`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BoxHidden {
    /// The command line that failed.
    pub command: String,
    /// The program it did not find (`cargo`).
    pub program: String,
    /// Where the caller's PATH has it.
    pub found: String,
    /// The folder that brings it in: what `[box] read` would name.
    pub folder: String,
}

/// Payload of `test.result`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TestResult {
    /// The test command.
    pub command: String,
    /// Whether the tests passed: false when the output shows failures even if the exit code says 0.
    pub passed: bool,
    /// The exit code, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// True when the tests ran in the locked sandbox rather than by the agent.
    #[serde(default)]
    pub sandboxed: bool,
    /// A one-line summary (for example "2 failing").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The agent's id for the tool call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// Set when the sandbox could not run the tests at all (a tool missing from the image,
    /// no engine …): then `passed` is false but no test failed, and `summary` says why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub could_not_run: Option<crate::traits::sandbox::SandboxErrorKind>,
}

/// What the provider said, as one of a few states a person can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProviderState {
    /// Too many requests; see `resetsAt`.
    RateLimited,
    /// The login or API key is no longer accepted.
    AuthExpired,
    /// A usage or budget limit was reached.
    UsageLimit,
    /// The subscription or billing is not active.
    SubscriptionInactive,
    /// The provider is overloaded or down.
    Down,
}

/// Payload of `provider.status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProviderStatus {
    /// The state.
    pub status: ProviderState,
    /// What the agent said.
    pub message: String,
    /// When a rate limit lifts (RFC 3339), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resets_at: Option<String>,
    /// The HTTP status behind it, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// Which retry this is, when the agent is retrying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_attempt: Option<u32>,
}

/// Payload of `task.finished`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskFinished {
    /// The agent's final text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// What the run cost in US dollars, exactly as the agent reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Token usage, exactly as the agent reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<serde_json::Value>,
    /// How long the agent says it took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// How many model turns it took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_turns: Option<u64>,
    /// The change since base, filled in by the runner once the process has exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff_stat: Option<DiffStat>,
    /// True when the turn ended because the caller interrupted it (`Runner::interrupt`):
    /// the change so far awaits approval, and a follow-up can redirect the agent.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

/// Why a run failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The agent reported an error result.
    AgentError,
    /// The agent program could not be started.
    AgentUnavailable,
    /// The agent exited without a result.
    NoResult,
    /// The provider refused the credentials.
    AuthFailed,
    /// The budget ran out.
    BudgetExhausted,
    /// No output for too long (the idle watchdog).
    Idle,
    /// A result was printed but the process did not exit (the linger watchdog).
    Linger,
    /// The turn ran past its wall-clock limit (`--timeout`); its change is kept for
    /// inspection until it is rejected or collected.
    Timeout,
    /// The agent repeated itself: the same edit or the same command many times in a row
    /// (the repeat guard); its change is kept for inspection.
    Repeating,
    /// The input was refused (repo, prompt, options).
    InvalidInput,
    /// The repository could not be prepared.
    Vcs,
    /// The runner went away while the session ran (found by recover()).
    Interrupted,
    /// The disk holding the run's files or its worktree was full or read-only: free space,
    /// then run `codehands recover`.
    DiskFull,
    /// A workflow's phase broke its rules: a read-only phase changed the worktree, a
    /// reviewer's answer was not the JSON findings asked for, a gate's tests failed.
    Phase,
    /// Anything else.
    Internal,
}

/// Payload of `task.failed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskFailed {
    /// Why, as a kind.
    pub reason: FailureKind,
    /// Why, in words that say what to do.
    pub message: String,
    /// The end of the agent's stderr, when it helps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr: Option<String>,
    /// The exit code, when the process exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// What it cost so far, exactly as the agent reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// Payload of `task.stopped`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskStopped {
    /// Why, when it was not a plain request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Payload of `approval.requested`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApprovalRequested {
    /// The branch that approve commits to.
    pub branch: String,
    /// The change to decide on.
    pub diff_stat: DiffStat,
}

/// Payload of `permission.requested`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PermissionRequested {
    /// The agent's id of the request, which an answer names.
    pub request_id: String,
    /// The tool (for example `Bash`).
    pub tool: String,
    /// The tool's input, as the agent would run it.
    pub input: serde_json::Value,
    /// What the agent suggests (for example rules that would allow it from now on), as it
    /// says them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggestions: Option<serde_json::Value>,
    /// The tool use this request is for, when the agent names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
}

/// How a permission request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PermissionOutcome {
    /// The caller allowed it.
    Allowed,
    /// The caller denied it.
    Denied,
    /// Nobody answered in time: it was denied.
    TimedOut,
}

/// Payload of `permission.resolved`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PermissionResolved {
    /// The request it answers.
    pub request_id: String,
    /// How it ended.
    pub outcome: PermissionOutcome,
    /// The message the agent was given with a denial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The input the caller changed the tool's to, when it allowed with a change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_input: Option<serde_json::Value>,
}

/// Payload of `phase.started`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PhaseStarted {
    /// The phase's name in its workflow.
    pub name: String,
    /// What it does.
    pub kind: crate::workflow::PhaseKind,
    /// The agent that runs it.
    pub agent: crate::agent_name::AgentName,
    /// The model, when the workflow names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Whether the agent may only read.
    #[serde(default)]
    pub read_only: bool,
    /// Which review round this turn belongs to: 1, then 2 … after findings went back.
    pub round: u32,
}

/// Payload of `phase.finished`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PhaseFinished {
    /// The phase's name in its workflow.
    pub name: String,
    /// The agent that ran it.
    pub agent: crate::agent_name::AgentName,
    /// The model, when the workflow names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// What the phase's turn cost in US dollars, as its agent reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Which review round this turn belonged to.
    pub round: u32,
}
