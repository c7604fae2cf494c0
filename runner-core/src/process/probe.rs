//! Running an agent's version probe: the contract describes the probe
//! ([`VersionProbe`]), the engine spawns it, so no process code lives in runner-contract.

use std::time::Duration;

use crate::traits::agent::VersionProbe;

/// Runs `probe` (at most `limit`) and reads the version from what it prints; `None`
/// when it cannot be run or prints none.
pub async fn ask(probe: &VersionProbe, limit: Duration) -> Option<String> {
    let mut command = tokio::process::Command::new(&probe.program);
    command
        .args(&probe.args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let out = tokio::time::timeout(limit, command.output())
        .await
        .ok()?
        .ok()?;
    VersionProbe::version_in(&String::from_utf8_lossy(&out.stdout))
}
