//! `cargo xtask man`: the man page of `codehands`, written to `target/man/codehands.1`.
//!
//! The page is rendered by the binary itself (the hidden `codehands __man`, with
//! clap_mangen), so it comes from the same clap definition as `--help` and the completions,
//! and xtask gains no dependency.

use std::process::Command;

/// Builds `codehands`, renders its man page and writes it under `target/man/`.
pub fn run(args: &[String]) -> Result<(), String> {
    if !args.is_empty() {
        return Err(format!(
            "`cargo xtask man` takes no arguments, not {args:?}"
        ));
    }
    let root = crate::workspace_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(&cargo)
        .args(["run", "--quiet", "--package", "codehands", "--", "__man"])
        .current_dir(&root)
        .output()
        .map_err(|e| format!("cannot run {cargo}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`codehands __man` failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let dir = root.join("target/man");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    let page = dir.join("codehands.1");
    std::fs::write(&page, &out.stdout)
        .map_err(|e| format!("cannot write {}: {e}", page.display()))?;
    println!(
        "wrote {} (read it with `man {}`)",
        page.display(),
        page.display()
    );
    Ok(())
}
