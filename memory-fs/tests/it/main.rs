//! The integration tests of the file-backed repo memory.
//!
//! One test binary for the crate (each file below is a module): the suite links once.

mod conformance;
mod file_store;
mod notes;
mod processes;
mod profile;
