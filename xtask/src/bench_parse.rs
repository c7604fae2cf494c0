//! `cargo xtask bench parse` (being written).

/// Runs the task.
pub fn run(_args: &[String]) -> Result<(), String> {
    Err("not built yet".into())
}
