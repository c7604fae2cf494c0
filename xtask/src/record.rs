//! `cargo xtask record claude <scenario>|all`: runs the real Claude Code against the
//! scripted model server in a temp git repo and saves its stdout as a fixture,
//! `agent-claude/tests/fixtures/<scenario>.jsonl`. Read every line before committing it.
//! `cargo xtask record codex <scenario>|all` does the same for Codex (`record/codex.rs`),
//! `cargo xtask record mini-swe-agent <scenario>|all` for mini-swe-agent (`record/mini_swe.rs`).

mod codex;
mod mini_swe;

#[path = "../../agent-claude/tests/scenarios/mod.rs"]
mod scenarios;

use std::path::PathBuf;

use agent_claude::pinned::VERSION as CLAUDE_VERSION;

fn claude_bin() -> Option<std::path::PathBuf> {
    runner_core::testkit::agents::find_pinned("CLAUDE_BIN", agent_claude::pinned::path_in)
}

/// Runs the task.
pub fn run(args: &[String]) -> Result<(), String> {
    let (agent, which) = match args {
        [agent, which] => (agent.as_str(), which.as_str()),
        _ => return Err(usage()),
    };
    if agent == "codex" {
        return codex::run(which);
    }
    if agent == "mini-swe-agent" {
        return mini_swe::run(which);
    }
    if agent != "claude" {
        return Err(format!(
            "no recordings for agent {agent:?} yet\n{}",
            usage()
        ));
    }
    let chosen: Vec<scenarios::Scenario> = if which == "all" {
        scenarios::all()
    } else {
        vec![scenarios::find(which).ok_or_else(|| format!("no scenario {which:?}\n{}", usage()))?]
    };
    let claude = claude_bin()
        .ok_or("Claude Code is not there: run `cargo xtask agents` first, or set CLAUDE_BIN")?;
    let runtime = tokio::runtime::Runtime::new().map_err(|e| format!("tokio: {e}"))?;
    let folder = crate::workspace_root().join("agent-claude/tests/fixtures");
    std::fs::create_dir_all(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    for scenario in &chosen {
        println!(
            "recording {} ({}) with Claude Code {CLAUDE_VERSION}",
            scenario.name, scenario.about
        );
        let output = runtime.block_on(scenarios::run::run(&claude, scenario))?;
        let mut text = output.lines.join("\n");
        text.push('\n');
        let target: PathBuf = folder.join(format!("{}.jsonl", scenario.name));
        std::fs::write(&target, &text).map_err(|e| format!("{}: {e}", target.display()))?;
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

fn usage() -> String {
    let names: Vec<&str> = scenarios::all().iter().map(|s| s.name).collect();
    format!(
        "usage: cargo xtask record claude <scenario>|all\nscenarios: {}",
        names.join(", ")
    )
}
