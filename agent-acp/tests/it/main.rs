//! The integration tests of agent-acp: the `Agent` conformance suite on `AcpAgent`. Its
//! whole life with a real ACP program under the lifecycle suite is in agent-vibe's tests
//! (`acp_lifecycle.rs`), where that program's install is known.
//!
//! One test binary for the crate (each file below is a module): the suite links once.

mod conformance;
