//! Plugins: agents in shared libraries loaded at run time (feature `plugins`), through
//! agent-plugin-abi's versioned C ABI. A loaded library stays loaded for the process.

use std::path::Path;
use std::sync::Arc;

use runner_core::{Agent, Result};

/// Loads the agents of the plugin library at `path`.
#[cfg(feature = "plugins")]
pub fn load(path: &Path) -> Result<Vec<Arc<dyn Agent>>> {
    agent_plugin_abi::host::load(path)
}

/// Without the `plugins` feature: the answer that says so.
#[cfg(not(feature = "plugins"))]
pub fn load(path: &Path) -> Result<Vec<Arc<dyn Agent>>> {
    let _ = path;
    Err(runner_core::Error::not_in_build("plugins", "plugins"))
}
