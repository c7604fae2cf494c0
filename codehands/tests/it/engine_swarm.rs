//! `--engine swarm`: the box as a Docker Swarm `replicated-job` service. The test makes this
//! machine's engine a one-node swarm (`docker swarm init --advertise-addr 127.0.0.1`) unless it
//! is a swarm manager already, and leaves the swarm only when it joined it. One test, its steps
//! in turn, since a swarm is the engine's state and the steps share it: the run's events, diff
//! and commit equal the local run's, a stop leaves no service and no secret, and a supervisor
//! killed mid-run is followed by one that adopts the job.

use crate::support;
use crate::support::remote;

use remote::{
    Swarm, TestImage, approve, codehands, docker, docker_ready, left_on_swarm, run_kept, state,
    tree_and_parent, types, wait_until,
};
use support::{World, run, text};

fn new_id() -> String {
    runner_contract::SessionId::new_random().to_string()
}

#[test]
fn runs_on_a_swarm_keep_the_local_runs_promises() {
    if !docker_ready() {
        return;
    }
    let Some(_swarm) = Swarm::join() else {
        return;
    };
    let image = TestImage::build();
    let world = World::demo();
    let ch = |mode: &str, delay: u64| codehands(&world, mode, delay, None, &image.tag);

    // The fake agent as a job: the same events, diff and commit as on this machine.
    let local_id = new_id();
    let local_events = run_kept(&mut ch("replay", 0), "local", &local_id);
    let swarm_id = new_id();
    let swarm_events = run_kept(&mut ch("replay", 0), "swarm", &swarm_id);
    assert_eq!(
        types(&swarm_events),
        types(&local_events),
        "the same events, from the service's log"
    );
    assert_eq!(remote::record(&world, &swarm_id)["engine"], "swarm");
    let diff = |id: &str| text(&run(ch("replay", 0).args(["diff", id])).stdout);
    assert_eq!(
        diff(&swarm_id).replace(&swarm_id[..8], "<id8>"),
        diff(&local_id).replace(&local_id[..8], "<id8>"),
        "the same diff"
    );
    wait_for_cleanup(&world, &swarm_id);
    a_warm_box_takes_one_run(&world, &image, &local_events, &swarm_id);
    crate::engine_swarm_race::two_callers_race_for_one_warm_box(&world, &swarm_id);
    crate::engine_swarm_race::a_box_whose_claimer_left_is_taken_again(&world, &swarm_id);
    let local_commit = approve(&mut ch("replay", 0), &local_id);
    let swarm_commit = approve(&mut ch("replay", 0), &swarm_id);
    assert_eq!(
        tree_and_parent(&world, &swarm_commit),
        tree_and_parent(&world, &local_commit)
    );

    // A stop removes the job.
    let id = new_id();
    let started = run(ch("sleep", 0).args([
        "run",
        ".",
        "Fix it.",
        "--agent",
        "fake",
        "--engine",
        "swarm",
        "--detach",
        "--session-id",
        &id,
    ]));
    assert!(started.status.success(), "{}", text(&started.stderr));
    wait_until("the job runs", || !left_on_swarm(&id).is_empty());
    let env = docker(&[
        "service",
        "inspect",
        "--format",
        "{{json .Spec.TaskTemplate.ContainerSpec.Env}}",
        &format!("codehands-{}", plan_box(&world, &id)),
    ])
    .unwrap_or_default();
    assert!(
        !env.contains("CODEHANDS_FAKE") && env.contains("HOME=/box/home"),
        "the agent's env is not on the service: {env}"
    );
    // A running remote turn takes no input: said, and nothing is sent.
    for input in [vec!["send", &id, "also this"], vec!["interrupt", &id]] {
        let refused = run(ch("sleep", 0).args(&input));
        assert!(!refused.status.success(), "{input:?} was taken");
        assert!(
            text(&refused.stderr).contains("takes no input while its turn runs"),
            "{input:?}: {}",
            text(&refused.stderr)
        );
    }
    let stopped = run(ch("sleep", 0).args(["stop", &id]));
    assert!(stopped.status.success(), "{}", text(&stopped.stderr));
    wait_until("the run is stopped", || {
        state(&world, &id).as_deref() == Some("stopped")
    });
    wait_for_cleanup(&world, &id);
    assert!(run(ch("sleep", 0).args(["reject", &id])).status.success());

    // A supervisor killed mid-run: the next one adopts the job, no event lost or repeated.
    let id = new_id();
    let started = run(ch("replay", 250).args([
        "run",
        ".",
        "Fix it.",
        "--agent",
        "fake",
        "--engine",
        "swarm",
        "--detach",
        "--session-id",
        &id,
    ]));
    assert!(started.status.success(), "{}", text(&started.stderr));
    let events_file = world
        .home
        .run_dir(&runner_contract::SessionId::parse(&id).unwrap())
        .join("events.jsonl");
    // As long as the run goes on: a loaded node may take minutes to start the job's task.
    while !std::fs::read_to_string(&events_file).is_ok_and(|t| t.lines().count() >= 3) {
        let now = state(&world, &id);
        assert!(
            matches!(now.as_deref(), Some("queued" | "running")),
            "the run ended ({now:?}) before its first events"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let supervisor = support::supervisor_of(&id).expect("a detached supervisor runs the turn");
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(supervisor),
        nix::sys::signal::Signal::SIGKILL,
    );
    let followed = run(ch("replay", 0).args(["events", &id, "--follow", "--json"]));
    assert!(followed.status.success(), "{}", text(&followed.stderr));
    let events = support::json_lines(&followed);
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "no event lost or repeated"
    );
    assert_eq!(types(&events), types(&local_events));
    assert!(text(&run(ch("replay", 0).args(["diff", &id])).stdout).contains("getMonth() + 1"));
    wait_for_cleanup(&world, &id);

    attempts_run_each_in_a_box_of_its_own(&world, &image);
    a_real_agent_reaches_its_provider_and_nothing_else(&world);
    remote::a_shell_reaches_its_allow_list_and_nothing_else(
        &world,
        &image,
        "swarm",
        gateway(),
        &|id| left_on_swarm(id).is_empty(),
    );
}

/// The egress of `docker_gwbridge`'s gateway: the address of this machine a swarm's
/// containers with a way out reach.
fn gateway() -> std::net::IpAddr {
    docker(&[
        "network",
        "inspect",
        "docker_gwbridge",
        "--format",
        "{{(index .IPAM.Config 0).Gateway}}",
    ])
    .expect("the swarm's docker_gwbridge network (made by the jobs above)")
    .trim()
    .parse()
    .expect("a gateway address")
}

/// The real Claude Code as a job: its box reaches the scripted model server through the
/// box's egress proxy only (the server listens on the address of this machine that the
/// swarm's containers reach, the gateway of `docker_gwbridge`: on a real cluster that would be
/// the provider's host), fixes the demo, and the change comes back and is approved.
fn a_real_agent_reaches_its_provider_and_nothing_else(world: &World) {
    let Some(claude) = support::claude() else {
        return;
    };
    let image = TestImage::build_with(&[&claude]);
    let gateway = gateway();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let id = runner_contract::SessionId::new_random();
    let worktree = runtime.block_on(support::worktree_for(world, &id));
    let server = runtime
        .block_on(model_server::ModelServer::start_on(
            gateway,
            runner_fake::demo_repo::script(&worktree).follow_up(
                "Say what you changed.",
                model_server::Script::new([model_server::Turn::text(
                    "I added 1 to getMonth() in src/date.js.",
                )]),
            ),
        ))
        .expect("the scripted model server on the gateway");
    let id = id.to_string();
    let claude_cmd = || {
        let mut cmd = world.codehands();
        cmd.env("CLAUDE_BIN", &claude)
            .env("ANTHROPIC_BASE_URL", server.base_url())
            .env("ANTHROPIC_API_KEY", support::CLAUDE_TEST_KEY)
            .env("CODEHANDS_REMOTE_IMAGE", &image.tag)
            .env("NO_COLOR", "1")
            .current_dir(&world.repo);
        cmd
    };
    let out = run(claude_cmd().args([
        "run",
        ".",
        "Fix the failing test.",
        "--agent",
        "claude-code",
        "--engine",
        "swarm",
        "--then",
        "keep",
        "--json",
        "--session-id",
        &id,
    ]));
    let events = support::json_lines(&out);
    let kinds = types(&events);
    assert!(
        out.status.success()
            && kinds.iter().any(|k| k == "task.finished")
            && kinds.last().map(String::as_str) == Some("approval.requested"),
        "{kinds:?}\n{}\n{}",
        text(&out.stderr),
        events
            .iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        kinds.iter().any(|k| k == "file.changed"),
        "the edit is an event: {kinds:?}"
    );
    assert!(
        server.message_requests().len() >= 5,
        "every model call reached the server through the egress proxy: {}",
        server.message_requests().len()
    );
    let all = events.iter().map(|e| e.to_string()).collect::<String>();
    assert!(
        !all.contains(support::CLAUDE_TEST_KEY),
        "the key is in no event"
    );
    let diff = text(&run(claude_cmd().args(["diff", &id])).stdout);
    assert!(diff.contains("getMonth() + 1"), "{diff}\n{all}");
    wait_for_cleanup(world, &id);
    // A follow-up is a new job whose box starts from the home the first one left: Claude Code
    // resumes its conversation there (its request holds the first turn's messages).
    let before = server.message_requests().len();
    let more = run(claude_cmd().args(["send", &id, "Say what you changed.", "--json"]));
    assert!(more.status.success(), "{}", text(&more.stderr));
    let follow_up = server.message_requests()[before..]
        .first()
        .cloned()
        .expect("the follow-up reached the model");
    let history = follow_up["messages"].to_string();
    assert!(
        history.contains("Fix the failing test.") && history.contains("toolu_demo_03"),
        "the follow-up resumed the first turn's conversation: {history}"
    );
    assert_eq!(state(world, &id).as_deref(), Some("awaiting_approval"));
    wait_for_cleanup(world, &id);
    let commit = approve(&mut claude_cmd(), &id);
    let fixed = world.git(&["show", &format!("{commit}:src/date.js")]);
    assert!(fixed.contains("getMonth() + 1"), "{fixed}");
}

/// `--attempts 3 --engine swarm`: three jobs, one per attempt, each session's record naming
/// the engine; approving one rejects the others and leaves nothing on the swarm.
fn attempts_run_each_in_a_box_of_its_own(world: &World, image: &TestImage) {
    let ch = || codehands(world, "replay", 0, None, &image.tag);
    let out = run(ch().args([
        "run",
        ".",
        "Fix the failing test.",
        "--agent",
        "fake",
        "--attempts",
        "3",
        "--engine",
        "swarm",
    ]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let task = text(&out.stdout).trim().to_owned();
    let followed = run(ch().args(["task", &task, "--follow", "--json"]));
    let report = support::json_lines(&followed)
        .pop()
        .expect("the task's report");
    let ids: Vec<String> = report["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["sessionId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 3, "{report}");
    let mut boxes = std::collections::BTreeSet::new();
    for (attempt, id) in report["attempts"].as_array().unwrap().iter().zip(&ids) {
        assert_eq!(attempt["state"], "awaiting_approval", "{attempt}");
        assert_eq!(remote::record(world, id)["engine"], "swarm", "attempt {id}");
        boxes.insert(plan_box(world, id));
        assert!(text(&run(ch().args(["diff", id])).stdout).contains("getMonth() + 1"));
    }
    assert_eq!(boxes.len(), 3, "a box of its own per attempt");
    let out = run(ch().args(["approve", &ids[0], "--message", "Fix the month"]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    for (id, want) in ids.iter().zip(["approved", "rejected", "rejected"]) {
        assert_eq!(state(world, id).as_deref(), Some(want), "{id}");
        wait_for_cleanup(world, id);
    }
}

/// `CODEHANDS_SWARM_POOL`: a run takes a box started ahead of it (its phases say so, and its
/// plan names that box), with the events and diff of a local run; the box takes no second
/// run: it is gone after its run, and a new one runs in its place.
fn a_warm_box_takes_one_run(
    world: &World,
    image: &TestImage,
    local_events: &[serde_json::Value],
    cold_id: &str,
) {
    let run_dir = |id: &str| {
        world
            .home
            .run_dir(&runner_contract::SessionId::parse(id).unwrap())
    };
    let plan = std::fs::read(run_dir(cold_id).join("remote.json")).unwrap();
    let plan = engine_docker::RemotePlan::from_json(&plan).unwrap();
    assert_eq!(
        engine_docker::fill_pool(&plan, 1),
        Ok(1),
        "one warm box made"
    );
    let warm = || {
        docker(&[
            "ps",
            "--filter",
            "label=codehands.pool",
            "--filter",
            "status=running",
            "--format",
            "{{.Label \"codehands.box\"}}",
        ])
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_owned)
        .collect::<Vec<_>>()
    };
    wait_until("the warm box runs", || warm().len() == 1);
    let ahead = warm();
    let id = new_id();
    let events = run_kept(
        codehands(world, "replay", 0, None, &image.tag).env("CODEHANDS_SWARM_POOL", "1"),
        "swarm",
        &id,
    );
    assert_eq!(types(&events), types(local_events), "the same events");
    let phases = engine_docker::Phases::read(&run_dir(&id)).expect("the run's phases");
    assert!(phases.warm, "the run took a warm box: {phases:?}");
    let taken = plan_box(world, &id);
    assert_eq!(
        ahead,
        std::slice::from_ref(&taken),
        "the plan names the box started ahead"
    );
    let diff = run(codehands(world, "replay", 0, None, &image.tag).args(["diff", &id]));
    assert!(text(&diff.stdout).contains("getMonth() + 1"));
    remote::wait_while_removing(world, &id);
    let service = format!("codehands-{taken}");
    wait_until("the taken box is gone after its one run", || {
        docker(&["service", "inspect", &service]).is_none()
    });
    wait_until("a new warm box runs in its place", || {
        let now = warm();
        now.len() == 1 && now != ahead
    });
    let rejected = run(codehands(world, "replay", 0, None, &image.tag).args(["reject", &id]));
    assert!(rejected.status.success(), "{}", text(&rejected.stderr));
    for service in docker(&[
        "service",
        "ls",
        "--quiet",
        "--filter",
        "label=codehands.pool",
    ])
    .unwrap_or_default()
    .split_whitespace()
    {
        let _ = docker(&["service", "rm", service]);
    }
    // A job's container outlives its service (Docker 20.10).
    let left = docker(&["ps", "--all", "--quiet", "--filter", "label=codehands.pool"]);
    for container in left.unwrap_or_default().split_whitespace() {
        let _ = docker(&["rm", "--force", container]);
    }
}

/// Waits for the removal of session `id`'s box to end, then says what it left.
fn wait_for_cleanup(world: &World, id: &str) {
    remote::wait_while_removing(world, id);
    let left = left_on_swarm(id);
    assert!(left.is_empty(), "the box of {id} left on the swarm: {left}");
}

/// The box id in the run's plan.
fn plan_box(world: &World, id: &str) -> String {
    let plan = world
        .home
        .run_dir(&runner_contract::SessionId::parse(id).unwrap())
        .join("remote.json");
    let mut found = String::new();
    wait_until("the run's remote plan is written", || {
        std::fs::read(&plan)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|v| v["boxId"].as_str().map(|s| found = s.to_owned()))
            .is_some()
    });
    found
}
