//! codehands' fakes: stand-ins that behave like the real thing and cost nothing.
//!
//! - [`FakeRunner`]: an implementation of `runner_contract::Runner` that plays a fixed
//!   script of events: the daemon's stand-in, and the demo that works anywhere.
//! - [`fake_agent`]: the fake agent program, which replays a recording of Claude Code
//!   and performs its file edits, so a real run needs no model.
//! - [`demo_repo`]: the small repo with a failing test that `codehands demo` makes.
//!
//! The scripted model server that real agent CLIs talk to in tests is the `model-server` crate
//! (test support, so what ships does not compile it); feature `model-server` adds the demo's
//! script for it ([`demo_repo::script`]).

pub mod demo_repo;
pub mod fake_agent;
mod fake_runner;
mod script;

pub use fake_runner::{FakeRunner, FakeRunnerOptions};
pub use script::{FAKE_PATCH, fake_diff_stat};
