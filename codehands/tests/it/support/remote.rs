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
        runner_testkit::skip("no Docker engine answers: start Docker to test the remote engines");
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
    /// Removes the image, and first the egress proxies a swarm made of it (kept for later
    /// runs of the same image, which will not come) with their networks, once their
    /// containers are gone (the networks go with the last of them).
    fn drop(&mut self) {
        let filter = format!("label=codehands.image={}", self.tag);
        let services = docker(&["service", "ls", "--quiet", "--filter", &filter]);
        for id in services.unwrap_or_default().split_whitespace() {
            let _ = docker(&["service", "rm", id]);
        }
        for _ in 0..240 {
            let networks = docker(&["network", "ls", "--quiet", "--filter", &filter]);
            let networks = networks.unwrap_or_default();
            if networks.trim().is_empty() {
                break;
            }
            for id in networks.split_whitespace() {
                let _ = docker(&["network", "rm", id]);
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        let _ = docker(&["image", "rm", "--force", &self.tag]);
    }
}

fn uuid_like() -> String {
    runner_contract::SessionId::new_random().to_string()[..13].replace('-', "")
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

/// Waits for `done` as long as the boxes make progress ([`progress`]): what a loaded node
/// is slow to do is waited for; a wait fails once nothing of ours has changed for
/// [`STALLED`] (a stuck box, not a slow one).
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let mut seen = progress();
    let mut changed = Instant::now();
    let mut asked = Instant::now();
    while !done() {
        if asked.elapsed() >= Duration::from_secs(1) {
            asked = Instant::now();
            let now = progress();
            if now != seen {
                seen = now;
                changed = Instant::now();
            }
        }
        assert!(
            changed.elapsed() < STALLED,
            "timed out: {what} (nothing changed for {STALLED:?}: {seen})"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// How long a wait lasts with nothing of ours changing.
pub const STALLED: Duration = Duration::from_secs(120);

/// What the boxes are doing, as one text that changes when they move: the engine's
/// containers and services of ours with their states, and this machine's drivers and
/// removals (`codehands __remote…` processes).
pub fn progress() -> String {
    let containers = docker(&[
        "ps",
        "--all",
        "--filter",
        "label=codehands.engine",
        "--format",
        "{{.ID}} {{.State}}",
    ]);
    let services = docker(&[
        "service",
        "ls",
        "--filter",
        "label=codehands.engine",
        "--format",
        "{{.ID}} {{.Replicas}}",
    ]);
    let drivers: Vec<String> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| {
            std::fs::read(entry.path().join("cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("\0__remote"))
        })
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    format!(
        "containers: {}; services: {}; drivers: {drivers:?}",
        containers.unwrap_or_default().trim(),
        services.unwrap_or_default().trim()
    )
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

/// A shell as the agent on `engine` (a profile whose `[network] allow` names one port of this
/// machine at `gateway`, the address its containers with a way out reach it on):
/// through its listener the allowed port answers; the same machine's other port has no
/// route, and the egress proxy refuses to tunnel to it.
pub fn a_shell_reaches_its_allow_list_and_nothing_else(
    world: &World,
    base: &TestImage,
    engine: &str,
    gateway: std::net::IpAddr,
    gone: &dyn Fn(&str) -> bool,
) {
    use std::io::{Read, Write};
    let image = base.with_busybox();
    let listen = |_| std::net::TcpListener::bind((gateway, 0)).unwrap();
    let (allowed, other) = (listen(()), listen(()));
    let (allowed_port, other_port) = (
        allowed.local_addr().unwrap().port(),
        other.local_addr().unwrap().port(),
    );
    for (listener, answer) in [(allowed, "reached-allowed"), (other, "reached-other")] {
        std::thread::spawn(move || {
            for mut conn in listener.incoming().flatten() {
                let mut request = [0u8; 256];
                let _ = conn.read(&mut request);
                let _ = conn.write_all(answer.as_bytes());
            }
        });
    }
    // A name this machine resolves, which the box must not (no DNS out, no way to leak data
    // in a query).
    let name = ["crates.io", "pypi.org", "deb.debian.org"]
        .into_iter()
        .find(|n| std::net::ToSocketAddrs::to_socket_addrs(&(*n, 443)).is_ok());
    let lookup = name.unwrap_or("localhost");
    let script = format!(
        "echo hi | nc -w 5 127.0.0.2 {allowed_port}; echo; \
         echo hi | nc -w 3 {gateway} {other_port} || echo no-route-to-other; \
         nslookup {lookup} 2>&1 | grep -q '^Name:' && echo dns-answered || echo no-dns; \
         (printf 'CONNECT {gateway}:{other_port} HTTP/1.1\\r\\n\\r\\n'; sleep 1) | nc -w 3 codehands-egress 3128 | head -1; \
         echo done"
    );
    let profile = world.dir.path().join("prober.toml");
    std::fs::write(
        &profile,
        format!(
            "name = \"prober\"\ndescription = \"tries every way out\"\nprogram = \"busybox\"\n\
             args = [\"sh\", \"-c\", {script:?}]\nparser = \"text\"\n\n[network]\n\
             allow = [\"{gateway}:{allowed_port}\"]\n"
        ),
    )
    .unwrap();
    let id = runner_contract::SessionId::new_random().to_string();
    let path = busybox_on_path(world);
    let out = run(codehands(world, "replay", 0, None, &image.tag)
        .env("PATH", path)
        .args(["run", ".", "Get out.", "--json", "--engine", engine])
        .args(["--then", "reject"])
        .arg("--agent-file")
        .arg(&profile)
        .args(["--agent", "prober", "--session-id", &id]));
    let said = json_lines(&out)
        .iter()
        .map(|e| e["payload"]["text"].as_str().unwrap_or_default().to_owned())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(said.contains("done"), "{said}\n{}", text(&out.stderr));
    assert!(
        said.contains("reached-allowed"),
        "the allowed port answers through the box's listener: {said}"
    );
    assert!(
        !said.contains("reached-other") && said.contains("no-route-to-other"),
        "the machine's other port is out of reach: {said}"
    );
    assert!(
        said.contains("HTTP/1.1 403"),
        "the egress proxy refuses a target off the allow list: {said}"
    );
    match name {
        Some(name) => assert!(
            said.contains("no-dns") && !said.contains("dns-answered"),
            "{name}, which this machine resolves, does not resolve in the box: {said}"
        ),
        None => {
            eprintln!("note: this machine resolves no public name; the box's DNS is not checked")
        }
    }
    wait_until("the prober's box, proxy and networks are gone", || {
        gone(&id)
    });
}

/// A PATH for `world` with a stand-in `busybox` first: a profile's program is looked up on the
/// image's PATH, and the runner's preflight wants one on this machine's too.
pub fn busybox_on_path(world: &World) -> String {
    let bin = world.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let stand_in = bin.join("busybox");
    std::fs::write(&stand_in, "#!/bin/sh\nexit 1\n").unwrap();
    std::fs::set_permissions(
        &stand_in,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Waits while the removal of session `id`'s box runs (a `__remote-cleanup` process of its own
/// after the turn): bounded by that process's life, not by a guess.
pub fn wait_while_removing(world: &World, id: &str) {
    let run_dir = world
        .home
        .run_dir(&runner_contract::SessionId::parse(id).unwrap())
        .display()
        .to_string();
    let removing = || {
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .any(|entry| {
                std::fs::read(entry.path().join("cmdline")).is_ok_and(|cmdline| {
                    let cmdline = String::from_utf8_lossy(&cmdline);
                    cmdline.contains(engine_docker::CLEANUP_COMMAND) && cmdline.contains(&run_dir)
                })
            })
    };
    while removing() {
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl TestImage {
    /// This image with a shell and Codex's install folder on it (`engine_docker::image_agents`,
    /// as `cargo xtask images` builds `codehands/remote:1`).
    pub fn with_agents(&self, codex: &Path) -> Self {
        let tag = format!("{}-agents", self.tag);
        let whole = [engine_docker::image_agents::KeptWhole {
            program: codex,
            levels_up: 2,
        }];
        engine_docker::image_agents::build(&tag, &self.tag, &whole).unwrap();
        Self { tag }
    }
}

/// This engine as a swarm manager while a [`Swarm`] lives: the tests of the binary that use
/// the swarm share it, and it is left (when a test made it) after the last of them.
pub struct Swarm(());

/// How many [`Swarm`]s live, and whether the first of them made the swarm.
static SWARM_USERS: std::sync::Mutex<(usize, bool)> = std::sync::Mutex::new((0, false));

impl Swarm {
    /// The engine as a manager (`docker swarm init --advertise-addr 127.0.0.1` unless it is one
    /// already); a skip (a failure under CI) when it is in a swarm it does not manage.
    pub fn join() -> Option<Self> {
        let mut users = SWARM_USERS.lock().unwrap_or_else(|e| e.into_inner());
        let state = docker(&[
            "info",
            "--format",
            "{{.Swarm.LocalNodeState}} {{.Swarm.ControlAvailable}}",
        ])?;
        match state.trim() {
            "active true" => {}
            "inactive false" => {
                let out = docker(&["swarm", "init", "--advertise-addr", "127.0.0.1"]);
                assert!(
                    out.is_some(),
                    "docker swarm init --advertise-addr 127.0.0.1 failed"
                );
                users.1 = true;
            }
            other => {
                runner_testkit::skip(&format!(
                    "this engine is in a swarm it does not manage ({other}): the swarm test needs a manager"
                ));
                return None;
            }
        }
        users.0 += 1;
        Some(Self(()))
    }
}

impl Drop for Swarm {
    fn drop(&mut self) {
        let mut users = SWARM_USERS.lock().unwrap_or_else(|e| e.into_inner());
        users.0 -= 1;
        if users.0 == 0 && users.1 {
            let _ = docker(&["swarm", "leave", "--force"]);
            users.1 = false;
        }
    }
}

/// The services, secrets and networks on the swarm that name session `id`.
pub fn left_on_swarm(id: &str) -> String {
    let filter = format!("label=codehands.session={id}");
    let services = docker(&["service", "ls", "--quiet", "--filter", &filter]).unwrap_or_default();
    let secrets = docker(&["secret", "ls", "--quiet", "--filter", &filter]).unwrap_or_default();
    let networks = docker(&["network", "ls", "--quiet", "--filter", &filter]).unwrap_or_default();
    format!("{services}{secrets}{networks}").trim().to_owned()
}
