//! The traits adapters implement, and the `Runner` a daemon codes against.

pub mod agent;
pub mod box_needs;
pub mod confine;
pub mod memory;
pub mod runner;
pub mod sandbox;
pub mod vcs;
