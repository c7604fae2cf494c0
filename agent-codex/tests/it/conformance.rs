//! runner-testkit's `Agent` conformance suite, run on `Codex`.

use agent_codex::Codex;
use runner_testkit::agent;

#[test]
fn codex_keeps_every_agent_promise() {
    let dir = tempfile::tempdir().unwrap();
    agent::all(
        &Codex::with_program("codex"),
        dir.path(),
        "01a23690-c196-75e3-9541-355fde112d27",
    );
}
