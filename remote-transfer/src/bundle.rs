//! A bundle of the agent's commits holds the run's ref and nothing else.

use runner_process::tool::Tool;
use std::path::Path;

use crate::TransferError;

/// Checks that the bundle at `bundle` holds exactly `expected` (`refs/heads/…`): a bundle
/// with other refs could plant branches or tags in the person's repo when fetched, so it is
/// refused before anything is fetched. `git` is run with no config of the caller's.
pub fn check_bundle(bundle: &Path, expected: &str) -> Result<(), TransferError> {
    let out = Tool::new("git")
        .args(["bundle", "list-heads"])
        .arg(bundle)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .run()
        .map_err(|e| TransferError::io("cannot run git on the bundle", bundle, e.into()))?;
    if !out.status.success() {
        return Err(TransferError::Malformed(format!(
            "git bundle list-heads: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let found: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| line.split_once(' ').map(|(_, name)| name.to_owned()))
        .collect();
    if found.len() == 1 && found[0] == expected {
        Ok(())
    } else {
        Err(TransferError::BundleRefs {
            expected: expected.to_owned(),
            found,
        })
    }
}
