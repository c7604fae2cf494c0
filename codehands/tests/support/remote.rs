//! Shared by the remote engine tests (`engine_docker.rs`, `engine_swarm.rs`): the image with
//! the binary under test, a TCP relay to the engine's socket, and the command line driven as a
//! person would drive it.

#![allow(dead_code)] // each test file uses part of it

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{World, json_lines, run, text};

/// Whether a Docker engine answers; a skip with the reason when not (a failure under CI).
pub fn docker_ready() -> bool {
    let ok = docker(&["version", "--format", "{{.Server.Version}}"]).is_some();
    if !ok {
        runner_core::testkit::skip(
            "no Docker engine answers: start Docker to test the remote engines",
        );
    }
    ok
}

/// `docker ARGS`, its stdout when it succeeded.
pub fn docker(args: &[&str]) -> Option<String> {
    let out = Command::new("docker")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .ok()?;
    out.status.success().then(|| text(&out.stdout))
}

/// An image with the `codehands` under test, removed when dropped (it is ours alone).
pub struct TestImage {
    /// Its tag.
    pub tag: String,
}

impl TestImage {
    /// Builds it (a few seconds: the binary and its libraries on `FROM scratch`).
    pub fn build() -> Self {
        Self::build_with(&[])
    }

    /// Builds it with `programs` in it too (the real agents a remote box runs).
    pub fn build_with(programs: &[&Path]) -> Self {
        let tag = format!("codehands/remote:test-{}", uuid_like());
        engine_docker::image::build(&tag, Path::new(env!("CARGO_BIN_EXE_codehands")), programs)
            .unwrap();
        Self { tag }
    }
}

impl Drop for TestImage {
    fn drop(&mut self) {
        let _ = docker(&["image", "rm", "--force", &self.tag]);
    }
}

fn uuid_like() -> String {
    runner_core::SessionId::new_random().to_string()[..13].replace('-', "")
}

/// A TCP port on loopback that relays to the engine's unix socket: `DOCKER_HOST=tcp://…`
/// reaches this engine as it would reach one on another machine.
pub fn tcp_relay() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            while let Ok((mut tcp, _)) = listener.accept().await {
                tokio::spawn(async move {
                    if let Ok(mut unix) =
                        tokio::net::UnixStream::connect("/var/run/docker.sock").await
                    {
                        let _ = tokio::io::copy_bidirectional(&mut tcp, &mut unix).await;
                    }
                });
            }
        });
    });
    port
}

/// `codehands` for `world` with the fake agent in `mode`, the engine at `docker_host` and
/// the box's image `image`.
pub fn codehands(
    world: &World,
    mode: &str,
    delay_ms: u64,
    docker_host: Option<&str>,
    image: &str,
) -> Command {
    let mut cmd = world.codehands();
    cmd.env("CODEHANDS_FAKE_MODE", mode)
        .env("CODEHANDS_FAKE_DELAY_MS", delay_ms.to_string())
        .env("CODEHANDS_REMOTE_IMAGE", image)
        .env("NO_COLOR", "1")
        .current_dir(&world.repo);
    if let Some(host) = docker_host {
        cmd.env("DOCKER_HOST", host);
    }
    cmd
}

/// `codehands run --agent fake --engine ENGINE --then keep --json` to its end: the events.
pub fn run_kept(cmd: &mut Command, engine: &str, id: &str) -> Vec<serde_json::Value> {
    let out = run(cmd
        .args([
            "run",
            ".",
            "Fix the failing test.",
            "--agent",
            "fake",
            "--json",
        ])
        .args(["--engine", engine, "--then", "keep", "--session-id", id]));
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    json_lines(&out)
}

/// The `type` of each event.
pub fn types(events: &[serde_json::Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or("?").to_owned())
        .collect()
}

/// The state on the session's record.
pub fn state(world: &World, id: &str) -> Option<String> {
    let path = world.home.sessions_dir().join(format!("{id}.json"));
    let record: serde_json::Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    record["state"].as_str().map(str::to_owned)
}

/// The record, as JSON.
pub fn record(world: &World, id: &str) -> serde_json::Value {
    let path = world.home.sessions_dir().join(format!("{id}.json"));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Waits up to 60 s for `done`.
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "timed out: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The session's approved commit: its tree and its parent.
pub fn tree_and_parent(world: &World, commit: &str) -> (String, String) {
    let tree = world
        .git(&["rev-parse", &format!("{commit}^{{tree}}")])
        .trim()
        .to_owned();
    let parent = world
        .git(&["rev-parse", &format!("{commit}^")])
        .trim()
        .to_owned();
    (tree, parent)
}

/// `codehands approve ID --json`: the commit.
pub fn approve(cmd: &mut Command, id: &str) -> String {
    let out = run(cmd.args(["approve", id, "--message", "Fix the month", "--json"]));
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    result["commit"].as_str().unwrap().to_owned()
}

impl TestImage {
    /// This image with Debian's static busybox (from `codehands/sandbox-busybox:1`, which
    /// `cargo xtask images` builds) at `/usr/local/bin/busybox`: a box whose agent is a shell.
    pub fn with_busybox(&self) -> Self {
        use std::io::Write;
        let tag = format!("{}-busybox", self.tag);
        let dockerfile = format!(
            "FROM codehands/sandbox-busybox:1 AS bb\nFROM {}\nCOPY --from=bb /bin/busybox /usr/local/bin/busybox\n",
            self.tag
        );
        let mut child = Command::new("docker")
            .args(["build", "--quiet", "--tag", &tag, "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(dockerfile.as_bytes())
            .unwrap();
        assert!(
            child.wait().unwrap().success(),
            "docker build of {tag} (is codehands/sandbox-busybox:1 there? `cargo xtask images`)"
        );
        Self { tag }
    }
}
