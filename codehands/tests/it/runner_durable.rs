//! Runs outlive the runner that started them, through the library as a daemon uses it:
//! the event log, replay from any seq, re-adoption by a new runner, and a turn finished from
//! the agent's output when it ended while nothing supervised it.

use crate::support;

use std::path::Path;
use std::time::{Duration, Instant};

use futures::StreamExt;
use runner_contract::event::FailureKind;
use runner_contract::{
    AgentName, Event, EventBody, PickOptions, Runner, SessionId, SessionState, StartOptions,
};
use runner_testkit::runner as suite;
use support::{World, assert_contiguous, new_id, types};

fn options(world: &World, id: SessionId) -> StartOptions {
    StartOptions::new(
        id,
        &world.repo,
        runner_fake::demo_repo::PROMPT,
        AgentName::parse("fake").unwrap(),
    )
}

/// The agent's process, once its supervisor has recorded it (waiting without blocking the
/// runtime the supervisor task runs on).
async fn agent_pid(world: &World, id: &SessionId) -> u32 {
    let path = world.home.run_dir(id).join("agent.json");
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if let Ok(text) = std::fs::read_to_string(&path)
            && let Ok(value) = serde_json::from_str::<serde_json::Value>(&text)
            && let Some(pid) = value["process"]["pid"].as_u64()
        {
            return pid as u32;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("the agent of {id} never started");
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

/// Whether some process holds the lock file at `path`.
fn lock_held(path: &std::path::Path) -> bool {
    std::fs::File::open(path)
        .is_ok_and(|f| matches!(f.try_lock(), Err(std::fs::TryLockError::WouldBlock)))
}

async fn wait_gone(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while alive(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!alive(pid), "the agent {pid} ended");
}

/// The events as they would compare across runs: type and payload, ts and ids left out.
fn shape(events: &[Event], id: &SessionId) -> Vec<serde_json::Value> {
    events
        .iter()
        .map(|e| {
            let text = serde_json::to_string(&e.body)
                .unwrap()
                .replace(&id.to_string(), "<id>")
                .replace(&id.short(), "<id8>");
            serde_json::from_str(&text).unwrap()
        })
        .collect()
}

fn logged(world: &World, id: &SessionId) -> Vec<Event> {
    std::fs::read_to_string(world.home.run_dir(id).join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn every_event_is_in_the_log_before_the_caller_has_it() {
    let world = World::demo();
    let runner = world.fake_runner("replay", 0);
    let id = new_id();
    let mut stream = runner.start(options(&world, id)).await.unwrap();
    let mut seen = Vec::new();
    while let Some(event) = stream.next().await {
        let in_log = logged(&world, &id);
        assert!(
            in_log.iter().any(|e| e == &event),
            "event {} is in the log when the caller receives it",
            event.seq
        );
        seen.push(event);
    }
    assert_eq!(seen, logged(&world, &id), "the stream is the log");
    assert_contiguous(&seen);
    assert_eq!(
        runner.session(&id).await.unwrap().state,
        SessionState::AwaitingApproval
    );
}

#[tokio::test]
async fn replay_from_seq_n_gives_exactly_the_events_after_n_and_follow_ends_with_the_session() {
    let world = World::demo();
    let runner = world.fake_runner("replay", 30);
    let id = new_id();
    let all = suite::collect(runner.start(options(&world, id)).await.unwrap()).await;
    assert!(all.len() > 5, "{:?}", types(&all));
    for n in [0, 1, 4, all.len() as u64 - 1, all.len() as u64] {
        let replayed = suite::collect(runner.events(&id, n).await.unwrap()).await;
        assert_eq!(replayed, all[n as usize..], "after seq {n}");
    }
    // Following a live run from the middle: it ends when the session leaves running.
    let id = new_id();
    let _stream = runner.start(options(&world, id)).await.unwrap();
    agent_pid(&world, &id).await;
    let followed = tokio::time::timeout(
        Duration::from_secs(60),
        suite::collect(runner.events(&id, 2).await.unwrap()),
    )
    .await
    .expect("follow ends when the session does");
    assert_eq!(followed.first().map(|e| e.seq), Some(3));
    assert!(matches!(
        followed.last().map(|e| &e.body),
        Some(EventBody::ApprovalRequested(_))
    ));
    assert_eq!(
        runner.session(&id).await.unwrap().state,
        SessionState::AwaitingApproval,
        "the closing event comes once the record says so"
    );
}

#[tokio::test]
async fn a_new_runner_adopts_a_run_its_dropped_predecessor_left_and_streams_it_whole() {
    let world = World::demo();
    // The undisturbed run, to compare with.
    let reference_id = new_id();
    let reference = suite::collect(
        world
            .fake_runner("replay", 0)
            .start(options(&world, reference_id))
            .await
            .unwrap(),
    )
    .await;
    let id = new_id();
    {
        let runner = world.fake_runner("replay", 80);
        let mut stream = runner.start(options(&world, id)).await.unwrap();
        // Mid-run: a few events in, the agent still working.
        for _ in 0..3 {
            stream.next().await.unwrap();
        }
        assert!(alive(agent_pid(&world, &id).await));
        // The daemon goes away: its runner and the stream with it.
    }
    // Its aborted supervisor task (and the lock it held) is gone at the runtime's next turn,
    // as a process's would be when it ends.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let pid = agent_pid(&world, &id).await;
    assert!(alive(pid), "the agent outlives the runner that started it");
    let runner = world.fake_runner("replay", 80);
    let report = runner.recover().await.unwrap();
    assert_eq!(report.adopted, vec![id], "{report:?}");
    assert!(report.failed.is_empty());
    let events = tokio::time::timeout(
        Duration::from_secs(60),
        suite::collect(runner.events(&id, 0).await.unwrap()),
    )
    .await
    .expect("the stream ends with the run");
    assert_contiguous(&events);
    assert_eq!(
        shape(&events, &id),
        shape(&reference, &reference_id),
        "the same events as an undisturbed run"
    );
    assert_eq!(
        runner.session(&id).await.unwrap().state,
        SessionState::AwaitingApproval
    );
    assert!(
        runner
            .diff(&id)
            .await
            .unwrap()
            .patch
            .contains("getMonth() + 1")
    );
}

/// Starts a run, lets its runner go as soon as the agent runs, and waits for the agent to
/// end with nobody watching.
async fn run_unwatched(world: &World, mode: &str) -> SessionId {
    let id = new_id();
    {
        let runner = world.fake_runner(mode, 20);
        let _stream = runner.start(options(world, id)).await.unwrap();
        agent_pid(world, &id).await;
    }
    left_unwatched(world, &id).await;
    id
}

/// Waits for the agent of session `id`, whose runner was dropped, to end with nobody
/// watching; the record still says running.
async fn left_unwatched(world: &World, id: &SessionId) {
    tokio::time::sleep(Duration::from_millis(20)).await;
    wait_gone(agent_pid(world, id).await).await;
    // Nobody runs it any more only once the relay carrying its output has ended too (before,
    // a runner rightly adopts it) and the dropped runner's aborted task has let go of the
    // supervisor lock (a loaded machine runs it a moment later).
    let run = world.home.run_dir(id);
    let agent: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("agent.json")).unwrap()).unwrap();
    if let Some(relay) = agent["relay"]["pid"].as_u64() {
        wait_gone(relay as u32).await;
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while lock_held(&run.join("supervisor.lock")) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        !lock_held(&run.join("supervisor.lock")),
        "nobody supervises it"
    );
    let record: serde_json::Value = serde_json::from_slice(
        &std::fs::read(world.home.sessions_dir().join(format!("{id}.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(record["state"], "running", "nothing saw it end");
}

/// A pick takes the attempt's session lock before it heals the attempt: an attempt whose run
/// ended while nobody supervised it, picked while another decision holds its lock, is not
/// finished (no supervisor runs its turn's end) until that lock is let go; then it is, and
/// the pick approves it.
#[tokio::test]
async fn a_pick_takes_the_session_lock_before_a_supervisor_can_finish_the_attempt() {
    let world = World::demo();
    let id = {
        let runner = world.fake_runner("replay", 20);
        let options = runner_contract::TaskOptions {
            task_id: runner_contract::TaskId::new_random(),
            repo_path: world.repo.clone(),
            prompt: runner_fake::demo_repo::PROMPT.into(),
            attempts: vec![runner_contract::AttemptSpec::new(
                AgentName::parse("fake").unwrap(),
            )],
            budget_usd: Some(1.5),
            verify: false,
            permissions: Default::default(),
            isolation: Default::default(),
            timeout_ms: None,
            engine: Default::default(),
        };
        let started = runner.start_task(options).await.unwrap();
        let id = started.attempts[0].0;
        agent_pid(&world, &id).await;
        id
    };
    left_unwatched(&world, &id).await;
    let events_before = logged(&world, &id).len();
    // Another decision (an approve in another process, say) holds the session's lock.
    let lock_path = world.home.run_dir(&id).join("session.lock");
    let other = std::fs::File::create(&lock_path).unwrap();
    other.lock().unwrap();
    let runner = world.fake_runner("replay", 0);
    let mut pick = tokio::spawn(async move { runner.pick(&id, PickOptions::default()).await });
    // Whatever the pick does before it waits for the lock has time to show in the files.
    assert!(
        tokio::time::timeout(Duration::from_millis(500), &mut pick)
            .await
            .is_err(),
        "the pick waits for the lock"
    );
    let record: serde_json::Value = serde_json::from_slice(
        &std::fs::read(world.home.sessions_dir().join(format!("{id}.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(
        record["state"], "running",
        "nothing finished the turn before the lock"
    );
    assert_eq!(
        logged(&world, &id).len(),
        events_before,
        "no supervisor wrote to the log before the lock"
    );
    drop(other);
    let picked = pick.await.unwrap().unwrap();
    let t = types(&logged(&world, &id));
    assert_eq!(&t[t.len() - 2..], ["task.finished", "approval.requested"]);
    assert_eq!(
        world.git(&["rev-parse", &picked.branch]).trim(),
        picked.commit,
        "approved once its turn was finished"
    );
}

#[tokio::test]
async fn a_run_that_ended_unwatched_with_a_result_is_finished_from_its_output() {
    let world = World::demo();
    let id = run_unwatched(&world, "replay").await;
    let runner = world.fake_runner("replay", 0);
    let record = runner.session(&id).await.unwrap();
    assert_eq!(
        record.state,
        SessionState::AwaitingApproval,
        "read heals it"
    );
    let events = runner.logged_events(&id, 0).unwrap();
    assert_contiguous(&events);
    let t = types(&events);
    assert_eq!(&t[t.len() - 2..], ["task.finished", "approval.requested"]);
    let Some(EventBody::TaskFinished(finished)) = events.iter().rev().nth(1).map(|e| &e.body)
    else {
        unreachable!()
    };
    assert!(
        finished.diff_stat.as_ref().is_some_and(|s| !s.is_empty()),
        "task.finished carries the diff stat"
    );
    assert!(record.cost_usd.is_some(), "the cost is on the record");
    assert!(Path::new(&record.worktree_path).exists());
}

#[tokio::test]
async fn a_run_that_ended_unwatched_without_a_result_fails_from_its_output() {
    let world = World::demo();
    let id = run_unwatched(&world, "no-result").await;
    let runner = world.fake_runner("no-result", 0);
    let report = runner.recover().await.unwrap();
    assert_eq!(report.finished, vec![id], "{report:?}");
    let record = runner.session(&id).await.unwrap();
    assert_eq!(record.state, SessionState::Failed);
    let events = runner.logged_events(&id, 0).unwrap();
    assert_contiguous(&events);
    match events.last().map(|e| &e.body) {
        Some(EventBody::TaskFailed(failed)) => {
            assert_eq!(failed.reason, FailureKind::NoResult);
            assert!(
                failed.stderr.as_deref().unwrap_or("").contains("giving up"),
                "its stderr, from the file it wrote: {failed:?}"
            );
        }
        other => panic!("expected task.failed, got {other:?}"),
    }
    assert!(world.worktree_dirs().is_empty(), "the worktree is gone");
    assert_eq!(world.branches(), vec!["main".to_owned()]);
}

#[tokio::test]
async fn the_report_of_a_recorded_run_is_built_from_its_log() {
    let world = World::demo();
    let runner = world.fake_runner("replay", 0);
    let id = new_id();
    suite::collect(runner.start(options(&world, id)).await.unwrap()).await;
    let report = runner.report(&id).await.unwrap();
    assert_eq!(
        report.event_count,
        runner.logged_events(&id, 0).unwrap().len() as u64
    );
    let record = runner.session(&id).await.unwrap();
    assert_eq!(
        report.cost_usd, record.cost_usd,
        "the record's cost is the report's"
    );
    let json = serde_json::to_string(&report)
        .unwrap()
        .replace(&id.to_string(), "[id]")
        .replace(&id.short(), "[id8]")
        .replace(&world.dir.path().display().to_string(), "[tmp]");
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    insta::assert_json_snapshot!("report_of_the_date_bug_run", value, {
        ".startedAt" => "[ts]",
        ".endedAt" => "[ts]",
        ".durationMs" => "[ms]",
        ".agentProgram" => "[program]",
        ".agentVersion" => "[version]",
    });
}
