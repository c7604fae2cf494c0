//! The facade's confinement: the local box (bubblewrap), or a box on a Docker engine or
//! swarm (engine-docker), as each session's engine says (README.md, "Where runs run").

use std::path::Path;

use runner_contract::{ConfineRequest, Confinement, Engine, Invocation, Result};

use crate::Setup;

/// Both boxes; each wrap goes to the one its session's engine names.
pub(crate) struct Engines {
    local: agent_box::BwrapBox,
    remote: engine_docker::DockerEngine,
}

impl Engines {
    pub(crate) fn new(local: agent_box::BwrapBox, remote: engine_docker::DockerEngine) -> Self {
        Self { local, remote }
    }
}

/// The remote engine of `setup`: `DOCKER_HOST` from the caller's env (with `PATH`, `HOME`
/// and `SSH_AUTH_SOCK` for an `ssh://` one; `DOCKER_TLS_VERIFY` refused), the image from
/// `CODEHANDS_REMOTE_IMAGE` (default `codehands/remote:1`), swarm placement constraints from
/// `CODEHANDS_SWARM_CONSTRAINTS` (comma-separated, `node.labels.codehands==runs`), warm boxes
/// kept ahead on a swarm from `CODEHANDS_SWARM_POOL` (docs/remote-box.md, "Warm boxes").
pub(crate) fn docker_engine(setup: &Setup) -> engine_docker::DockerEngine {
    let var = |name: &str| {
        setup
            .settings
            .caller_env
            .iter()
            .find(|(k, v)| k == name && !v.is_empty())
            .map(|(_, v)| v.clone())
    };
    let mut engine = engine_docker::DockerEngine::new(setup.box_helper.clone(), var("DOCKER_HOST"))
        .with_ssh_env(
            ["PATH", "HOME", "SSH_AUTH_SOCK"]
                .into_iter()
                .filter_map(|k| var(k).map(|v| (k.to_owned(), v)))
                .collect(),
        )
        .with_tls_verify(var("DOCKER_TLS_VERIFY").is_some())
        .with_caller_home(var("HOME").map(std::path::PathBuf::from));
    if let Some(image) = var("CODEHANDS_REMOTE_IMAGE") {
        engine = engine.with_image(image);
    }
    if let Some(pool) = var("CODEHANDS_SWARM_POOL").and_then(|n| n.parse().ok()) {
        engine = engine.with_pool(pool);
    }
    if let Some(constraints) = var("CODEHANDS_SWARM_CONSTRAINTS") {
        engine = engine.with_constraints(
            constraints
                .split(',')
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_owned)
                .collect(),
        );
    }
    engine
}

impl Confinement for Engines {
    /// Whether either box can be made: a machine without bubblewrap may still send runs
    /// to an engine; the wrap of the other says why it cannot.
    fn available(&self) -> Result<()> {
        self.local
            .available()
            .or_else(|e| self.remote.available().map_err(|_| e))
    }

    fn available_on(&self, engine: Engine) -> Result<()> {
        match engine {
            Engine::Local => self.local.available(),
            Engine::Docker | Engine::Swarm => self.remote.available(),
        }
    }

    fn wrap(&self, request: &ConfineRequest<'_>) -> Result<Invocation> {
        match request.engine {
            Engine::Local => {
                self.local.available()?;
                self.local.wrap(request)
            }
            Engine::Docker | Engine::Swarm => self.remote.wrap(request),
        }
    }

    fn cleanup(&self, run_dir: &Path) {
        self.local.cleanup(run_dir);
        self.remote.cleanup(run_dir);
    }

    fn discard(&self, run_dir: &Path) {
        self.local.discard(run_dir);
        self.remote.discard(run_dir);
    }
}
