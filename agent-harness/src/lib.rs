//! The recording and fixture harness every agent crate tests with (a dev-dependency, never
//! part of an adapter's build).
//!
//! An agent crate defines its scenarios ([`Scenario`]: a repo, a prompt and a script for the
//! scripted model server) in `tests/it/scenarios.rs`, and this crate does the rest:
//! - [`Harness`] runs a scenario with the real program: a temp git repo, the
//!   [`ModelServer`](model_server::ModelServer) playing the script, the
//!   `Invocation` the adapter builds, an environment built from scratch; it returns what the
//!   program printed and what the server received.
//! - [`Fixtures`] reads and writes the recordings (`tests/fixtures/<scenario>.jsonl`), replays
//!   them through the adapter's parser, and checks that each has its snapshot test
//!   ([`fixture_tests!`], with [`snapshot`] for the redactions every agent needs).
//! - [`Recorder`] is each crate's `record` test: under `cargo test` it checks that every
//!   scenario has a fixture and every fixture a snapshot; with `CODEHANDS_RECORD=<scenario>|all`
//!   it records again from the real program (`cargo xtask record <agent> <scenario>` runs
//!   exactly that).

pub mod files;
mod fixtures;
mod record;
mod repo;
mod run;
mod scenario;
pub mod snapshot;

pub use fixtures::{Fixtures, parse_lines};
pub use record::{RECORD_ENV, Recorder};
pub use repo::make_repo;
pub use run::{Harness, ProviderEnv, RUN_LIMIT, RunOutput, scratch_root};
pub use scenario::{Scenario, npm_available};

/// The snapshot crate, for [`fixture_tests!`].
#[doc(hidden)]
pub use insta as __insta;

/// One `#[test]` per recording, each calling `$check` with its name, and a test that fails
/// unless the names listed are exactly the recordings in `tests/fixtures/` (so every
/// fixture has a snapshot test, and no test names a fixture that is gone).
///
/// ```text
/// agent_harness::fixture_tests! { check;
///     edit_files => "edit-files",
///     error_401 => "error-401",
/// }
/// ```
#[macro_export]
macro_rules! fixture_tests {
    ($check:expr; $($test:ident => $name:literal,)*) => {
        $(
            #[test]
            fn $test() {
                ($check)($name);
            }
        )*

        #[test]
        fn every_fixture_has_a_snapshot_test() {
            $crate::Fixtures::of(env!("CARGO_MANIFEST_DIR")).assert_tested(&[$($name),*]);
        }
    };
}
