//! `DockerEngine` under runner-testkit's `Confinement` suite: the wrap's promises on the
//! Docker engine and a swarm. No box is started here (the remote image holds no shell: the
//! runs are codehands' `engine_*` tests), so the engine need not be reachable.

use std::os::unix::fs::PermissionsExt;

use engine_docker::DockerEngine;
use runner_contract::Engine;
use runner_testkit::confine::{self, Capabilities};

/// A stand-in for the driver program (the `codehands` binary): a wrap only names it, and the
/// removal `discard` starts for a box that never ran ends at once.
fn stand_in_helper(dir: &std::path::Path) -> std::path::PathBuf {
    let helper = dir.join("codehands");
    std::fs::write(&helper, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).unwrap();
    helper
}

#[test]
fn the_docker_engine_keeps_every_confinements_promises() {
    let dir = tempfile::tempdir().unwrap();
    let engine = DockerEngine::new(Some(stand_in_helper(dir.path())), None);
    confine::all(
        &engine,
        &Capabilities {
            engines: vec![Engine::Docker, Engine::Swarm],
            runs_shell: Vec::new(),
        },
    );
}

#[test]
fn without_its_driver_the_docker_engine_says_why_and_boxes_nothing() {
    confine::refuses_when_unavailable(&DockerEngine::new(None, None));
}
