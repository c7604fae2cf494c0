//! The codehands contract: what an adapter (an agent, a VCS, a sandbox, a memory store) and a
//! caller share, and nothing of the engine. No process is spawned here; runner-core runs
//! sessions over these types and re-exports every module under its old path.
//!
//! - [`event`]: the events, the product; [`EventSequence`] numbers them.
//! - [`session`]: session states, the legal moves, the record on disk.
//! - [`options`]: what callers pass in and get back; [`agent_name`]: how an agent is named;
//!   [`allowances`]: what a person's settings allow a session beyond the defaults.
//! - [`error`]: the one error type, with a kind a caller can act on.
//! - [`ids`]: session ids; [`repo_key`]: the checked key of a repository.
//! - [`report`]: the final report of a session, as a caller reads it.
//! - [`traits`]: `Agent`, `Vcs`, `Sandbox`, `MemoryStore`, and the `Runner` a daemon codes against.
//! - [`framing`]: JSON-lines framing of an agent's output; [`text_lines`]: the parser for
//!   agents that print plain text; [`json_lines`]: the parser for programs that print JSON
//!   lines of their own, mapped by field names; [`testrun`]: recognising test commands and
//!   failures.
//! - [`home`]: the paths under `$CODEHANDS_HOME`; [`private`]: files and folders private to
//!   the user, never reached through a link.
//! - [`present`]: an agent's text made safe for a terminal, and the lines of reports;
//!   [`bypass`]: the one list of arguments that turn off an agent's permission checks.
//! - [`workflow`]: workflows as data (phases with their agents, permissions and gates), a
//!   reviewer's findings.
//! - [`schema`]: the JSON Schemas of the contract, as committed under `schemas/`.

pub mod agent_name;
pub mod allowances;
pub mod bypass;
pub mod error;
pub mod event;
pub mod framing;
pub mod home;
pub mod ids;
pub mod json_lines;
pub mod options;
pub mod present;
pub mod private;
pub mod repo_key;
pub mod report;
pub mod run_folder;
pub mod schema;
pub mod secret_places;
pub mod sequence;
pub mod session;
mod state;
pub mod task;
pub mod testrun;
pub mod text_lines;
pub mod traits;
pub mod workflow;

pub use agent_name::AgentName;
pub use allowances::{Allowances, AllowancesSource};
pub use error::{Error, ErrorKind, Result};
pub use event::{Event, EventBody};
pub use home::Home;
pub use ids::SessionId;
pub use options::{
    ApproveOptions, ApproveResult, DiffResult, DiffStat, Engine, FileStat, GcOptions, GcReport,
    Isolation, PermissionAnswer, PermissionMode, Permissions, RecoveryReport, RejectResult,
    RepoDisk, StartOptions,
};
pub use repo_key::RepoKey;
pub use report::{RunEnding, RunReport};
pub use sequence::EventSequence;
pub use session::{SessionRecord, SessionState, TokenCounts};
pub use task::{
    AttemptReport, AttemptSpec, AttemptVerdict, PickOptions, PickResult, StartedTask, TaskAttempt,
    TaskId, TaskOptions, TaskRecord, TaskReport, TaskState, VerifyVerdict,
};
pub use traits::agent::{
    Agent, AgentCapabilities, AgentInput, AgentParser, AgentRequest, DEFAULT_RESUME_PROMPT,
    Invocation, ResumeFrom, StdinClose, TokenPrice, ToolPolicy, VersionProbe,
};
pub use traits::confine::{
    BoxNeeds, ConfineRequest, Confinement, GitDirs, LoginFile, REMOTE_BOX_FAILED_EXIT,
};
pub use traits::memory::{Language, MemoryStore, PackageManager, RepoProfile, RunSummary};
pub use traits::runner::{EventStream, Runner, Sent};
pub use traits::sandbox::{
    BoxLimits, Sandbox, SandboxError, SandboxErrorKind, SandboxRequest, SandboxResult,
};
pub use traits::vcs::{PreparedCommit, Signature, ToolWorktree, Vcs, WorktreeSpec};
pub use workflow::{
    Finding, Gate, Phase, PhaseKind, PhasePermissions, Severity, Workflow, WorkflowOptions,
};

/// The current time as RFC 3339 with milliseconds, UTC: the format of every `ts`.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}
