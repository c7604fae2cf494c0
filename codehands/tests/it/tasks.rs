//! Tasks through the library: attempts of the fake agent from one base commit, side by side,
//! refusals that make nothing, a pick that approves one and rejects the others (or keeps
//! them), a task rejected whole, and picks cut short that the next command or `recover`
//! settles. Real repos, the real runner, the fake agent program.

use crate::support;

use runner_contract::{
    AgentName, AttemptSpec, ErrorKind, PickOptions, Runner, SessionState, TaskId, TaskOptions,
    TaskRecord, TaskState,
};
use runner_core::LocalRunner;
use runner_testkit::runner as suite;
use support::World;

fn fake() -> AgentName {
    AgentName::parse("fake").unwrap()
}

fn options(world: &World, attempts: Vec<AttemptSpec>) -> TaskOptions {
    TaskOptions {
        task_id: TaskId::new_random(),
        repo_path: world.repo.clone(),
        prompt: runner_fake::demo_repo::PROMPT.into(),
        attempts,
        budget_usd: Some(1.5),
        verify: false,
        permissions: Default::default(),
        isolation: Default::default(),
        timeout_ms: None,
        engine: Default::default(),
    }
}

/// Starts `n` fake attempts and waits until every one has ended; the task's record.
async fn finished_task(world: &World, runner: &LocalRunner, n: usize) -> TaskRecord {
    let started = runner
        .start_task(options(world, vec![AttemptSpec::new(fake()); n]))
        .await
        .unwrap();
    for (_, events) in started.attempts {
        suite::collect(events).await;
    }
    runner.task(&started.task_id).await.unwrap()
}

async fn state(runner: &LocalRunner, id: &runner_contract::SessionId) -> SessionState {
    runner.session(id).await.unwrap().state
}

/// Nothing of a task was made: no session, no task, no worktree, no branch.
fn nothing_made(world: &World) {
    let sessions = std::fs::read_dir(world.home.sessions_dir())
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(sessions, 0, "no session record");
    let tasks = std::fs::read_dir(world.home.tasks_dir())
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(tasks, 0, "no task record");
    assert!(world.worktree_dirs().is_empty());
    assert_eq!(world.branches(), vec!["main".to_owned()]);
}

#[tokio::test]
async fn attempts_start_from_one_base_and_wait_side_by_side() {
    let world = World::demo();
    let runner = world.fake_runner("replay", 0);
    let base = world.git(&["rev-parse", "main"]).trim().to_owned();
    let task = finished_task(&world, &runner, 3).await;
    assert_eq!(task.base_commit, base);
    let report = runner.task_report(&task.task_id).await.unwrap();
    assert_eq!(report.attempts.len(), 3);
    assert!(report.settled);
    let mut branches = Vec::new();
    for (i, attempt) in report.attempts.iter().enumerate() {
        assert_eq!(attempt.attempt, i + 1);
        assert_eq!(attempt.state, SessionState::AwaitingApproval, "{attempt:?}");
        assert_eq!(attempt.agent, fake());
        assert_eq!(attempt.files_changed, vec!["src/date.js".to_owned()]);
        assert!(attempt.diff_stat.is_some());
        let record = runner.session(&attempt.session_id).await.unwrap();
        assert_eq!(
            record.base_commit, base,
            "every attempt from the task's base"
        );
        // The task's budget is split evenly across its attempts.
        assert_eq!(record.budget_usd, Some(0.5));
        branches.push(record.branch);
    }
    branches.sort();
    branches.dedup();
    assert_eq!(branches.len(), 3, "a branch each");
    let marked = report
        .attempts
        .iter()
        .filter(|a| a.cheapest_passing)
        .count();
    let passing = report.attempts.iter().filter(|a| a.passing).count();
    assert_eq!(marked, usize::from(passing > 0), "{report:#?}");
    // The report is the schema's shape.
    let value = serde_json::to_value(&report).unwrap();
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../schemas/task-report.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(validator.is_valid(&value), "{value}");
}

#[tokio::test]
async fn an_unknown_agent_or_a_model_it_cannot_take_starts_nothing() {
    let world = World::demo();
    let runner = world.fake_runner("replay", 0);
    let cases = [
        ("fake,nobody", ErrorKind::AgentUnavailable, "nobody"),
        ("fake,fake:gpt-5", ErrorKind::InvalidInput, "gpt-5"),
        ("fake:-rf", ErrorKind::InvalidInput, "-rf"),
    ];
    for (list, kind, named) in cases {
        let attempts = AttemptSpec::parse_list(list).unwrap();
        let err = runner
            .start_task(options(&world, attempts))
            .await
            .err()
            .unwrap_or_else(|| panic!("{list} started"));
        assert_eq!(err.kind(), kind, "{list}: {err}");
        assert!(err.to_string().contains(named), "{list}: {err}");
        nothing_made(&world);
    }
}

#[tokio::test]
async fn a_pick_approves_one_and_rejects_the_others() {
    let world = World::demo();
    let runner = world.fake_runner("replay", 0);
    let task = finished_task(&world, &runner, 3).await;
    let chosen = task.attempts[1].session_id;
    let record = runner.session(&chosen).await.unwrap();
    let picked = runner.pick(&chosen, PickOptions::default()).await.unwrap();
    assert_eq!(picked.rejected.len(), 2);
    assert!(picked.kept.is_empty());
    assert_eq!(
        world.git(&["rev-parse", &record.branch]).trim(),
        picked.commit
    );
    assert_eq!(world.branches(), vec![record.branch.clone(), "main".into()]);
    assert!(world.worktree_dirs().is_empty());
    for attempt in &task.attempts {
        let expected = if attempt.session_id == chosen {
            SessionState::Approved
        } else {
            SessionState::Rejected
        };
        assert_eq!(state(&runner, &attempt.session_id).await, expected);
    }
    assert_eq!(
        runner.task(&task.task_id).await.unwrap().state,
        TaskState::Picked
    );
    // A task is picked once.
    let again = runner
        .pick(&task.attempts[0].session_id, PickOptions::default())
        .await;
    assert!(again.is_err());
}

#[tokio::test]
async fn keep_others_keeps_them_and_reject_task_then_rejects_them() {
    let world = World::demo();
    let runner = world.fake_runner("replay", 0);
    let task = finished_task(&world, &runner, 3).await;
    let [first, second, third] = [0, 1, 2].map(|i| task.attempts[i].session_id);
    let keep = PickOptions {
        keep_others: true,
        ..PickOptions::default()
    };
    let picked = runner.pick(&first, keep.clone()).await.unwrap();
    assert!(picked.rejected.is_empty());
    assert_eq!(picked.kept, vec![second, third]);
    assert_eq!(
        state(&runner, &second).await,
        SessionState::AwaitingApproval
    );
    // A kept attempt can still be approved alone.
    runner.pick(&second, keep).await.unwrap();
    assert_eq!(state(&runner, &second).await, SessionState::Approved);
    // Rejecting the task now throws away what is left, and keeps what was approved.
    let rejected = runner.reject_task(&task.task_id).await.unwrap();
    assert_eq!(rejected, vec![third]);
    assert_eq!(state(&runner, &first).await, SessionState::Approved);
    assert_eq!(state(&runner, &third).await, SessionState::Rejected);
    assert!(world.worktree_dirs().is_empty());
}

#[tokio::test]
async fn reject_task_rejects_every_attempt() {
    let world = World::demo();
    let runner = world.fake_runner("replay", 0);
    let task = finished_task(&world, &runner, 2).await;
    let rejected = runner.reject_task(&task.task_id).await.unwrap();
    assert_eq!(rejected.len(), 2);
    assert_eq!(
        runner.task(&task.task_id).await.unwrap().state,
        TaskState::Rejected
    );
    assert_eq!(world.branches(), vec!["main".to_owned()]);
    assert!(world.worktree_dirs().is_empty());
    let err = runner.reject_task(&task.task_id).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::IllegalMove, "{err}");
}

/// Writes the task's record as a process killed half-way through a pick leaves it.
fn write_task(world: &World, task: &TaskRecord, change: impl FnOnce(&mut TaskRecord)) {
    let mut task = task.clone();
    change(&mut task);
    let path = world
        .home
        .tasks_dir()
        .join(format!("{}.json", task.task_id));
    std::fs::write(path, serde_json::to_vec_pretty(&task).unwrap()).unwrap();
}

#[tokio::test]
async fn a_pick_cut_before_the_approve_is_taken_back_by_recover() {
    let world = World::demo();
    let runner = world.fake_runner("replay", 0);
    let task = finished_task(&world, &runner, 2).await;
    let chosen = task.attempts[0].session_id;
    write_task(&world, &task, |t| {
        t.state = TaskState::Picking;
        t.picked = Some(chosen);
    });
    let report = runner.recover().await.unwrap();
    assert_eq!(report.settled_tasks, vec![task.task_id]);
    let now = runner.task(&task.task_id).await.unwrap();
    assert_eq!(now.state, TaskState::Open);
    assert_eq!(now.picked, None);
    for attempt in &task.attempts {
        assert_eq!(
            state(&runner, &attempt.session_id).await,
            SessionState::AwaitingApproval,
            "nothing lost"
        );
    }
    // And the task can be picked again.
    runner.pick(&chosen, PickOptions::default()).await.unwrap();
}

#[tokio::test]
async fn a_pick_cut_after_the_approve_is_finished_by_the_next_command() {
    let world = World::demo();
    let runner = world.fake_runner("replay", 0);
    let task = finished_task(&world, &runner, 3).await;
    let chosen = task.attempts[2].session_id;
    write_task(&world, &task, |t| {
        t.state = TaskState::Picking;
        t.picked = Some(chosen);
    });
    runner.approve(&chosen, "Fix the month").await.unwrap();
    // The next command on the task finishes the pick.
    let report = runner.task_report(&task.task_id).await.unwrap();
    assert_eq!(report.state, TaskState::Picked);
    assert_eq!(report.picked, Some(chosen));
    for attempt in &report.attempts {
        let expected = if attempt.session_id == chosen {
            SessionState::Approved
        } else {
            SessionState::Rejected
        };
        assert_eq!(attempt.state, expected);
    }
    assert!(world.worktree_dirs().is_empty());
}
