//! What `start` checks before it makes anything: that the agent's program can be found, that
//! the agent takes this repo ([`Agent::preflight`]) and that its box can be made. A run that
//! could only fail leaves no session record, worktree or branch behind.

use std::ffi::OsStr;
use std::path::Path;

use runner_contract::error::{Error, ErrorKind, Result};
use runner_contract::traits::agent::Agent;

/// Refuses `agent` when its program is not there, looked up as the agent's own process
/// will be: a path as it is, a bare name on the `PATH` its environment gets. (Whether it
/// takes the repo, [`Agent::preflight`], is asked once the repo is known to be one.)
pub(super) fn program(agent: &dyn Agent, caller_env: &[(String, String)]) -> Result<()> {
    if let Some(probe) = agent.version_probe() {
        let path = caller_env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.as_str());
        if !findable(&probe.program, path.map(OsStr::new)) {
            return Err(Error::new(
                ErrorKind::AgentUnavailable,
                format!(
                    "the agent program {} of `{}` was not found, so nothing was started: install \
                     it or put it on PATH (`codehands doctor` says where each agent's program is \
                     looked for)",
                    probe.program.display(),
                    agent.name()
                ),
            ));
        }
    }
    Ok(())
}

/// Refuses a turn in a box when this runner has none or the machine cannot make one, saying
/// why and what to do (`--isolation none` is the explicit way out).
pub(super) fn isolation(
    confinement: Option<&dyn runner_contract::Confinement>,
    isolation: runner_contract::options::Isolation,
    engine: runner_contract::options::Engine,
) -> Result<()> {
    if isolation == runner_contract::options::Isolation::None {
        return Ok(());
    }
    match confinement {
        Some(confinement) => confinement.available_on(engine),
        None => Err(Error::new(
            ErrorKind::NotInBuild,
            "the agent's box is not in this build of codehands: rebuild with `--features box`,              or pass --isolation none to run the agent unconfined",
        )),
    }
}

/// Whether `program` names a file that can be run: a path with a `/` as it is, a bare name
/// in one of `path`'s folders.
fn findable(program: &Path, path: Option<&OsStr>) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.components().count() > 1 || program.is_absolute() {
        return runnable(program);
    }
    path.is_some_and(|path| std::env::split_paths(path).any(|dir| runnable(&dir.join(program))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_is_findable_by_path_or_on_path() {
        assert!(findable(Path::new("/bin/sh"), None));
        assert!(!findable(Path::new("/nonexistent/agent"), None));
        assert!(findable(
            Path::new("sh"),
            Some(OsStr::new("/nonexistent:/bin"))
        ));
        assert!(!findable(Path::new("sh"), Some(OsStr::new("/nonexistent"))));
        assert!(!findable(Path::new("sh"), None));
    }
}
