//! The integration tests of agent-vibe: the `Agent` conformance suite, the recordings of the
//! real Mistral Vibe replayed through the parser, and the real `vibe-acp` against the scripted
//! model server (what reached the model; the lifecycle suite on the facade's runner).
//!
//! One test binary for the crate (each file below is a module): the suite links once. The
//! `record` test checks the recordings, or records them again with `CODEHANDS_RECORD` (what
//! `cargo xtask record mistral-vibe` runs).

mod acp_lifecycle;
mod conformance;
mod fixtures;
mod lifecycle;
mod live;
mod record;
mod scenarios;
