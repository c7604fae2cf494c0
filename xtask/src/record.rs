//! `cargo xtask record <agent> <scenario>|all`: records a fixture again from the real agent
//! program. Each agent crate owns its scenarios and its recorder (built on the
//! `agent-harness` library): in a crate whose tests are one binary (`tests/it/`), its `record`
//! test, which this runs with `CODEHANDS_RECORD=<scenario>|all`; in one with a binary per
//! file, `tests/record.rs`, run as `cargo test -p <crate> --test record -- --record <scenario>|all`.
//! Either runs the program in a temp git repo against the scripted model server and saves its stdout as
//! `<crate>/tests/fixtures/<scenario>.jsonl` (the requests it sent go to
//! `target/recordings/<agent>/`). Read every line before committing it.

use std::process::Command;

/// The agents with recordings: the name given to `record`, the crate that has them and its
/// folder.
const AGENTS: &[(&str, &str, &str)] = &[
    ("claude", "agent-claude", "agent-claude"),
    ("codex", "agent-codex", "agent-codex"),
    (
        "mini-swe-agent",
        "agent-mini-swe",
        "third-party/agent-mini-swe",
    ),
    ("mistral-vibe", "agent-vibe", "agent-vibe"),
];

/// Runs the task.
pub fn run(args: &[String]) -> Result<(), String> {
    let [agent, which] = args else {
        return Err(usage());
    };
    let Some((_, package, folder)) = AGENTS.iter().find(|(name, ..)| name == agent) else {
        return Err(format!("no recordings for agent {agent:?}\n{}", usage()));
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let root = crate::workspace_root();
    let mut command = Command::new(&cargo);
    command.args(["test", "-p", package]);
    if root.join(folder).join("tests/it/main.rs").is_file() {
        command
            .args([
                "--test",
                "it",
                "record::",
                "--",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(RECORD_ENV, which);
    } else {
        command
            .args(["--test", "record", "--", "--record"])
            .arg(which);
    }
    let status = command
        .current_dir(&root)
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
    let names: Vec<&str> = AGENTS.iter().map(|(name, ..)| *name).collect();
    format!(
        "usage: cargo xtask record <agent> <scenario>|all (agents: {}), or cargo xtask record demo",
        names.join(", ")
    )
}
