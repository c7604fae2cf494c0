//! `cargo xtask bench parse [--mb N]`: the Claude Code parser against
//! `serde_json::from_slice::<serde_json::Value>` per line, over at least 100 MB made
//! from the recordings. The work is `agent-claude`'s `bench_parse` example, built in
//! release (a debug build would measure the wrong thing); it prints MB/s and the ratios
//! and writes `target/bench/parse.json`.

use std::process::Command;

/// Runs the task.
pub fn run(args: &[String]) -> Result<(), String> {
    let megabytes = match args {
        [] => "100".to_owned(),
        [flag, n] if flag == "--mb" && n.parse::<u32>().is_ok_and(|n| n >= 1) => n.clone(),
        _ => return Err("usage: cargo xtask bench parse [--mb N]".into()),
    };
    let root = crate::workspace_root();
    let folder = root.join("target/bench");
    std::fs::create_dir_all(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    let out = folder.join("parse.json");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(&cargo)
        .args([
            "run",
            "--release",
            "--quiet",
            "-p",
            "agent-claude",
            "--example",
            "bench_parse",
            "--",
        ])
        .args(["--mb", &megabytes])
        .arg("--out")
        .arg(&out)
        .current_dir(&root)
        .status()
        .map_err(|e| format!("cannot run {cargo}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the parse benchmark failed ({status})"))
    }
}
