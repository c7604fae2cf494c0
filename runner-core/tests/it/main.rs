//! The integration tests of runner-core: the session store and the run report.
//!
//! One test binary for the crate (each file below is a module): the suite links once.

mod report;
mod store;
