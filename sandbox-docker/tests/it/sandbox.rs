//! What the locked box promises (ARCHITECTURE.md, `sandbox-docker`), against the real Docker engine.

use crate::common;

use std::time::{Duration, Instant};

use bollard::models::ContainerCreateBody;
use bollard::query_parameters::CreateContainerOptionsBuilder;
use common::{BUSYBOX, DEBIAN, boxes_of, docker, engine, git, request, sandbox, worktree};
use futures::StreamExt;
use runner_contract::{
    Language, PackageManager, RepoProfile, Sandbox, SandboxErrorKind, SandboxResult,
};
use sandbox_docker::{DockerSandbox, NOT_IGNORED, result_file};

#[tokio::test]
async fn a_passing_and_a_failing_test() {
    let Some((sandbox, _home)) = sandbox().await else {
        return;
    };
    let repo = worktree(&[("t.sh", "echo from-the-repo")]);
    let pass = sandbox
        .run_tests(&request(repo.path(), "sh t.sh", BUSYBOX))
        .await;
    assert!(pass.passed, "{pass:?}");
    assert_eq!(pass.exit_code, Some(0));
    assert_eq!(pass.error, None);
    assert!(pass.output.contains("from-the-repo"), "{pass:?}");
    assert_eq!(pass.image, BUSYBOX);
    assert_eq!(pass.command, "sh t.sh");

    let fail = sandbox
        .run_tests(&request(
            repo.path(),
            "echo out; echo err >&2; exit 3",
            BUSYBOX,
        ))
        .await;
    assert!(!fail.passed);
    assert_eq!(fail.exit_code, Some(3));
    assert_eq!(fail.error, None, "failing tests are not a sandbox error");
    assert!(
        fail.output.contains("out") && fail.output.contains("err"),
        "stdout and stderr: {fail:?}"
    );
}

#[tokio::test]
async fn a_test_program_missing_from_the_image_is_unsupported_not_a_failure() {
    let Some((sandbox, _home)) = sandbox().await else {
        return;
    };
    let repo = worktree(&[("t.sh", "echo never")]);
    let result = sandbox
        .run_tests(&request(repo.path(), "pnpm test", BUSYBOX))
        .await;
    let error = result
        .error
        .clone()
        .expect("the box could not run the tests");
    assert_eq!(error.kind, SandboxErrorKind::Unsupported, "{result:?}");
    assert!(
        error.message.contains("`pnpm` is not in the image")
            && error.message.contains("exit code 127"),
        "{}",
        error.message
    );
    assert!(!result.passed);
}

#[tokio::test]
async fn a_test_that_never_ends_is_killed_and_nothing_is_left() {
    let Some((sandbox, _home)) = sandbox().await else {
        return;
    };
    let repo = worktree(&[]);
    let mut req = request(
        repo.path(),
        "trap '' TERM INT; echo started; sleep 600",
        BUSYBOX,
    );
    req.limits.timeout_secs = 2;
    let started = Instant::now();
    let result = sandbox.run_tests(&req).await;
    assert!(result.timed_out, "{result:?}");
    assert!(!result.passed);
    assert_eq!(
        result.exit_code, None,
        "a killed box has no exit code of its own"
    );
    assert!(
        result.output.contains("started"),
        "output up to the kill is kept: {result:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "killed at the limit, not at the end of sleep"
    );
    assert!(
        boxes_of(&req.session_id).await.is_empty(),
        "the box is gone"
    );
}

#[tokio::test]
async fn a_dropped_run_leaves_no_box_behind() {
    // The caller gives up (its task is cancelled) while the box runs: the box
    // must not outlive the run, since killing a client never stops a container.
    let Some((sandbox, _home)) = sandbox().await else {
        return;
    };
    let repo = worktree(&[]);
    let req = request(repo.path(), "sleep 600", BUSYBOX);
    let run = sandbox.run_tests(&req);
    assert!(
        tokio::time::timeout(Duration::from_secs(3), run)
            .await
            .is_err()
    );
    let mut left = boxes_of(&req.session_id).await;
    for _ in 0..50 {
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        left = boxes_of(&req.session_id).await;
    }
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[tokio::test]
async fn a_2_gb_allocation_is_out_of_memory() {
    let Some((sandbox, _home)) = sandbox().await else {
        return;
    };
    let repo = worktree(&[]);
    let req = request(
        repo.path(),
        "python3 -c \"b = b'x' * (2 << 30); print(len(b))\"",
        DEBIAN,
    );
    let result = sandbox.run_tests(&req).await;
    assert!(result.out_of_memory, "{result:?}");
    assert!(!result.passed);
    assert!(!result.timed_out);
    assert_eq!(
        result.error, None,
        "running out of memory is the tests' failure, not the box's"
    );
    assert!(boxes_of(&req.session_id).await.is_empty());
}

#[tokio::test]
async fn no_network_not_even_to_the_host() {
    let Some((sandbox, _home)) = sandbox().await else {
        return;
    };
    // Something on the host that a box with a network could reach.
    let listener = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let bridge = docker().inspect_network("bridge", None).await.unwrap();
    // The host's address on the bridge: the gateway, or the subnet's first address when unnamed.
    let config = bridge
        .ipam
        .and_then(|i| i.config)
        .and_then(|c| c.into_iter().next())
        .unwrap();
    let gateway = config.gateway.unwrap_or_else(|| {
        let subnet = config.subnet.unwrap();
        let base = subnet
            .split('/')
            .next()
            .unwrap()
            .rsplit_once('.')
            .unwrap()
            .0
            .to_owned();
        format!("{base}.1")
    });
    let repo = worktree(&[]);
    let script = format!(
        "getent hosts deb.debian.org && exit 10; \
         bash -c 'echo > /dev/tcp/1.1.1.1/80' && exit 11; \
         bash -c 'echo > /dev/tcp/{gateway}/{port}' && exit 12; \
         python3 -c \"import socket; socket.create_connection(('{gateway}', {port}), 2)\" && exit 13; \
         ip=$(cat /proc/net/route | wc -l); echo routes=$ip; exit 0"
    );
    let result = sandbox
        .run_tests(&request(repo.path(), &script, DEBIAN))
        .await;
    assert!(result.passed, "every way out failed: {result:?}");
    assert!(
        result.output.contains("routes=1"),
        "only the route table's header, no route: {result:?}"
    );
    assert!(
        listener.accept().is_err(),
        "nothing reached the host's listener"
    );
}

#[tokio::test]
async fn the_repo_and_the_system_are_read_only() {
    let Some((sandbox, _home)) = sandbox().await else {
        return;
    };
    let repo = worktree(&[("src.txt", "original")]);
    let script = "echo changed > /work/src.txt && exit 10; touch /work/new && exit 11; \
                  touch /etc/new && exit 12; touch /bin/new && exit 13; \
                  echo scratch > /tmp/ok && cat /tmp/ok";
    let result = sandbox
        .run_tests(&request(repo.path(), script, BUSYBOX))
        .await;
    assert!(result.passed, "{result:?}");
    assert!(
        result.output.contains("Read-only file system"),
        "{result:?}"
    );
    assert!(
        result.output.contains("scratch"),
        "/tmp is writable: {result:?}"
    );
    assert_eq!(
        std::fs::read_to_string(repo.path().join("src.txt")).unwrap(),
        "original"
    );
    assert!(!repo.path().join("new").exists());
}

#[tokio::test]
async fn output_is_capped_at_the_last_64_kb() {
    let Some((sandbox, _home)) = sandbox().await else {
        return;
    };
    let repo = worktree(&[]);
    let result = sandbox
        .run_tests(&request(
            repo.path(),
            "echo FIRST; yes | head -c 3000000; echo LAST",
            BUSYBOX,
        ))
        .await;
    assert!(result.passed, "{:?}", result.error);
    assert_eq!(result.output.len(), 64 * 1024);
    assert!(result.output.ends_with("y\nLAST\n"), "the end is kept");
    assert!(!result.output.contains("FIRST"), "the start is dropped");
}

#[tokio::test]
async fn the_box_gets_the_requested_timezone_or_the_hosts() {
    let Some((sandbox, _home)) = sandbox().await else {
        return;
    };
    let repo = worktree(&[]);
    let mut req = request(repo.path(), "date +%Z; echo TZ=$TZ", DEBIAN);
    req.timezone = Some("Asia/Karachi".into());
    let karachi = sandbox.run_tests(&req).await;
    assert!(karachi.output.starts_with("PKT\n"), "{karachi:?}");
    req.timezone = Some("UTC".into());
    assert!(sandbox.run_tests(&req).await.output.starts_with("UTC\n"));
    req.timezone = None;
    let host = sandbox.run_tests(&req).await;
    assert!(
        host.output
            .contains(&format!("TZ={}", sandbox_docker::host_timezone(None))),
        "{host:?}"
    );
    req.timezone = Some("Pacific Standard Time".into());
    let bad = sandbox.run_tests(&req).await;
    assert_eq!(
        bad.error.unwrap().kind,
        SandboxErrorKind::Failed,
        "a Windows zone name is refused, not ignored"
    );
}

#[tokio::test]
async fn result_files_are_numbered_across_restarts() {
    let Some((sandbox, home)) = sandbox().await else {
        return;
    };
    let repo = worktree(&[]);
    let req = request(repo.path(), "exit 0", BUSYBOX);
    assert_eq!(sandbox.run_tests(&req).await.n, 1);
    assert_eq!(sandbox.run_tests(&req).await.n, 2);
    drop(sandbox);
    // A new process: the numbering continues from the disk.
    let again = engine(DockerSandbox::new(home.path()));
    let third = again
        .run_tests(&request(repo.path(), "exit 4", BUSYBOX))
        .await;
    let third_of_same = again.run_tests(&req).await;
    assert_eq!(third_of_same.n, 3);
    assert_eq!(third.n, 1, "numbers are per session");
    let read = |n| -> SandboxResult {
        serde_json::from_slice(
            &std::fs::read(result_file(home.path(), &req.session_id, n)).unwrap(),
        )
        .unwrap()
    };
    assert_eq!(read(3), third_of_same);
    assert!(read(1).passed && read(2).passed);
    assert_eq!(read(1).exit_code, Some(0));
}

#[tokio::test]
async fn a_leftover_box_never_gives_a_false_pass() {
    let Some((sandbox, _home)) = sandbox().await else {
        return;
    };
    let repo = worktree(&[]);
    let req = request(repo.path(), "exit 1", BUSYBOX);
    // A crashed run left a box named like the next run's, which exited 0.
    let name = format!("ch-{}-1", req.session_id.short());
    let docker = docker();
    let body = ContainerCreateBody {
        image: Some(BUSYBOX.into()),
        cmd: Some(vec!["true".into()]),
        labels: Some([("codehands.session".to_owned(), req.session_id.to_string())].into()),
        ..Default::default()
    };
    docker
        .create_container(
            Some(CreateContainerOptionsBuilder::default().name(&name).build()),
            body,
        )
        .await
        .unwrap();
    docker.start_container(&name, None).await.unwrap();
    let _ = docker.wait_container(&name, None).next().await;
    let result = sandbox.run_tests(&req).await;
    assert_eq!(result.n, 1);
    assert!(!result.passed, "{result:?}");
    assert_eq!(result.exit_code, Some(1));
    assert!(boxes_of(&req.session_id).await.is_empty());
}

#[tokio::test]
async fn a_box_that_cannot_start_is_sandbox_failed() {
    let Some((sandbox, _home)) = sandbox().await else {
        return;
    };
    let repo = worktree(&[]);
    let mut req = request(repo.path(), "true", BUSYBOX);
    req.limits.memory_bytes = 1 << 20; // below what the engine allows
    let result = sandbox.run_tests(&req).await;
    let error = result.error.clone().expect("an error");
    assert_eq!(error.kind, SandboxErrorKind::Failed, "{result:?}");
    assert!(
        error.message.contains("memory"),
        "the engine's reason: {}",
        error.message
    );
    assert!(!result.passed);
    assert!(boxes_of(&req.session_id).await.is_empty());

    let missing = sandbox
        .run_tests(&request(repo.path(), "true", "codehands/no-such-image:0"))
        .await;
    let error = missing.error.expect("an error");
    assert_eq!(error.kind, SandboxErrorKind::Failed);
    assert!(
        error.message.contains("codehands/no-such-image:0"),
        "names the image: {}",
        error.message
    );
    assert!(
        error.message.contains("cargo xtask images"),
        "says how to provide it: {}",
        error.message
    );
}

fn node_profile() -> RepoProfile {
    RepoProfile {
        language: Language::Node,
        package_manager: Some(PackageManager::Npm),
        test_command: Some("npm test".into()),
        node_version: None,
        needs_install: true,
    }
}

const PACKAGE: &str = r#"{
  "name": "fixture", "version": "1.0.0", "private": true,
  "scripts": { "postinstall": "touch /work/POSTINSTALL_RAN", "test": "node -e \"require('dep').check()\"" },
  "dependencies": { "dep": "file:./vendor/dep" }
}"#;
const DEP_PACKAGE: &str = r#"{
  "name": "dep", "version": "1.0.0", "main": "index.js",
  "scripts": { "install": "touch /work/DEP_INSTALL_RAN" }
}"#;
const DEP_INDEX: &str = "exports.check = () => console.log('dep loaded');\n";

fn node_repo(gitignore: Option<&str>, package: &str) -> tempfile::TempDir {
    let mut files = vec![
        ("package.json", package),
        ("vendor/dep/package.json", DEP_PACKAGE),
        ("vendor/dep/index.js", DEP_INDEX),
    ];
    if let Some(text) = gitignore {
        files.push((".gitignore", text));
    }
    let repo = worktree(&files);
    git(repo.path(), &["init", "-q"]);
    git(repo.path(), &["add", "."]);
    git(repo.path(), &["commit", "-q", "-m", "fixture"]);
    repo
}

#[tokio::test]
async fn install_runs_no_scripts_and_adds_no_lockfile() {
    let Some((sandbox, _home)) = sandbox().await else {
        return;
    };
    let repo = node_repo(Some("node_modules/\n"), PACKAGE);
    let mut req = request(repo.path(), "npm test", DEBIAN);
    req.test_command = None;
    req.profile = node_profile();
    let result = sandbox.run_tests(&req).await;
    assert!(result.passed, "{result:?}");
    assert!(
        result.output.contains("dep loaded"),
        "the test box saw the installed dependency: {result:?}"
    );
    assert!(
        repo.path().join("node_modules/dep").exists(),
        "installed into the worktree"
    );
    assert!(
        !repo.path().join("POSTINSTALL_RAN").exists(),
        "the repo's install script did not run"
    );
    assert!(
        !repo.path().join("DEP_INSTALL_RAN").exists(),
        "the dependency's install script did not run"
    );
    assert!(
        !repo.path().join("package-lock.json").exists(),
        "no lockfile added"
    );
    assert!(
        boxes_of(&req.session_id).await.is_empty(),
        "both boxes are gone"
    );
}

#[tokio::test]
async fn a_failed_install_is_install_failed() {
    let Some((sandbox, _home)) = sandbox().await else {
        return;
    };
    let broken = PACKAGE.replace("file:./vendor/dep", "file:./vendor/missing");
    let repo = node_repo(Some("node_modules/\n"), &broken);
    let mut req = request(repo.path(), "npm test", DEBIAN);
    req.profile = node_profile();
    let result = sandbox.run_tests(&req).await;
    let error = result.error.clone().expect("an error");
    assert_eq!(error.kind, SandboxErrorKind::InstallFailed, "{result:?}");
    assert!(error.message.contains("npm install"), "{}", error.message);
    assert!(!result.output.is_empty(), "npm's own words are kept");
    assert!(!result.passed);
    assert_eq!(result.exit_code, None, "the tests never ran");
    assert!(boxes_of(&req.session_id).await.is_empty());
}

#[tokio::test]
async fn node_modules_must_be_git_ignored() {
    let Some((sandbox, _home)) = sandbox().await else {
        return;
    };
    let repo = node_repo(Some("dist/\n"), PACKAGE);
    let mut req = request(repo.path(), "npm test", DEBIAN);
    req.profile = node_profile();
    let result = sandbox.run_tests(&req).await;
    let error = result.error.expect("an error");
    assert_eq!(error.kind, SandboxErrorKind::Unsupported);
    assert!(error.message.starts_with(NOT_IGNORED), "{}", error.message);
    assert!(
        boxes_of(&req.session_id).await.is_empty(),
        "no box was started"
    );
    assert!(
        !repo.path().join("node_modules").exists(),
        "nothing was installed"
    );
}

#[tokio::test]
async fn docker_unavailable_is_sandbox_unavailable() {
    // Needs no engine: the point is that there is none at this address.
    let home = tempfile::tempdir().unwrap();
    let repo = worktree(&[]);
    let sandbox =
        DockerSandbox::new(home.path()).with_docker_host("unix:///nonexistent/docker.sock");
    assert!(!sandbox.available().await);
    let req = request(repo.path(), "true", BUSYBOX);
    let result = sandbox.run_tests(&req).await;
    let error = result.error.clone().expect("an error");
    assert_eq!(error.kind, SandboxErrorKind::Unavailable, "{result:?}");
    assert!(
        error.message.contains("Start Docker"),
        "says what to do: {}",
        error.message
    );
    assert!(!result.passed);
    let saved = std::fs::read(result_file(home.path(), &req.session_id, 1))
        .expect("the result is saved too");
    assert_eq!(
        serde_json::from_slice::<SandboxResult>(&saved).unwrap(),
        result
    );
}

#[tokio::test]
async fn python_installs_into_an_ignored_venv_and_runs_pytest() {
    let Some((sandbox, _home)) = sandbox().await else {
        return;
    };
    let test_file = "def test_adds():\n    assert 1 + 1 == 2\n";
    let files = [
        ("requirements.txt", "pytest\n"),
        ("test_sample.py", test_file),
        (".gitignore", ".venv/\n"),
    ];
    let repo = worktree(&files);
    git(repo.path(), &["init", "-q"]);
    git(repo.path(), &["add", "."]);
    git(repo.path(), &["commit", "-q", "-m", "fixture"]);
    let mut req = request(repo.path(), "", DEBIAN);
    req.test_command = None;
    req.profile = RepoProfile {
        language: Language::Python,
        package_manager: Some(PackageManager::Pip),
        test_command: Some("python -m pytest".into()),
        node_version: None,
        needs_install: true,
    };
    let result = sandbox.run_tests(&req).await;
    assert!(result.passed, "{result:?}");
    assert!(result.output.contains("1 passed"), "{result:?}");
    assert!(
        repo.path().join(".venv/bin/python").exists(),
        "the venv is in the worktree"
    );

    std::fs::write(repo.path().join(".gitignore"), "build/\n").unwrap();
    let refused = sandbox.run_tests(&req).await;
    let error = refused.error.expect("an error");
    assert_eq!(error.kind, SandboxErrorKind::Unsupported);
    assert!(
        error.message.starts_with("add .venv/ to .gitignore first"),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn remove_leftovers_finds_a_sessions_boxes_by_label() {
    let Some((sandbox, _home)) = sandbox().await else {
        return;
    };
    let (crashed, other) = (
        runner_contract::SessionId::new_random(),
        runner_contract::SessionId::new_random(),
    );
    let docker = docker();
    // What a crash leaves: a box still running and one that exited, plus another session's.
    for (id, name_suffix, cmd) in [
        (crashed, "1", "sleep 600"),
        (crashed, "1-install", "true"),
        (other, "1", "sleep 600"),
    ] {
        let name = format!("ch-{}-{name_suffix}", id.short());
        let body = ContainerCreateBody {
            image: Some(BUSYBOX.into()),
            cmd: Some(vec!["sh".into(), "-c".into(), cmd.into()]),
            labels: Some([("codehands.session".to_owned(), id.to_string())].into()),
            ..Default::default()
        };
        docker
            .create_container(
                Some(CreateContainerOptionsBuilder::default().name(&name).build()),
                body,
            )
            .await
            .unwrap();
        docker.start_container(&name, None).await.unwrap();
    }
    let mut removed = sandbox.remove_leftovers(Some(&crashed)).await.unwrap();
    removed.sort();
    let short = crashed.short();
    assert_eq!(
        removed,
        vec![format!("ch-{short}-1"), format!("ch-{short}-1-install")]
    );
    assert!(boxes_of(&crashed).await.is_empty());
    assert_eq!(
        boxes_of(&other).await.len(),
        1,
        "another session's box is left alone"
    );
    assert_eq!(
        sandbox.remove_leftovers(Some(&other)).await.unwrap().len(),
        1
    );
    assert!(boxes_of(&other).await.is_empty());
}

#[tokio::test]
async fn rust_runs_cargo_test_offline() {
    let Some((sandbox, _home)) = sandbox().await else {
        return;
    };
    let manifest = "[package]\nname = \"fixture\"\nversion = \"0.1.0\"\nedition = \"2021\"\n";
    let lock = "# This file is automatically @generated by Cargo.\n# It is not intended for manual editing.\nversion = 3\n\n[[package]]\nname = \"fixture\"\nversion = \"0.1.0\"\n";
    let lib = "pub fn add(a: u32, b: u32) -> u32 { a + b }\n\n#[test]\nfn adds() { assert_eq!(add(1, 1), 2); }\n";
    let repo = worktree(&[
        ("Cargo.toml", manifest),
        ("Cargo.lock", lock),
        ("src/lib.rs", lib),
    ]);
    let mut req = request(repo.path(), "", DEBIAN);
    req.test_command = None;
    req.image = None;
    req.profile = RepoProfile {
        language: Language::Rust,
        package_manager: Some(PackageManager::Cargo),
        test_command: Some("cargo test".into()),
        node_version: None,
        needs_install: false,
    };
    let result = sandbox.run_tests(&req).await;
    assert_eq!(
        result.image, DEBIAN,
        "the local map tests Rust in the Debian image"
    );
    assert!(result.passed, "{result:?}");
    assert!(result.output.contains("test adds ... ok"), "{result:?}");
    assert!(
        !repo.path().join("target").exists(),
        "the build stays in the box's /tmp"
    );
}
