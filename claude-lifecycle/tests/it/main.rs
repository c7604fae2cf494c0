//! The integration tests of Claude Code's session lifecycle.
//!
//! One test binary for the crate (each file below is a module): the suite links once.

mod fake;
mod jobs;
mod live;
mod sessions;
