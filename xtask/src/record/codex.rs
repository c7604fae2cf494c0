//! `cargo xtask record codex <scenario>|all`: runs the real Codex against the
//! scripted model server (OpenAI Responses) in a temp git repo and saves its stdout
//! as `agent-codex/tests/fixtures/<scenario>.jsonl`. The requests Codex sent go to
//! `target/recordings/codex/<scenario>.requests.json`, to read beside the fixture.
//! Read every line before committing it.

#[path = "../../../agent-codex/tests/scenarios/mod.rs"]
mod scenarios;

use agent_codex::pinned::VERSION as CODEX_VERSION;

fn codex_bin() -> Option<std::path::PathBuf> {
    runner_core::testkit::agents::find_pinned("CODEX_BIN", agent_codex::pinned::path_in)
}

/// Records `which` (a scenario name, or `all`).
pub(super) fn run(which: &str) -> Result<(), String> {
    let chosen: Vec<scenarios::Scenario> = if which == "all" {
        scenarios::all()
    } else {
        vec![
            scenarios::find(which)
                .ok_or_else(|| format!("no Codex scenario {which:?}\n{}", usage()))?,
        ]
    };
    let codex = codex_bin()
        .ok_or("Codex is not there: run `cargo xtask agents` first, or set CODEX_BIN")?;
    let runtime = tokio::runtime::Runtime::new().map_err(|e| format!("tokio: {e}"))?;
    let root = crate::workspace_root();
    let folder = root.join("agent-codex/tests/fixtures");
    let requests_folder = root.join("target/recordings/codex");
    for dir in [&folder, &requests_folder] {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    for scenario in &chosen {
        println!(
            "recording {} ({}) with Codex {CODEX_VERSION}",
            scenario.name, scenario.about
        );
        let output = runtime.block_on(scenarios::run::run(&codex, scenario))?;
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
        "usage: cargo xtask record codex <scenario>|all\nscenarios: {}",
        names.join(", ")
    )
}
