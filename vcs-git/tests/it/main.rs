//! The integration tests of the git adapter: real repositories in temp folders.
//!
//! One test binary for the crate (each file below is a module): the suite links once.

mod adapter;
mod agent_admin;
mod conformance;
mod hostile;
mod nested_git;
