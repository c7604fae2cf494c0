//! `LocalRunner`: the real runner, over the four traits.
//!
//! start() checks the input, finds the base commit, makes the worktree and
//! branch, saves the session, plans the turn and hands it to a supervisor (a task of
//! this runner, or a detached supervisor program) that spawns the agent detached through
//! [`runner_process`] and appends its events to the session's log; the caller follows
//! the log. The session record is the truth about state; everything another process needs
//! to follow, adopt or stop a run lives in `runs/<sessionId>/`.
//!
//! `parts.rs` holds [`LocalRunner`] and the narrow handles its methods give the parts (the
//! records, the adapters, what a supervisor needs, what starts one) and names no other part:
//! a part takes the handle it uses, never the runner whole, and never from this module, which
//! is an index of the parts, not a hub (a tidy test checks).

mod api;
mod checks;
mod cleanup;
mod control;
mod conversation;
mod converse;
mod decide;
mod disk;
mod ending;
mod fingerprint;
mod follow;
mod gc;
mod heal;
mod hidden;
mod inbox;
mod journal;
mod log;
mod nested_git;
mod notes;
mod parts;
mod preflight;
mod recover;
mod requests;
mod run;
mod sessions;
mod start;
mod task;
mod verify;
mod watched;
mod workflow;

pub use control::{RunFiles, TurnPhase, TurnPlan};
pub use parts::{LocalRunner, MAX_PROMPT_BYTES, RunnerSettings, SupervisorCommand, Watchdog};
pub use workflow::WorkflowProgress;
