//! The integration tests of the Docker sandbox: the locked test box on the real engine.
//!
//! One test binary for the crate (each file below is a module): the suite links once.

mod common;
mod conformance;
mod lockdown;
mod remote;
mod sandbox;
