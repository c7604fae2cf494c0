//! The fuzz targets' seeds and regressions, run as plain tests.
//!
//! One test binary for the crate (each file below is a module): the suite links once.

mod patch;
mod regressions;
mod seeds;
