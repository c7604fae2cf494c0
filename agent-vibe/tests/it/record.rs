//! Every scenario of `scenarios.rs` has its recording in `tests/fixtures/`, and every
//! recording its snapshot. With `CODEHANDS_RECORD=<scenario>|all` (what `cargo xtask record
//! mistral-vibe <scenario>` runs) it records again from the real Mistral Vibe against the
//! scripted model server (the requests it sent go to `target/recordings/mistral-vibe/`).

use crate::scenarios;

#[test]
fn every_scenario_has_its_recording_and_every_recording_its_snapshot() {
    scenarios::recorder().test();
}
