//! An agent that locks its worktree (`git worktree lock`) and points its HEAD elsewhere
//! (the person's branch, a detached commit, garbage), from its box, where its worktree's git
//! folder is writable so git works: approve and reject still settle, with the commit on the
//! session's own branch, the person's branch unmoved and nothing of the worktree left.
//! A profile agent of our own (a shell script), the real runner, real repos; boxed by default.

use crate::support;

use std::path::PathBuf;

use runner_contract::{AgentName, Runner, SessionId, SessionState, StartOptions};
use runner_testkit::runner as suite;
use support::World;

/// What the agent does to its worktree's HEAD, as a line of shell run in the worktree, and
/// what the HEAD file then holds (`BASE` stands for the base commit).
const HEADS: &[(&str, &str, &str)] = &[
    (
        "the person's branch",
        "git symbolic-ref HEAD refs/heads/main",
        "ref: refs/heads/main",
    ),
    ("detached", "git checkout -q --detach", "BASE"),
    (
        "garbage",
        "printf 'not a ref\\n' > \"$(git rev-parse --git-dir)/HEAD\"",
        "not a ref",
    ),
];

/// A runner whose agent `hostile` locks its worktree, runs `head` and fixes the month.
fn hostile_runner(world: &World, head: &str) -> runner_core::LocalRunner {
    let file = format!("agent-{}.sh", SessionId::new_random().short());
    support::shell_agent_runner(
        world,
        &file,
        "hostile",
        &format!(
            "#!/bin/sh\n\
             sed -i 's/getMonth()}}/getMonth() + 1}}/' src/date.js\n\
             git worktree lock --reason \"the agent's\" \"$PWD\" && echo locked\n\
             {head} && echo moved\n\
             echo \"fixed the month\"\n"
        ),
    )
}

/// Runs the agent to `awaiting_approval` and checks it did lock and move its HEAD; returns
/// the session and its worktree's git folder.
async fn run(world: &World, runner: &impl Runner, head: &str, holds: &str) -> (SessionId, PathBuf) {
    let id = SessionId::new_random();
    let options = StartOptions::new(
        id,
        &world.repo,
        runner_fake::demo_repo::PROMPT,
        AgentName::parse("hostile").unwrap(),
    );
    let events = suite::collect(runner.start(options).await.unwrap()).await;
    let record = runner.session(&id).await.unwrap();
    assert_eq!(
        record.state,
        SessionState::AwaitingApproval,
        "{head}: {events:?}"
    );
    // Boxed, with the worktree's git folder writable but its configuration kept read-only.
    let plan = world.home.run_dir(&id).join("box.json");
    let plan: serde_json::Value = serde_json::from_slice(&std::fs::read(&plan).unwrap()).unwrap();
    let keep = plan["git"]["keep"].to_string();
    assert!(keep.contains("config.worktree"), "{head}: {plan}");
    let dot_git = std::fs::read_to_string(record.worktree_path.join(".git")).unwrap();
    let admin = PathBuf::from(dot_git.trim().strip_prefix("gitdir: ").unwrap());
    assert!(
        admin.join("locked").is_file(),
        "{head}: the agent locked its worktree in the box: {events:?}"
    );
    let now = std::fs::read_to_string(admin.join("HEAD")).unwrap();
    assert_eq!(
        now.trim(),
        holds.replace("BASE", &record.base_commit),
        "{head}: the agent moved its HEAD in the box: {events:?}"
    );
    (id, admin)
}

/// Only the person's checkout is left registered, and nothing under the home's worktrees.
fn nothing_left(world: &World, admin: &std::path::Path) {
    assert!(!admin.exists(), "the worktree's git folder is gone");
    let listed = world.git(&["worktree", "list", "--porcelain"]);
    assert_eq!(listed.matches("worktree ").count(), 1, "{listed}");
    assert!(
        world.worktree_dirs().is_empty(),
        "{:?}",
        world.worktree_dirs()
    );
}

#[tokio::test]
async fn approve_settles_after_the_agent_locked_its_worktree_and_moved_its_head() {
    for (name, head, holds) in HEADS {
        let world = World::demo();
        let runner = hostile_runner(&world, head);
        let (id, admin) = run(&world, &runner, head, holds).await;
        let record = runner.session(&id).await.unwrap();

        let approved = runner
            .approve(&id, "Fix the month")
            .await
            .unwrap_or_else(|e| panic!("{name}: approve: {e}"));
        let now = runner.session(&id).await.unwrap();
        assert_eq!(now.state, SessionState::Approved, "{name}");
        assert_eq!(
            approved.branch, record.branch,
            "{name}: the session's branch"
        );
        support::assert_approved_demo_fix(&world, &record, &approved);
        nothing_left(&world, &admin);
    }
}

#[tokio::test]
async fn reject_settles_after_the_agent_locked_its_worktree_and_moved_its_head() {
    for (name, head, holds) in HEADS {
        let world = World::demo();
        let runner = hostile_runner(&world, head);
        let (id, admin) = run(&world, &runner, head, holds).await;
        let record = runner.session(&id).await.unwrap();

        let rejected = runner
            .reject_session(&id)
            .await
            .unwrap_or_else(|e| panic!("{name}: reject: {e}"));
        assert_eq!(rejected.kept_branch, None, "{name}");
        let now = runner.session(&id).await.unwrap();
        assert_eq!(now.state, SessionState::Rejected, "{name}");
        assert_eq!(world.branches(), vec!["main".to_owned()], "{name}");
        assert_eq!(
            world.git(&["rev-parse", "main"]).trim(),
            record.base_commit,
            "{name}: the person's branch did not move"
        );
        nothing_left(&world, &admin);
    }
}
