//! The codehands engine: the runner, the process layer, the session store and the report,
//! over the contract in `runner-contract`, whose modules it re-exports under
//! the paths they had here (`runner_core::event`, `runner_core::Agent`, ...).
//!
//! - [`event`]: the events, the product; [`EventSequence`] numbers them.
//! - [`session`]: session states, the legal moves, the record on disk; [`store`] keeps records.
//! - [`options`]: what callers pass in and get back; [`agent_name`]: how an agent is named.
//! - [`registry`]: the agents a runner knows, by name; [`repo_key`]: the checked key of a repository.
//! - [`report`]: the final report of a session, built from its record and event log.
//! - [`traits`]: `Agent`, `Vcs`, `Sandbox`, `MemoryStore`, and the `Runner` a daemon codes against.
//! - [`process`]: spawning agents with a scrubbed environment, framing their output, ending their tree.
//! - [`runner`]: [`LocalRunner`], the real runner over the four traits.
//! - [`home`]: the paths under `$CODEHANDS_HOME`; [`private`]: keeping them private, never through a link.
//! - [`redact`]: cutting secret values, in every form, out of what a reader sees.
//! - [`text_lines`]: the parser for agents that print plain text.
//! - [`testrun`]: recognising test commands and failures in their output, for every agent.
//! - [`schema`]: the JSON Schemas of the contract, as committed under `schemas/`.

pub mod process;
pub mod redact;
pub mod registry;
pub mod report;
pub mod runner;
pub mod store;

// The contract, under the paths it had before it became a crate of its own.
pub use runner_contract::{
    agent_name, bypass, error, event, home, ids, json_lines, present, private, repo_key, schema,
    secret_places, sequence, session, task, testrun, text_lines, traits, workflow,
};

/// What callers pass in and get back: the contract's `options`, and [`Sent`], which
/// the contract keeps beside `Runner::send` (it holds an event stream).
pub mod options {
    pub use runner_contract::options::*;
    pub use runner_contract::traits::runner::Sent;
}

pub use agent_name::AgentName;
pub use error::{Error, ErrorKind, Result};
pub use event::{Event, EventBody};
pub use home::Home;
pub use ids::SessionId;
pub use options::{
    ApproveOptions, ApproveResult, DiffResult, DiffStat, Engine, FileStat, Isolation,
    PermissionAnswer, PermissionMode, Permissions, RecoveryReport, RejectResult, Sent,
    StartOptions,
};
pub use registry::{AgentOrigin, AgentRegistry, RegisteredAgent};
pub use repo_key::RepoKey;
pub use report::{ReportInput, RunEnding, RunReport};
pub use runner::{
    GcOptions, GcReport, LocalRunner, PickOptions, RepoDisk, RunnerSettings, StartedTask,
    SupervisorCommand, Watchdog, WorkflowProgress,
};
pub use runner_contract::allowances::{self, Allowances, AllowancesSource};
pub use sequence::EventSequence;
pub use session::{SessionRecord, SessionState, TokenCounts};
pub use store::SessionStore;
pub use task::{
    AttemptReport, AttemptSpec, AttemptVerdict, PickResult, TaskAttempt, TaskId, TaskOptions,
    TaskRecord, TaskReport, TaskState, VerifyVerdict,
};
pub use traits::agent::{
    Agent, AgentCapabilities, AgentInput, AgentParser, AgentRequest, DEFAULT_RESUME_PROMPT,
    Invocation, ResumeFrom, StdinClose, TokenPrice, ToolPolicy, VersionProbe,
};
pub use traits::confine::{BoxNeeds, ConfineRequest, Confinement, GitDirs, LoginFile};
pub use traits::memory::{Language, MemoryStore, PackageManager, RepoProfile, RunSummary};
pub use traits::runner::{EventStream, Runner};
pub use traits::sandbox::{
    BoxLimits, Sandbox, SandboxError, SandboxErrorKind, SandboxRequest, SandboxResult,
};
pub use traits::vcs::{PreparedCommit, Signature, ToolWorktree, Vcs, WorktreeSpec};
pub use workflow::{Finding, Workflow, WorkflowOptions};

pub use runner_contract::now_rfc3339;
