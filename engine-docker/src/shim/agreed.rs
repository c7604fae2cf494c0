//! The API version an engine agreed to, kept in the home for a few minutes so a turn's shim
//! speaks to the engine without asking first: an engine's `/version` starts processes of its
//! own (Docker 20.10 asks its runtime and init for theirs), which took 5.8 s per run with 64
//! runs at once on a loaded node (`cargo xtask bench scale`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use bollard::{ClientVersion, Docker};

use crate::plan::RemotePlan;

/// How long an agreed version is taken without asking again (an engine upgraded or replaced
/// meanwhile is asked after that; a turn that failed forgets it at once).
const FRESH: Duration = Duration::from_secs(600);
/// The engine's socket when `DOCKER_HOST` names none (bollard's default).
const LOCAL_SOCKET: &str = "unix:///var/run/docker.sock";
/// The read and write timeout of a request, in seconds (as `connect.rs`).
const REQUEST_TIMEOUT: u64 = 120;

/// Where the versions agreed are noted: beside `runs/` in the home.
fn file(run_dir: &Path) -> Option<PathBuf> {
    Some(run_dir.parent()?.parent()?.join("remote-engine-api"))
}

/// The engine of `plan`, at the version it agreed to within [`FRESH`]; `None` when none is
/// noted for it, or when it is reached over ssh (its dial is made per process).
pub(super) fn connect(plan: &RemotePlan, run_dir: &Path) -> Option<Docker> {
    let file = file(run_dir)?;
    let age = std::fs::metadata(&file)
        .ok()?
        .modified()
        .ok()?
        .elapsed()
        .ok()?;
    if age > FRESH {
        return None;
    }
    let text = runner_contract::private::read_no_follow(&file).ok()??;
    let text = String::from_utf8(text).ok()?;
    let (version, host) = text.trim_end().split_once(' ')?;
    if host != host_of(plan) {
        return None;
    }
    let (major, minor) = version.split_once('.')?;
    let version = ClientVersion {
        major_version: major.parse().ok()?,
        minor_version: minor.parse().ok()?,
    };
    match plan.docker_host.as_deref() {
        None => Docker::connect_with_unix(LOCAL_SOCKET, REQUEST_TIMEOUT, &version),
        Some(h) if h.starts_with("unix://") => {
            Docker::connect_with_unix(h, REQUEST_TIMEOUT, &version)
        }
        Some(h) if h.starts_with("tcp://") || h.starts_with("http://") => {
            Docker::connect_with_http(h, REQUEST_TIMEOUT, &version)
        }
        Some(_) => return None,
    }
    .ok()
}

/// Notes the version `docker` agreed to, for the next turns.
pub(super) fn note(plan: &RemotePlan, run_dir: &Path, docker: &Docker) {
    let Some(file) = file(run_dir) else {
        return;
    };
    let version = docker.client_version();
    let text = format!(
        "{}.{} {}\n",
        version.major_version,
        version.minor_version,
        host_of(plan)
    );
    let _ = runner_contract::private::PrivateRoot::new(file.parent().unwrap_or(run_dir))
        .replace_file(&file, text.as_bytes());
}

/// Forgets the noted version (a turn failed: the next one asks again).
pub(super) fn forget(run_dir: &Path) {
    if let Some(file) = file(run_dir) {
        let _ = std::fs::remove_file(file);
    }
}

fn host_of(plan: &RemotePlan) -> &str {
    plan.docker_host.as_deref().unwrap_or("-")
}
