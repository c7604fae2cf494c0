//! `cargo xtask record <agent> <scenario>|all`: records a fixture again from the real agent
//! program. Each agent crate owns its scenarios and its recorder (built on the
//! `agent-harness` library): the `record` test of its one test binary, which this runs with
//! `CODEHANDS_RECORD=<scenario>|all`. It runs the program in a temp git repo against the
//! scripted model server and saves its stdout as
//! `<crate>/tests/fixtures/<scenario>.jsonl` (the requests it sent go to
//! `target/recordings/<agent>/`). Read every line before committing it.

use std::process::Command;

/// The agents with recordings: the name given to `record`, and the crate that has them.
const AGENTS: &[(&str, &str)] = &[
    ("claude", "agent-claude"),
    ("codex", "agent-codex"),
    ("mini-swe-agent", "agent-mini-swe"),
    ("mistral-vibe", "agent-vibe"),
];

/// Runs the task.
pub fn run(args: &[String]) -> Result<(), String> {
    let [agent, which] = args else {
        return Err(usage());
    };
    let Some((_, package)) = AGENTS.iter().find(|(name, _)| name == agent) else {
        return Err(format!("no recordings for agent {agent:?}\n{}", usage()));
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(&cargo);
    command
        .args(["test", "-p", package, "--test", "it", "record::"])
        .args(["--", "--nocapture", "--test-threads=1"])
        .env(RECORD_ENV, which);
    let status = command
        .current_dir(crate::workspace_root())
        .status()
        .map_err(|e| format!("{cargo}: {e}"))?;
    status
        .success()
        .then_some(())
        .ok_or_else(|| format!("recording {agent} {which} failed: {status}"))
}

/// `agent_harness::RECORD_ENV`, spelled again here: xtask does not build the harness.
const RECORD_ENV: &str = "CODEHANDS_RECORD";

fn usage() -> String {
    let names: Vec<&str> = AGENTS.iter().map(|(name, _)| *name).collect();
    format!(
        "usage: cargo xtask record <agent> <scenario>|all (agents: {}), or cargo xtask record demo",
        names.join(", ")
    )
}
