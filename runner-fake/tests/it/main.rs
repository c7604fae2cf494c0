//! The integration tests of the fakes: the scripted fake runner and the model server.
//!
//! One test binary for the crate (each file below is a module): the suite links once.

mod fake_runner;
mod model_server;
