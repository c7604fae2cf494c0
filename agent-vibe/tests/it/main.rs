//! The integration tests of agent-vibe: the `Agent` conformance suite, the recordings of the
//! real Mistral Vibe replayed through the parser, and the real `vibe-acp` against the scripted
//! model server (what reached the model; the lifecycle suite on the facade's runner).
//!
//! One test binary for the crate (each file below is a module): the suite links once. The
//! recorder `tests/record.rs` is a program of its own (`harness = false`, the `main` that
//! `cargo xtask record mistral-vibe` runs), sharing the scenarios below.

mod acp_lifecycle;
mod conformance;
mod fixtures;
mod lifecycle;
mod live;
#[path = "../scenarios/mod.rs"]
mod scenarios;
