//! The box keeps the runner's promises: the recorded process is the box, a stop ends
//! everything in it, `recover` cleans what a box killed with its outer process left (its
//! sockets, its cgroup), a session's isolation holds for every turn, and a decided session
//! leaves no private home behind.

use crate::support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use futures::StreamExt;
use runner_contract::{AgentName, Isolation, Runner, SessionId, SessionState, StartOptions};
use runner_testkit::runner as suite;
use support::{World, process_running};

fn options(world: &World, id: SessionId) -> StartOptions {
    StartOptions::new(
        id,
        &world.repo,
        runner_fake::demo_repo::PROMPT,
        AgentName::parse("fake").unwrap(),
    )
}

/// The box's plan of session `id`, once its agent runs: the recorded pid and the plan.
async fn running_box(world: &World, id: &SessionId) -> (u32, serde_json::Value) {
    let run = world.home.run_dir(id);
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if let Ok(text) = std::fs::read_to_string(run.join("agent.json"))
            && let Ok(value) = serde_json::from_str::<serde_json::Value>(&text)
            && let Some(pid) = value["process"]["pid"].as_u64()
            && run.join("box/sockets").exists()
        {
            let plan = std::fs::read(run.join("box.json")).unwrap();
            return (pid as u32, serde_json::from_slice(&plan).unwrap());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("the box of {id} never ran");
}

/// Whether `pid` runs (a zombie waiting to be reaped has ended).
fn pid_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

fn cmdline(pid: u32) -> String {
    String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default())
        .replace('\0', " ")
}

/// The cgroup folders of a plan (none where the machine gives no cgroup).
fn cgroup_dirs(plan: &serde_json::Value) -> Vec<PathBuf> {
    let cgroup = &plan["cgroup"];
    ["memory", "pids", "dir"]
        .iter()
        .flat_map(|key| {
            cgroup
                .as_object()
                .into_iter()
                .flat_map(|o| o.values())
                .filter_map(move |v| v[key].as_str())
        })
        .map(PathBuf::from)
        .collect()
}

async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn the_recorded_process_is_the_box_and_a_stop_ends_everything_in_it() {
    let world = World::demo();
    let runner = world.fake_runner("sleep", 0);
    let id = SessionId::new_random();
    let mut events = runner.start(options(&world, id)).await.unwrap();
    let (pid, plan) = running_box(&world, &id).await;
    assert!(cmdline(pid).contains("__box"), "{}", cmdline(pid));
    // The outer process is recorded as soon as it runs; bubblewrap starts the init a moment later.
    wait_until("the box's init runs", || process_running("__box-init")).await;
    let session = id.to_string();
    wait_until("the box runs the agent", || process_running(&session)).await;
    runner.stop(&id).await.unwrap();
    while events.next().await.is_some() {}
    assert_eq!(
        runner.session(&id).await.unwrap().state,
        SessionState::Stopped
    );
    wait_until("nothing of the box is left", || !process_running(&session)).await;
    assert!(
        !world.home.run_dir(&id).join("box/sockets").exists(),
        "its sockets went with it"
    );
    for dir in cgroup_dirs(&plan) {
        assert!(!dir.exists(), "{} is left", dir.display());
    }
    runner.reject(&id).await.unwrap();
}

#[tokio::test]
async fn recover_cleans_what_a_box_killed_with_its_outer_process_left() {
    let world = World::demo();
    let id = SessionId::new_random();
    // The runner lives on a runtime of its own, which goes with it: its supervising task goes
    // too (dropping a runner alone leaves that task running, and it would end the turn and
    // clean up itself), and nobody supervises the run any more.
    let (pid, plan) = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                let found = runtime.block_on(async {
                    let runner = world.fake_runner("sleep", 0);
                    let _events = runner.start(options(&world, id)).await.unwrap();
                    running_box(&world, &id).await
                });
                runtime.shutdown_timeout(Duration::from_secs(10));
                found
            })
            .join()
            .unwrap()
    });
    // It may be gone already: the runtime's end may have killed its child.
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
    let session = id.to_string();
    wait_until("the box died with its outer process", || {
        !process_running(&session)
    })
    .await;
    let sockets = world.home.run_dir(&id).join("box/sockets");
    assert!(
        sockets.exists(),
        "a killed box cannot clean up after itself"
    );
    // The box's last process gone, its output is whole once the relay carrying it ends: only
    // then is the turn one that nobody runs (before, recover rightly adopts it).
    let agent: serde_json::Value =
        serde_json::from_slice(&std::fs::read(world.home.run_dir(&id).join("agent.json")).unwrap())
            .unwrap();
    if let Some(relay) = agent["relay"]["pid"].as_u64() {
        wait_until("the output relay ended", || !pid_alive(relay as u32)).await;
    }
    let runner = world.fake_runner("sleep", 0);
    runner.recover().await.unwrap();
    assert!(!sockets.exists(), "recover removed the sockets");
    for dir in cgroup_dirs(&plan) {
        assert!(
            !dir.exists(),
            "recover removed the cgroup {}",
            dir.display()
        );
    }
}

#[tokio::test]
async fn every_turn_of_a_session_runs_as_its_first_and_a_decided_one_keeps_no_home() {
    let world = World::demo();
    let runner = world.fake_runner("replay", 0);
    let id = SessionId::new_random();
    let mut unboxed = options(&world, id);
    unboxed.isolation = Isolation::None;
    suite::collect(runner.start(unboxed).await.unwrap()).await;
    let record = runner.session(&id).await.unwrap();
    assert_eq!(record.isolation, Isolation::None);
    assert!(
        !world.home.run_dir(&id).join("box.json").exists(),
        "no box for an unboxed turn"
    );
    runner.reject(&id).await.unwrap();

    let boxed = SessionId::new_random();
    suite::collect(runner.start(options(&world, boxed)).await.unwrap()).await;
    let run = world.home.run_dir(&boxed);
    assert_eq!(
        runner.session(&boxed).await.unwrap().isolation,
        Isolation::Box
    );
    assert!(run.join("box.json").exists() && run.join("home").is_dir());
    // A follow-up is boxed too, in the same private home.
    let follow_up = runner.send(&boxed, "Carry on.".into()).await.unwrap();
    let runner_contract::Sent::FollowUp(events) = follow_up else {
        panic!("a follow-up turn");
    };
    suite::collect(events).await;
    assert!(run.join("home").is_dir());
    runner.approve(&boxed, "Fix the month").await.unwrap();
    for gone in ["home", "tmp", "box", "box.json"] {
        assert!(!run.join(gone).exists(), "{gone} is left after approve");
    }
}

#[test]
fn a_turn_with_another_isolation_than_its_sessions_is_refused() {
    let world = World::demo();
    let out = support::run(world.codehands().args([
        "run",
        world.repo.to_str().unwrap(),
        "--agent",
        "fake",
        "--then",
        "keep",
        "--json",
    ]));
    let lines = support::json_lines(&out);
    let id = lines[0]["sessionId"].as_str().unwrap().to_owned();
    let refused =
        support::run(
            world
                .codehands()
                .args(["send", &id, "more", "--isolation", "none"]),
        );
    assert!(!refused.status.success());
    let stderr = support::text(&refused.stderr);
    assert!(
        stderr.contains("runs with --isolation box") && stderr.contains("every turn"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_machine_that_cannot_box_locally_says_so_even_when_a_docker_engine_answers() {
    let world = World::demo();
    // No helper program: the local box cannot be made, whatever the Docker engine can do.
    let runner = world.runner_with(world.settings(), |setup| setup.box_helper = None);
    let err = runner.box_available().unwrap_err().to_string();
    assert!(err.contains("helper program"), "{err}");
    let refused = runner.start(options(&world, SessionId::new_random())).await;
    let err = refused
        .err()
        .expect("a local boxed start is refused")
        .to_string();
    assert!(err.contains("--isolation none"), "{err}");
    assert!(world.worktree_dirs().is_empty(), "nothing is made");
}
