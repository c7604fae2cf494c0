//! codehands' fakes: stand-ins that behave like the real thing and cost nothing.
//!
//! - [`FakeRunner`]: an implementation of `runner_core::Runner` that plays a fixed
//!   script of events: the daemon's stand-in, and the demo that works anywhere.

mod fake_runner;
mod script;

pub use fake_runner::{FakeRunner, FakeRunnerOptions};
pub use script::{FAKE_PATCH, fake_diff_stat};
