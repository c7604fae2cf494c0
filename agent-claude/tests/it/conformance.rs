//! runner-testkit's `Agent` conformance suite, run on `ClaudeCode`.

use agent_claude::ClaudeCode;
use runner_testkit::agent;

#[test]
fn claude_code_keeps_every_agent_promise() {
    let dir = tempfile::tempdir().unwrap();
    agent::all(
        &ClaudeCode::with_program("claude"),
        dir.path(),
        "3f2a9c1e-0b7d-4c55-9a57-2f0d8e6b1a42",
    );
}
