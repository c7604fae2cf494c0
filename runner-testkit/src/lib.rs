//! Conformance suites: free async functions over `&dyn Trait` that every
//! implementation's tests call, so one body checks every adapter. Over the contract
//! (`runner-contract`) only, so an adapter's tests never compile the engine (the lifecycle
//! suite drives the real runner through the contract's `Runner` trait; the test builds it).
//!
//! Each function panics with a message naming the broken promise.

pub mod agent;
pub mod agents;
pub mod cargo;
pub mod confine;
pub mod lifecycle;
pub mod memory;
pub mod runner;
pub mod sandbox;
pub mod test_user;
pub mod vcs;

use runner_contract::{ErrorKind, Result};

/// Asserts that `result` is an error of `kind`, and returns its message.
pub fn expect_error<T: std::fmt::Debug>(result: Result<T>, kind: ErrorKind, what: &str) -> String {
    match result {
        Ok(value) => panic!("{what}: expected a {kind:?} error, got Ok({value:?})"),
        Err(e) => {
            assert_eq!(e.kind(), kind, "{what}: wrong error kind, message: {e}");
            e.to_string()
        }
    }
}

/// True when tests run under CI (`CI=true`), where nothing may be skipped.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Skips the calling test with a printed reason, or fails it under `CI=true`.
/// Use as `if let Some(x) = … else { return skip("…") }`.
pub fn skip(reason: &str) {
    assert!(
        !in_ci(),
        "a required component is missing under CI=true: {reason}"
    );
    eprintln!("SKIPPED: {reason}");
}
