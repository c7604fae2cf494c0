//! Shared by the tests against the real engine: the sandbox, worktrees, requests,
//! and a look at which boxes the engine still has.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::Path;

use bollard::Docker;
use bollard::query_parameters::ListContainersOptionsBuilder;
use runner_contract::{BoxLimits, Language, RepoProfile, Sandbox, SandboxRequest, SessionId};
use runner_testkit::skip;
use sandbox_docker::{DockerSandbox, ImageMap, LOCAL_BUSYBOX_IMAGE, LOCAL_DEBIAN_IMAGE};
use tempfile::TempDir;

/// The busybox image (fast cases) and the Debian one (node, python, bash).
pub const BUSYBOX: &str = LOCAL_BUSYBOX_IMAGE;
pub const DEBIAN: &str = LOCAL_DEBIAN_IMAGE;

/// A sandbox over a fresh home, or `None` (skipped with a reason, a failure
/// under CI) when the engine or the local images are missing.
pub async fn sandbox() -> Option<(DockerSandbox, TempDir)> {
    let home = tempfile::tempdir().unwrap();
    let sandbox = engine(DockerSandbox::new(home.path()).with_images(ImageMap::local()));
    if !sandbox.available().await {
        skip("the Docker engine does not answer (start Docker, or set DOCKER_HOST)");
        return None;
    }
    let docker = docker();
    for image in [BUSYBOX, DEBIAN] {
        if docker.inspect_image(image).await.is_err() {
            skip(&format!(
                "the image {image} is missing: run `cargo xtask images`"
            ));
            return None;
        }
    }
    Some((sandbox, home))
}

/// `sandbox` pointed at the engine `DOCKER_HOST` names, when set: the crate reads no
/// variable, so the tests pass it as the facade does.
pub fn engine(sandbox: DockerSandbox) -> DockerSandbox {
    match std::env::var("DOCKER_HOST").ok().filter(|h| !h.is_empty()) {
        Some(host) => sandbox.with_docker_host(host),
        None => sandbox,
    }
}

/// A client of the same engine, for looking at what the sandbox left.
pub fn docker() -> Docker {
    Docker::connect_with_defaults().unwrap()
}

/// A worktree holding `files`, readable by the box's non-root user.
pub fn worktree(files: &[(&str, &str)]) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    open_up(dir.path());
    for (name, text) in files {
        let path = dir.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
            open_up(parent);
        }
        std::fs::write(path, text).unwrap();
    }
    dir
}

fn open_up(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A request to run `command` in `image` over `worktree`, default limits.
pub fn request(worktree: &Path, command: &str, image: &str) -> SandboxRequest {
    SandboxRequest {
        session_id: SessionId::new_random(),
        worktree: worktree.to_path_buf(),
        profile: RepoProfile {
            language: Language::Unknown,
            ..Default::default()
        },
        test_command: Some(command.to_owned()),
        image: Some(image.to_owned()),
        timezone: Some("UTC".into()),
        limits: BoxLimits::default(),
    }
}

/// The names of the boxes the engine still has for `session`, running or not.
pub async fn boxes_of(session: &SessionId) -> Vec<String> {
    let label = format!("codehands.session={session}");
    let filters = HashMap::from([("label", vec![label.as_str()])]);
    let options = ListContainersOptionsBuilder::default()
        .all(true)
        .filters(&filters)
        .build();
    docker()
        .list_containers(Some(options))
        .await
        .unwrap()
        .into_iter()
        .flat_map(|c| c.names.unwrap_or_default())
        .collect()
}

/// Runs git with `args` in `dir` (a real repo for the ignore checks).
pub fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
