//! `cargo xtask record mini-swe-agent <scenario>|all`: runs the real mini-swe-agent
//! against the scripted model server (OpenAI Chat Completions) in a temp git repo
//! and saves its stdout as `third-party/agent-mini-swe/tests/fixtures/<scenario>.jsonl`.
//! The requests it sent go to `target/recordings/mini-swe-agent/<scenario>.requests.json`,
//! to read beside the fixture. Read every line before committing it.

#[path = "../../../third-party/agent-mini-swe/tests/scenarios/mod.rs"]
mod scenarios;

use agent_mini_swe::install::VERSION;

/// Records `which` (a scenario name, or `all`).
pub(super) fn run(which: &str) -> Result<(), String> {
    let chosen: Vec<scenarios::Scenario> = if which == "all" {
        scenarios::all()
    } else {
        vec![
            scenarios::find(which)
                .ok_or_else(|| format!("no mini-swe-agent scenario {which:?}\n{}", usage()))?,
        ]
    };
    let agent = scenarios::installed().ok_or_else(|| {
        format!(
            "mini-swe-agent is not there: run `cargo xtask agents` first, or set {} to an install folder",
            scenarios::DIR_VAR
        )
    })?;
    let runtime = tokio::runtime::Runtime::new().map_err(|e| format!("tokio: {e}"))?;
    let root = crate::workspace_root();
    let folder = root.join("third-party/agent-mini-swe/tests/fixtures");
    let requests_folder = root.join("target/recordings/mini-swe-agent");
    for dir in [&folder, &requests_folder] {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    for scenario in &chosen {
        println!(
            "recording {} ({}) with mini-swe-agent {VERSION}",
            scenario.name, scenario.about
        );
        let output = runtime.block_on(scenarios::run::run(&agent, scenario))?;
        let mut text = output.lines.join("\n");
        text.push('\n');
        let target = folder.join(format!("{}.jsonl", scenario.name));
        std::fs::write(&target, &text).map_err(|e| format!("{}: {e}", target.display()))?;
        let requests: Vec<serde_json::Value> = output
            .requests
            .iter()
            .map(|r| {
                serde_json::json!({
                    "method": r.method, "path": r.path, "status": r.status, "turn": r.turn,
                    "body": r.json().unwrap_or_else(|| serde_json::Value::String(r.body.clone())),
                })
            })
            .collect();
        let dump = requests_folder.join(format!("{}.requests.json", scenario.name));
        let pretty = serde_json::to_string_pretty(&requests).map_err(|e| e.to_string())?;
        std::fs::write(&dump, pretty).map_err(|e| format!("{}: {e}", dump.display()))?;
        println!(
            "  {} lines, exit code {:?}, {} requests -> {}",
            output.lines.len(),
            output.exit_code,
            output.requests.len(),
            target.display()
        );
        for request in &output.requests {
            println!(
                "  {} {} -> {} (turn {:?})",
                request.method, request.path, request.status, request.turn
            );
        }
        if !output.stderr.trim().is_empty() {
            println!("  stderr: {}", output.stderr.trim());
        }
    }
    Ok(())
}

pub(super) fn usage() -> String {
    let names: Vec<&str> = scenarios::all().iter().map(|s| s.name).collect();
    format!(
        "usage: cargo xtask record mini-swe-agent <scenario>|all\nscenarios: {}",
        names.join(", ")
    )
}
