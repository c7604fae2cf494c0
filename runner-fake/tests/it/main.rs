//! The integration tests of the fakes: the scripted fake runner.
//!
//! One test binary for the crate (each file below is a module): the suite links once.

mod fake_runner;
