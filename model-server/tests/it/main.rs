//! The integration tests of the scripted model server.
//!
//! One test binary for the crate (each file below is a module): the suite links once.

mod model_server;
