//! agent-mini-swe as a codehands plugin: build this crate (`cargo build --release -p
//! agent-mini-swe-plugin`) and put `libagent_mini_swe_plugin.so` in
//! `$CODEHANDS_HOME/plugins/`, or name it with `codehands --plugin PATH`; then
//! `codehands run REPO --agent mini-swe-agent`.
//!
//! The agent is the crate's own, unchanged; this crate only says where mini-swe-agent is
//! installed, read once when the host first asks: the install folder named by
//! `MINI_SWE_AGENT_DIR`, else the one `cargo xtask agents` makes under
//! `$CODEHANDS_CACHE` (default `~/.cache/codehands`). A folder without mini in it loads
//! all the same: `codehands agents` shows the program as not found, and a run fails with
//! the spawn error.

use std::path::PathBuf;

use agent_mini_swe::{MiniSweAgent, install};

/// The variable that names an install folder (`venv/` and `config/` in it).
const DIR_VAR: &str = "MINI_SWE_AGENT_DIR";

/// mini-swe-agent from its install folder.
fn mini_swe_agent() -> MiniSweAgent {
    MiniSweAgent::from_install(&install_folder())
}

/// `MINI_SWE_AGENT_DIR`, else `cargo xtask agents`' install in the cache.
fn install_folder() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(folder) = var(DIR_VAR) {
        return PathBuf::from(folder);
    }
    let cache = var("CODEHANDS_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            var("HOME")
                .map(PathBuf::from)
                .unwrap_or_else(std::env::temp_dir)
                .join(".cache/codehands")
        });
    install::folder(&cache)
}

agent_plugin_abi::export_agent!(mini_swe_agent);
