//! `cargo xtask codegen [--check]`: the contract's JSON Schemas in `schemas/`.

use std::fs;

/// Writes every schema, or with `--check` fails when a committed file differs.
pub fn run(args: &[String]) -> Result<(), String> {
    let check = match args {
        [] => false,
        [flag] if flag == "--check" => true,
        _ => return Err("usage: cargo xtask codegen [--check]".into()),
    };
    let dir = crate::workspace_root().join("schemas");
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut drifted = Vec::new();
    for (name, schema) in runner_contract::schema::all() {
        let path = dir.join(name);
        let text = runner_contract::schema::render(&schema);
        let current = fs::read_to_string(&path).unwrap_or_default();
        if current == text {
            continue;
        }
        if check {
            drifted.push(name);
        } else {
            fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            println!("wrote schemas/{name}");
        }
    }
    if !drifted.is_empty() {
        return Err(format!(
            "schemas/ drifted from runner-core in {}: run `cargo xtask codegen` and commit the result",
            drifted.join(", ")
        ));
    }
    Ok(())
}
