//! The real runner end to end with the fake agent program: real repos, real
//! worktrees, real processes (sleeping, forking children that ignore SIGTERM,
//! silent, printing garbage, lingering, exiting without a result).

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::StreamExt;
use runner_contract::event::FailureKind;
use runner_contract::{AgentName, ErrorKind, EventBody, Runner, SessionState, StartOptions};
use runner_core::Watchdog;
use runner_testkit::{expect_error, runner as suite};
use support::{World, new_id, types};

fn options(world: &World, id: runner_contract::SessionId) -> StartOptions {
    StartOptions::new(
        id,
        &world.repo,
        runner_fake::demo_repo::PROMPT,
        AgentName::parse("fake").unwrap(),
    )
}

/// Processes whose working folder is inside `dir`.
fn processes_in(dir: &Path) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let cwd = std::fs::read_link(e.path().join("cwd")).ok()?;
            cwd.starts_with(dir).then_some(pid)
        })
        .collect()
}

fn failure(events: &[runner_contract::Event]) -> runner_contract::event::TaskFailed {
    match events.last().map(|e| &e.body) {
        Some(EventBody::TaskFailed(f)) => f.clone(),
        other => panic!(
            "expected task.failed last, got {other:?} in {:?}",
            types(events)
        ),
    }
}

#[tokio::test]
async fn passes_the_runner_conformance_suite() {
    let world = World::demo();
    let runner = world.fake_runner("replay", 40);
    let opts = |id| options(&world, id);
    suite::run_all(&runner, &opts, &opts).await;
}

#[tokio::test]
async fn approve_leaves_one_commit_on_the_branch_and_the_users_checkout_alone() {
    let world = World::demo();
    let before_head = world.git(&["rev-parse", "HEAD"]);
    let before_status = world.git(&["status", "--porcelain"]);
    let runner = world.fake_runner("replay", 0);
    let id = new_id();
    let events = suite::collect(runner.start(options(&world, id)).await.unwrap()).await;
    assert_eq!(types(&events).last(), Some(&"approval.requested"));
    let record = runner.session(&id).await.unwrap();
    assert!(record.worktree_path.starts_with(world.home.worktrees_dir()));
    assert!(
        record.branch.starts_with("codehands/fix-the-failing-test")
            && record.branch.ends_with(&id.short()),
        "{}",
        record.branch
    );
    let transcript =
        std::fs::read_to_string(world.home.run_dir(&id).join("transcript.jsonl")).unwrap();
    assert_eq!(
        transcript.lines().count(),
        13,
        "every agent line is in the transcript"
    );

    let diff = runner.diff(&id).await.unwrap();
    assert!(
        diff.patch
            .contains("+  return `${date.getFullYear()}-${date.getMonth() + 1}"),
        "{}",
        diff.patch
    );
    let approved = runner.approve(&id, "Fix the month").await.unwrap();
    assert_eq!(approved.branch, record.branch);
    assert_eq!(
        world
            .git(&[
                "rev-list",
                "--count",
                &format!("{}..{}", record.base_commit, record.branch)
            ])
            .trim(),
        "1"
    );
    assert_eq!(
        world
            .git(&["rev-parse", &format!("{}^", record.branch)])
            .trim(),
        record.base_commit
    );
    assert_eq!(
        world
            .git(&["log", "-1", "--format=%s", &record.branch])
            .trim(),
        "Fix the month"
    );
    assert_eq!(
        world.git(&["rev-parse", "HEAD"]),
        before_head,
        "the user's branch did not move"
    );
    assert_eq!(
        world.git(&["symbolic-ref", "--short", "HEAD"]).trim(),
        "main"
    );
    assert_eq!(
        world.git(&["status", "--porcelain"]),
        before_status,
        "the user's checkout is untouched"
    );
    assert!(!record.worktree_path.exists(), "the worktree is gone");
    assert_eq!(
        runner.session(&id).await.unwrap().state,
        SessionState::Approved
    );
}

#[tokio::test]
async fn reject_removes_the_worktree_and_the_branch() {
    let world = World::demo();
    let runner = world.fake_runner("replay", 0);
    let id = new_id();
    suite::collect(runner.start(options(&world, id)).await.unwrap()).await;
    let record = runner.session(&id).await.unwrap();
    runner.reject(&id).await.unwrap();
    assert!(!record.worktree_path.exists());
    assert_eq!(world.branches(), vec!["main".to_owned()]);
    assert!(
        world
            .git(&["worktree", "list", "--porcelain"])
            .lines()
            .filter(|l| l.starts_with("worktree "))
            .count()
            == 1
    );
}

#[tokio::test]
async fn stop_ends_children_that_ignore_sigterm_and_keeps_the_worktree() {
    let world = World::demo();
    let runner = world.fake_runner("fork", 0);
    let id = new_id();
    let mut stream = runner.start(options(&world, id)).await.unwrap();
    let first = stream.next().await.unwrap();
    assert!(matches!(first.body, EventBody::TaskStarted(_)));
    let worktree = runner.session(&id).await.unwrap().worktree_path;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        processes_in(&worktree).len() >= 3,
        "the agent and its two children run in the worktree"
    );
    runner.stop(&id).await.unwrap();
    assert_eq!(
        runner.session(&id).await.unwrap().state,
        SessionState::Stopped
    );
    let rest: Vec<_> = stream.collect().await;
    assert!(
        matches!(rest.last().unwrap().body, EventBody::TaskStopped(_)),
        "{:?}",
        types(&rest)
    );
    assert!(
        processes_in(&worktree).is_empty(),
        "no process of the run is left: {:?}",
        processes_in(&worktree)
    );
    assert!(worktree.exists(), "a stopped session keeps its worktree");
    expect_error(
        runner.stop(&id).await,
        ErrorKind::IllegalMove,
        "stop a stopped session",
    );
}

#[tokio::test]
async fn the_idle_watchdog_ends_a_silent_agent() {
    let world = World::demo();
    let mut settings = world.settings();
    settings.watchdog = Watchdog {
        idle: Duration::from_millis(800),
        linger: Duration::from_secs(5),
    };
    let runner = world.runner_with(settings, |s| {
        s.fake.mode = Some("silent".into());
    });
    let id = new_id();
    let events = suite::collect(runner.start(options(&world, id)).await.unwrap()).await;
    let failed = failure(&events);
    assert_eq!(failed.reason, FailureKind::Idle);
    assert!(failed.message.contains("idle"), "{}", failed.message);
    assert_eq!(
        runner.session(&id).await.unwrap().state,
        SessionState::Failed
    );
    let record = runner.session(&id).await.unwrap();
    assert!(
        !record.worktree_path.exists(),
        "a failed session loses its worktree"
    );
    assert_eq!(
        world.branches(),
        vec!["main".to_owned()],
        "and its branch (no agent commits)"
    );
}

#[tokio::test]
async fn the_linger_watchdog_ends_an_agent_that_does_not_exit_after_its_result() {
    let world = World::demo();
    let mut settings = world.settings();
    settings.watchdog = Watchdog {
        idle: Duration::from_secs(30),
        linger: Duration::from_millis(600),
    };
    let runner = world.runner_with(settings, |s| s.fake.mode = Some("linger".into()));
    let id = new_id();
    let events = suite::collect(runner.start(options(&world, id)).await.unwrap()).await;
    let failed = failure(&events);
    assert_eq!(failed.reason, FailureKind::Linger);
    assert!(failed.message.contains("linger"), "{}", failed.message);
    expect_error(
        runner.approve(&id, "no").await,
        ErrorKind::IllegalMove,
        "approve a failed session",
    );
    expect_error(
        runner.reject(&id).await,
        ErrorKind::IllegalMove,
        "reject a failed session",
    );
}

#[tokio::test]
async fn garbage_lines_become_messages_and_the_run_goes_on() {
    let world = World::demo();
    let runner = world.fake_runner("garbage", 0);
    let id = new_id();
    let events = suite::collect(runner.start(options(&world, id)).await.unwrap()).await;
    assert_eq!(types(&events).last(), Some(&"approval.requested"));
    let raw_texts: Vec<_> = events
        .iter()
        .filter(|e| matches!(e.body, EventBody::Message(_)))
        .filter_map(|e| e.raw.clone())
        .collect();
    assert!(
        raw_texts.iter().any(|r| r == "this line is not JSON"),
        "{raw_texts:?}"
    );
    assert!(
        raw_texts.iter().any(|r| r.contains("not UTF-8 either")),
        "{raw_texts:?}"
    );
}

#[tokio::test]
async fn an_agent_without_a_result_fails_with_its_stderr() {
    let world = World::demo();
    let runner = world.fake_runner("no-result", 0);
    let id = new_id();
    let events = suite::collect(runner.start(options(&world, id)).await.unwrap()).await;
    let failed = failure(&events);
    assert_eq!(failed.reason, FailureKind::NoResult);
    assert!(
        failed.message.contains("without a result"),
        "{}",
        failed.message
    );
    assert_eq!(failed.exit_code, Some(3));
    assert!(failed.stderr.unwrap_or_default().contains("giving up"));
}

#[tokio::test]
async fn a_missing_agent_program_is_refused_before_anything_is_made() {
    let world = World::demo();
    let runner = world.runner_with(world.settings(), |s| {
        s.fake.program = Some(PathBuf::from("/nonexistent/claude"))
    });
    let id = new_id();
    let Err(refused) = runner.start(options(&world, id)).await else {
        panic!("a start with a missing program is refused");
    };
    assert_eq!(refused.kind(), ErrorKind::AgentUnavailable);
    assert!(refused.message().contains("not found"), "{refused}");
    assert!(
        runner.sessions().await.unwrap().is_empty(),
        "no session record"
    );
    assert!(world.worktree_dirs().is_empty(), "nothing left behind");
    assert_eq!(world.branches(), vec!["main".to_owned()]);
}

#[tokio::test]
async fn a_folder_that_is_not_a_repo_is_refused_and_nothing_is_made() {
    let world = World::demo();
    let runner = world.fake_runner("replay", 0);
    let not_repo = world.dir.path().join("plain");
    std::fs::create_dir_all(&not_repo).unwrap();
    let empty_repo = world.dir.path().join("empty");
    std::fs::create_dir_all(&empty_repo).unwrap();
    support::git(&empty_repo, &["init", "--quiet"]);
    for path in [not_repo, empty_repo, world.dir.path().join("missing")] {
        let err = runner
            .start(StartOptions::new(
                new_id(),
                &path,
                "Fix it",
                AgentName::parse("fake").unwrap(),
            ))
            .await
            .err()
            .expect("refused");
        assert!(
            err.to_string()
                .contains("is not a git repo or has no commits yet"),
            "{err}"
        );
    }
    assert!(runner.sessions().await.unwrap().is_empty(), "no record");
    assert!(world.worktree_dirs().is_empty(), "no worktree");
}

#[tokio::test]
async fn bad_input_is_refused_before_anything_starts() {
    let world = World::demo();
    let runner = world.fake_runner("replay", 0);
    let mut empty = options(&world, new_id());
    empty.prompt = " \n ".into();
    expect_error(
        runner.start(empty).await.map(drop),
        ErrorKind::InvalidInput,
        "empty prompt",
    );
    let mut budget = options(&world, new_id());
    budget.budget_usd = Some(-1.0);
    expect_error(
        runner.start(budget).await.map(drop),
        ErrorKind::InvalidInput,
        "negative budget",
    );
    let mut nan = options(&world, new_id());
    nan.budget_usd = Some(f64::NAN);
    expect_error(
        runner.start(nan).await.map(drop),
        ErrorKind::InvalidInput,
        "NaN budget",
    );
    assert!(runner.sessions().await.unwrap().is_empty());
    assert!(world.worktree_dirs().is_empty());
}

#[tokio::test]
async fn nothing_to_approve_when_the_agent_changed_nothing() {
    let world = World::demo();
    let read_only = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../agent-claude/tests/fixtures/read-files.jsonl");
    let runner = world.runner_with(world.settings(), |s| s.fake.script = Some(read_only));
    let id = new_id();
    let events = suite::collect(runner.start(options(&world, id)).await.unwrap()).await;
    assert_eq!(
        types(&events).last(),
        Some(&"approval.requested"),
        "{:?}",
        types(&events)
    );
    let err = expect_error(
        runner.approve(&id, "nothing").await,
        ErrorKind::NothingToApprove,
        "approve no change",
    );
    assert!(
        err.contains("nothing to approve: the agent made no changes"),
        "{err}"
    );
    assert_eq!(
        runner.session(&id).await.unwrap().state,
        SessionState::AwaitingApproval,
        "still awaiting: reject it"
    );
    runner.reject(&id).await.unwrap();
}

#[tokio::test]
async fn after_a_restart_diff_approve_and_resume_still_work() {
    let world = World::demo();
    let id = new_id();
    let stopped = new_id();
    {
        let runner = world.fake_runner("replay", 60);
        suite::collect(runner.start(options(&world, id)).await.unwrap()).await;
        let mut stream = runner.start(options(&world, stopped)).await.unwrap();
        stream.next().await.unwrap();
        runner.stop(&stopped).await.unwrap();
        let _: Vec<_> = stream.collect().await;
    }
    let runner = world.fake_runner("replay", 0);
    assert_eq!(runner.diff(&id).await.unwrap().stat.files_changed, 1);
    let report = runner.recover().await.unwrap();
    assert!(
        report.failed.is_empty(),
        "awaiting and stopped sessions are left alone: {report:?}"
    );
    runner.approve(&id, "After a restart").await.unwrap();
    let last_seq = runner.session(&stopped).await.unwrap().last_seq;
    let resumed = suite::collect(runner.resume(&stopped, None).await.unwrap()).await;
    assert_eq!(
        resumed[0].seq,
        last_seq + 1,
        "seq continues after a restart"
    );
    assert_eq!(types(&resumed).last(), Some(&"approval.requested"));
}

#[tokio::test]
async fn verify_runs_the_tests_in_the_sandbox_before_approval() {
    if !sandbox_ready().await {
        return;
    }
    let world = World::demo();
    let runner = world.fake_runner("replay", 0);
    let id = new_id();
    let mut opts = options(&world, id);
    opts.verify = true;
    let events = suite::collect(runner.start(opts).await.unwrap()).await;
    let kinds = types(&events);
    let n = kinds.len();
    assert_eq!(
        &kinds[n - 3..],
        &["test.result", "task.finished", "approval.requested"],
        "{kinds:?}"
    );
    match &events[n - 3].body {
        EventBody::TestResult(t) => {
            assert!(t.sandboxed, "the last test.result is the sandbox's");
            assert!(t.passed, "the agent's fix passes in the box: {t:?}");
            assert_eq!(t.command, "npm test");
        }
        other => panic!("{other:?}"),
    }
    let result = std::fs::read_to_string(world.home.run_dir(&id).join("test-1.json")).unwrap();
    assert!(
        result.contains("\"passed\": true") || result.contains("\"passed\":true"),
        "{result}"
    );
}

/// Whether Docker and the local Debian image are there (else a skip; a failure under CI).
async fn sandbox_ready() -> bool {
    let image = sandbox_docker::LOCAL_DEBIAN_IMAGE;
    let ok = std::process::Command::new("docker")
        .args(["image", "inspect", image])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        runner_testkit::skip(&format!(
            "Docker or the image {image} is missing: run `cargo xtask images`"
        ));
    }
    ok
}
