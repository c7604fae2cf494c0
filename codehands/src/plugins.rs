//! Plugins: agents in shared libraries loaded at run time (feature `plugins`), through
//! agent-plugin-abi's versioned C ABI. A loaded library stays loaded for the process.

use std::path::Path;
use std::sync::Arc;

use runner_contract::{Agent, Result};

/// Loads the agents of the plugin library at `path`.
#[cfg(feature = "plugins")]
pub fn load(path: &Path) -> Result<Vec<Arc<dyn Agent>>> {
    agent_plugin_abi::host::load(path)
}

/// Without the `plugins` feature: the answer that says so.
#[cfg(not(feature = "plugins"))]
pub fn load(path: &Path) -> Result<Vec<Arc<dyn Agent>>> {
    let _ = path;
    Err(runner_contract::Error::not_in_build("plugins", "plugins"))
}

#[cfg(all(test, not(feature = "plugins")))]
mod tests {
    #[test]
    fn without_the_feature_a_plugin_is_not_in_this_build() {
        let Err(err) = super::load(std::path::Path::new("/plugins/x.so")) else {
            panic!("a plugin loaded without the plugins feature");
        };
        assert_eq!(
            err.to_string(),
            "plugins is not in this build of codehands: rebuild with `--features plugins`"
        );
    }
}
