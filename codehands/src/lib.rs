//! The codehands facade: the crate a daemon depends on.
//!
//! It picks adapters by cargo feature and builds a ready `Runner`. A build
//! without a feature answers "… is not in this build of codehands" instead of
//! failing to compile. The contract is re-exported as [`core`].

pub use runner_core as core;

use runner_core::{Result, Runner};

/// Builds the scripted fake runner (feature `fake`): 12 events `delay_ms` apart, then approval.
pub fn fake_runner(delay_ms: u64) -> Result<Box<dyn Runner>> {
    #[cfg(feature = "fake")]
    {
        let options = runner_fake::FakeRunnerOptions { delay: std::time::Duration::from_millis(delay_ms) };
        Ok(Box::new(runner_fake::FakeRunner::new(options)))
    }
    #[cfg(not(feature = "fake"))]
    {
        let _ = delay_ms;
        Err(runner_core::Error::not_in_build("the fake runner", "fake"))
    }
}
