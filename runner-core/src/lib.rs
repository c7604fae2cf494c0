//! The codehands engine: the runner, the session store and the report, over
//! the contract in `runner-contract` (which callers name directly: this crate re-exports none of
//! it).
//!
//! - [`runner`]: [`LocalRunner`], the real runner over the contract's four traits.
//! - [`store`]: [`SessionStore`], the session records on disk.
//! - [`registry`]: the agents a runner knows, by name.
//! - [`report`]: the final report of a session, built from its record and event log.
//! - [`redact`]: cutting secret values, in every form, out of what a reader sees.

pub mod redact;
pub mod registry;
pub mod report;
pub mod runner;
pub mod store;

pub use registry::{AgentOrigin, AgentRegistry, RegisteredAgent};
pub use report::ReportInput;
pub use runner::{LocalRunner, RunnerSettings, SupervisorCommand, Watchdog, WorkflowProgress};
pub use store::SessionStore;
