//! An implementation of `runner_contract::Sandbox` for the Docker engine, with bollard.
//!
//! [`DockerSandbox`] runs a repo's test command in a locked box (no network,
//! read-only worktree and root, non-root, no capabilities, no new privileges,
//! an init, memory without swap, one CPU, bounded processes, open files and
//! time), after an install box when the repo needs its dependencies (Node:
//! npm, pnpm or yarn with scripts off and no lockfile added, into an ignored
//! `node_modules`; Python: wheels only, into an ignored `.venv`). The exact
//! flags are plain data in [`flags`]. Images come from the repo profile
//! through an [`ImageMap`]; on an engine that cannot pull, `cargo xtask
//! images` builds [`ImageMap::local`]'s. Boxes are labelled with their session
//! so [`DockerSandbox::remove_leftovers`] finds what a crash left.

pub mod flags;
mod images;
mod install;
mod leftovers;
mod output;
mod results;
mod run;
mod sandbox;
mod timezone;

use std::path::{Path, PathBuf};

use runner_contract::{BoxLimits, RepoProfile, Sandbox, SandboxRequest, SandboxResult, SessionId};

pub use images::{ImageMap, LOCAL_BUSYBOX_IMAGE, LOCAL_DEBIAN_IMAGE, node_major};
pub use install::NOT_IGNORED;
pub use sandbox::{DockerSandbox, LOCAL_ENGINE};
pub use timezone::{host_timezone, is_iana_name};

/// Where a run's result is written: `<home>/runs/<sessionId>/test-<n>.json`.
pub fn result_file(home: &Path, session: &SessionId, n: u32) -> PathBuf {
    results::runs_dir(home, session).join(runner_contract::run_folder::sandbox_result(n.into()))
}

/// `codehands sandbox [REPO] [--tz ZONE]`: runs `repo`'s tests once in `sandbox`'s box,
/// under a fresh session id, with the default limits. Returns the session id
/// (the result is also in [`result_file`]) and the result.
pub async fn run_repo(
    sandbox: &DockerSandbox,
    repo: &Path,
    profile: RepoProfile,
    timezone: Option<String>,
) -> (SessionId, SandboxResult) {
    let session_id = SessionId::new_random();
    let request = SandboxRequest {
        session_id,
        worktree: repo.to_path_buf(),
        profile,
        test_command: None,
        image: None,
        timezone,
        limits: BoxLimits::default(),
    };
    (session_id, sandbox.run_tests(&request).await)
}
