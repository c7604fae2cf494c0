//! The integration tests of agent-acp: the `Agent` conformance suite on `AcpAgent`.
//!
//! One test binary for the crate (each file below is a module): the suite links once.

mod conformance;
