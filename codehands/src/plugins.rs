//! Plugins: agents in shared libraries loaded at run time (feature `plugins`).

use std::path::Path;
use std::sync::Arc;

use runner_core::{Agent, Error, Result};

/// Loads the agents of the plugin library at `path`.
pub fn load(path: &Path) -> Result<Vec<Arc<dyn Agent>>> {
    let _ = path;
    Err(Error::not_in_build("plugins", "plugins"))
}
