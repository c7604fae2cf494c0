//! `--engine docker`: the box on a Docker engine reached over TCP (a relay on loopback to this
//! machine's engine, as an engine on another machine would be reached). The base goes in and
//! the result comes back as data, and the run keeps the local run's promises: the same events,
//! the same diff and the same commit, a stop that leaves nothing on the engine, and a
//! supervisor killed mid-run whose successor adopts the box without losing or repeating an event.

use crate::support;
use crate::support::remote;

use remote::{
    TestImage, approve, codehands, docker, docker_ready, run_kept, state, tcp_relay,
    tree_and_parent, types, wait_until,
};
use support::{World, run, text};

fn new_id() -> String {
    runner_contract::SessionId::new_random().to_string()
}

/// The containers on the engine that name session `id`.
fn containers_of(id: &str) -> String {
    docker(&[
        "ps",
        "--all",
        "--quiet",
        "--filter",
        &format!("label=codehands.session={id}"),
    ])
    .unwrap_or_default()
}

#[test]
fn a_run_on_an_engine_over_tcp_commits_what_the_same_local_run_commits() {
    if !docker_ready() {
        return;
    }
    let image = TestImage::build();
    let host = format!("tcp://127.0.0.1:{}", tcp_relay());
    let world = World::demo();

    let local_id = new_id();
    let local_events = run_kept(
        &mut codehands(&world, "replay", 0, None, &image.tag),
        "local",
        &local_id,
    );
    let remote_id = new_id();
    let remote_events = run_kept(
        &mut codehands(&world, "replay", 0, Some(&host), &image.tag),
        "docker",
        &remote_id,
    );

    assert_eq!(
        types(&remote_events),
        types(&local_events),
        "the same events, from the box's log"
    );
    assert_eq!(
        remote::record(&world, &remote_id)["engine"],
        "docker",
        "the engine is on the record"
    );
    assert_eq!(
        state(&world, &remote_id).as_deref(),
        Some("awaiting_approval")
    );
    let diff = |id: &str| {
        text(&run(codehands(&world, "replay", 0, None, &image.tag).args(["diff", id])).stdout)
    };
    let (local_diff, remote_diff) = (diff(&local_id), diff(&remote_id));
    assert!(
        remote_diff.contains("getMonth() + 1"),
        "the agent's work came back: {remote_diff}"
    );
    assert_eq!(
        remote_diff.replace(&remote_id[..8], "<id8>"),
        local_diff.replace(&local_id[..8], "<id8>"),
        "the same diff"
    );
    // The box is removed by a process of its own after the turn: bounded by its life.
    remote::wait_while_removing(&world, &remote_id);
    assert!(
        containers_of(&remote_id).trim().is_empty(),
        "no container is left on the engine"
    );

    let local_commit = approve(
        &mut codehands(&world, "replay", 0, None, &image.tag),
        &local_id,
    );
    let remote_commit = approve(
        &mut codehands(&world, "replay", 0, Some(&host), &image.tag),
        &remote_id,
    );
    assert_eq!(
        tree_and_parent(&world, &remote_commit),
        tree_and_parent(&world, &local_commit),
        "the same tree on the same base"
    );
}

#[test]
fn a_stop_ends_the_box_and_leaves_nothing_on_the_engine() {
    if !docker_ready() {
        return;
    }
    let image = TestImage::build();
    let world = World::demo();
    let id = new_id();
    let started = run(codehands(&world, "sleep", 0, None, &image.tag).args([
        "run",
        ".",
        "Fix it.",
        "--agent",
        "fake",
        "--engine",
        "docker",
        "--detach",
        "--session-id",
        &id,
    ]));
    assert!(started.status.success(), "{}", text(&started.stderr));
    wait_until("the box runs on the engine", || {
        !containers_of(&id).trim().is_empty()
    });
    let stopped = run(codehands(&world, "sleep", 0, None, &image.tag).args(["stop", &id]));
    assert!(stopped.status.success(), "{}", text(&stopped.stderr));
    wait_until("the run is stopped", || {
        state(&world, &id).as_deref() == Some("stopped")
    });
    wait_until("the box is gone from the engine", || {
        containers_of(&id).trim().is_empty()
    });
    let rejected = run(codehands(&world, "sleep", 0, None, &image.tag).args(["reject", &id]));
    assert!(rejected.status.success(), "{}", text(&rejected.stderr));
}

#[test]
fn a_supervisor_killed_mid_run_is_followed_by_one_that_adopts_the_box() {
    if !docker_ready() {
        return;
    }
    let image = TestImage::build();
    let world = World::demo();
    let reference = run_kept(
        &mut codehands(&world, "replay", 0, None, &image.tag),
        "docker",
        &new_id(),
    );

    let id = new_id();
    let started = run(codehands(&world, "replay", 250, None, &image.tag).args([
        "run",
        ".",
        "Fix it.",
        "--agent",
        "fake",
        "--engine",
        "docker",
        "--detach",
        "--session-id",
        &id,
    ]));
    assert!(started.status.success(), "{}", text(&started.stderr));
    wait_until("the box runs on the engine", || {
        !containers_of(&id).trim().is_empty()
    });
    let events_file = world
        .home
        .run_dir(&runner_contract::SessionId::parse(&id).unwrap())
        .join("events.jsonl");
    wait_until("some events are in the log", || {
        std::fs::read_to_string(&events_file).is_ok_and(|t| t.lines().count() >= 3)
    });
    let supervisor = support::supervisor_of(&id).expect("a detached supervisor runs the turn");
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(supervisor),
        nix::sys::signal::Signal::SIGKILL,
    );

    let followed = run(codehands(&world, "replay", 0, None, &image.tag)
        .args(["events", &id, "--follow", "--json"]));
    assert!(followed.status.success(), "{}", text(&followed.stderr));
    let events = support::json_lines(&followed);
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "no event lost or repeated"
    );
    assert_eq!(
        types(&events),
        types(&reference),
        "the adopted run ends as an untouched one"
    );
    assert_eq!(state(&world, &id).as_deref(), Some("awaiting_approval"));
    let diff = run(codehands(&world, "replay", 0, None, &image.tag).args(["diff", &id]));
    assert!(text(&diff.stdout).contains("getMonth() + 1"));
    wait_until("the box is gone from the engine", || {
        containers_of(&id).trim().is_empty()
    });
}

/// An agent (a shell in the box) that leaves a link to the box's `/etc/passwd` in its tree
/// and changes a file: the result is refused whole, the turn fails saying why, and nothing of
/// it reaches the worktree.
#[test]
fn a_result_with_a_link_out_of_the_tree_fails_the_turn_and_applies_nothing() {
    if !docker_ready() {
        return;
    }
    let base = TestImage::build();
    let image = base.with_busybox();
    let world = World::demo();
    let profile = world.dir.path().join("hostile.toml");
    std::fs::write(
        &profile,
        r#"
name = "hostile"
description = "leaves a link out of its tree"
program = "busybox"
args = ["sh", "-c", "ln -s /etc/passwd leak && echo changed > README.md && echo done"]
parser = "text"
"#,
    )
    .unwrap();
    let id = new_id();
    let path = remote::busybox_on_path(&world);
    let out = run(codehands(&world, "replay", 0, None, &image.tag)
        .env("PATH", path)
        .args([
            "run", ".", "Leak it.", "--json", "--then", "keep", "--engine", "docker",
        ])
        .arg("--agent-file")
        .arg(&profile)
        .args(["--agent", "hostile", "--session-id", &id]));
    let events = support::json_lines(&out);
    let last = events.last().expect("events");
    assert_eq!(last["type"], "task.failed", "{last}");
    let said = last["payload"].to_string();
    assert!(
        said.contains("refused") && said.contains("leak"),
        "the failure says what was refused: {said}"
    );
    let worktree = remote::record(&world, &id)["worktreePath"]
        .as_str()
        .unwrap()
        .to_owned();
    let worktree = std::path::Path::new(&worktree);
    assert!(
        std::fs::symlink_metadata(worktree.join("leak")).is_err(),
        "the link is not applied"
    );
    assert!(
        !std::fs::read_to_string(worktree.join("README.md"))
            .unwrap_or_default()
            .contains("changed"),
        "nothing of the result is applied"
    );
    drop(image);
}

/// The box on an engine reaches the one port its profile allows, through its egress proxy,
/// and nothing else of this machine; the box, its proxy and its network go with the run.
#[test]
fn a_box_on_an_engine_reaches_its_allow_list_and_nothing_else() {
    if !docker_ready() {
        return;
    }
    let image = TestImage::build();
    let world = World::demo();
    // The default bridge's gateway: the one it names, else its subnet's first address (the
    // engine's default, which it does not list).
    let config = docker(&[
        "network",
        "inspect",
        "bridge",
        "--format",
        "{{range .IPAM.Config}}{{.Gateway}} {{.Subnet}}{{end}}",
    ])
    .expect("the engine's default bridge");
    let gateway: std::net::IpAddr = match config.split_whitespace().collect::<Vec<_>>()[..] {
        [gateway, _] => gateway.parse().expect("a gateway address"),
        [subnet] => {
            let network: std::net::Ipv4Addr = subnet.split('/').next().unwrap().parse().unwrap();
            std::net::Ipv4Addr::from(u32::from(network) + 1).into()
        }
        _ => panic!("the default bridge has no IPv4 subnet: {config}"),
    };
    let left = |id: &str| {
        let filter = format!("label=codehands.session={id}");
        let networks = docker(&["network", "ls", "--quiet", "--filter", &filter]);
        containers_of(id).trim().is_empty() && networks.unwrap_or_default().trim().is_empty()
    };
    remote::a_shell_reaches_its_allow_list_and_nothing_else(
        &world, &image, "docker", gateway, &left,
    );
}

/// Permission requests are answered while a turn runs, which a remote box cannot take: `--ask`
/// with a remote engine is refused before anything is made.
#[test]
fn asking_for_permission_on_a_remote_engine_is_refused_before_anything_is_made() {
    let world = World::demo();
    for engine in ["docker", "swarm"] {
        let out = run(world
            .codehands()
            .current_dir(&world.repo)
            // A stand-in program: the refusal comes before the agent would start.
            .env("CLAUDE_BIN", "/bin/true")
            .args([
                "run",
                ".",
                "Fix it.",
                "--agent",
                "claude-code",
                "--ask",
                "--json",
            ])
            .args(["--engine", engine]));
        assert!(!out.status.success(), "{engine}: --ask was taken");
        let said = text(&out.stderr);
        assert!(
            said.contains("takes no input while its turn runs") && said.contains("--engine local"),
            "{engine}: {said}"
        );
    }
    assert!(
        world
            .branches()
            .iter()
            .all(|b| !b.starts_with("codehands/"))
    );
    assert!(world.worktree_dirs().is_empty());
}
