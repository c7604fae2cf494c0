//! codehands' fakes: stand-ins that behave like the real thing and cost nothing.
//!
//! - [`FakeRunner`]: an implementation of `runner_contract::Runner` that plays a fixed
//!   script of events: the daemon's stand-in, and the demo that works anywhere.
//! - [`fake_agent`]: the fake agent program, which replays a recording of Claude Code
//!   and performs its file edits, so a real run needs no model.
//! - [`demo_repo`]: the small repo with a failing test that `codehands demo` makes.
//! - `model_server` (feature `model-server`): the scripted model server that real agent CLIs
//!   talk to in tests; test support, so what ships does not compile it.

pub mod demo_repo;
pub mod fake_agent;
mod fake_runner;
#[cfg(feature = "model-server")]
pub mod model_server;
mod script;

pub use fake_runner::{FakeRunner, FakeRunnerOptions};
pub use script::{FAKE_PATCH, fake_diff_stat};
