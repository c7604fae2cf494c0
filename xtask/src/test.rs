//! `cargo xtask test`: the one command that runs every test on a fresh machine.
//!
//! It first installs what the tests need (each install step is cached, so a
//! second run is quick), then runs `cargo test --workspace` with any extra arguments.

use std::process::Command;

/// The install steps, in order: each is an xtask task of its own.
const INSTALL_STEPS: &[&str] = &["system", "agents", "images"];

/// `cargo xtask install`: every install step, each cached.
pub fn install(args: &[String]) -> Result<(), String> {
    if !args.is_empty() {
        return Err("usage: cargo xtask install".into());
    }
    for step in INSTALL_STEPS {
        cargo(&["xtask", step], &[])?;
    }
    Ok(())
}

/// `cargo xtask test [ARGS…]`: installs, then tests.
pub fn run(args: &[String]) -> Result<(), String> {
    install(&[])?;
    cargo(&["test", "--workspace"], args)
}

fn cargo(fixed: &[&str], extra: &[String]) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(&cargo)
        .args(fixed)
        .args(extra)
        .current_dir(crate::workspace_root())
        .status()
        .map_err(|e| format!("cannot run {cargo}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`cargo {}` failed ({status})", fixed.join(" ")))
    }
}
