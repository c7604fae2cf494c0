//! Every scenario of `scenarios.rs` has its recording in `tests/fixtures/`, and every
//! recording its snapshot. With `CODEHANDS_RECORD=<scenario>|all`
//! (what `cargo xtask record claude <scenario>` runs) it records again from the real
//! Claude Code against the scripted model server.

use crate::scenarios;

#[test]
fn every_scenario_has_its_recording_and_every_recording_its_snapshot() {
    scenarios::recorder().test();
}
