//! An agent that plants git of its own in its worktree, from its box, for the person's next
//! `git status` there to run its program: a `.git` folder whose config names
//! `core.fsmonitor`, and a `.git` file naming a git folder of its own, each at a path it wrote
//! into its worktree's index as a submodule (a gitlink, which needs no object). Boxed, the
//! turn's end takes both out (`vcs-git`'s `nested.rs`), says so, and the person's real
//! `git status` runs nothing; the control, the same agent unboxed (where nothing is taken
//! out: it is the person), shows the plant does run the program. A profile agent of our own
//! (a shell script), the real runner, real repos, real bubblewrap.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use runner_contract::event::EventBody;
use runner_contract::{AgentName, Event, Isolation, Runner, SessionId, SessionState, StartOptions};
use runner_testkit::runner as suite;
use support::World;

/// A runner whose agent `planter` fixes the month, then plants git whose config makes
/// `marker` (a path outside the box: only the person's git can write it).
fn planter_runner(world: &World, marker: &Path) -> runner_core::LocalRunner {
    let program = format!("touch '{}'; false", marker.display());
    support::shell_agent_runner(
        world,
        "planter.sh",
        "planter",
        &format!(
            "#!/bin/sh\n\
             sed -i 's/getMonth()}}/getMonth() + 1}}/' src/date.js\n\
             base=$(git rev-parse HEAD)\n\
             git init -q sub && git -C sub config core.fsmonitor \"{program}\"\n\
             echo 'the agent'\"'\"'s notes' > sub/notes.txt\n\
             git init -q --separate-git-dir=\"$PWD/.agent-git\" lib/planted\n\
             git -C lib/planted config core.fsmonitor \"{program}\"\n\
             for path in sub lib/planted; do\n\
               git update-index --add --cacheinfo \"160000,$base,$path\" || exit 1\n\
             done\n\
             echo planted\n"
        ),
    )
}

/// Runs the planter to `awaiting_approval` with `isolation`; its events and worktree.
async fn run(
    runner: &impl Runner,
    world: &World,
    isolation: Isolation,
) -> (SessionId, Vec<Event>, PathBuf) {
    let id = SessionId::new_random();
    let mut options = StartOptions::new(
        id,
        &world.repo,
        runner_fake::demo_repo::PROMPT,
        AgentName::parse("planter").unwrap(),
    );
    options.isolation = isolation;
    let events = suite::collect(runner.start(options).await.unwrap()).await;
    let record = runner.session(&id).await.unwrap();
    assert_eq!(record.state, SessionState::AwaitingApproval, "{events:?}");
    let said = format!("{events:?}");
    assert!(said.contains("planted"), "the agent planted: {said}");
    (id, events, record.worktree_path)
}

/// The person's own `git status` (and `git diff`) in the worktree, with no config of the
/// tester's; whether the agent's program ran.
fn persons_git_runs_the_agents_program(worktree: &Path, marker: &Path) -> bool {
    let _ = std::fs::remove_file(marker);
    for args in [&["status"][..], &["diff"]] {
        Command::new("git")
            .arg("-C")
            .arg(worktree)
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
    }
    marker.exists()
}

/// The system messages of a run.
fn system_messages(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Message(m) if m.role == runner_contract::event::MessageRole::System => {
                Some(m.text.clone())
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_boxed_agents_planted_git_is_taken_out_and_the_persons_git_runs_nothing() {
    let world = World::demo();
    let marker = world.dir.path().join("agent-program-ran");
    let runner = planter_runner(&world, &marker);
    if let Err(e) = runner.box_available() {
        runner_testkit::skip(&format!("no box can be made here: {e}"));
        return;
    }
    let (id, events, worktree) = run(&runner, &world, Isolation::Box).await;

    let quarantine = world.home.run_dir(&id).join("quarantine/turn-1");
    let said = system_messages(&events).join("\n");
    for what in [
        format!(
            "moved sub/.git to {}",
            quarantine.join("sub/dot-git").display()
        ),
        format!(
            "moved lib/planted/.git to {}",
            quarantine.join("lib/planted/dot-git").display()
        ),
        "dropped the submodule entry sub".to_owned(),
        "dropped the submodule entry lib/planted".to_owned(),
    ] {
        assert!(said.contains(&what), "says {what:?}: {said}");
    }
    // Said before the turn's end, which the person acts on.
    let note = events
        .iter()
        .position(|e| matches!(&e.body, EventBody::Message(m) if m.text.contains("dropped the")))
        .unwrap();
    let finished = events
        .iter()
        .position(|e| matches!(e.body, EventBody::TaskFinished(_)))
        .unwrap();
    assert!(note < finished, "{events:?}");
    assert!(
        quarantine.join("sub/dot-git/config").is_file(),
        "the agent's git folder is kept for the person to look at"
    );
    assert!(!worktree.join("sub/.git").exists());
    assert!(!worktree.join("lib/planted/.git").exists());
    assert!(
        !persons_git_runs_the_agents_program(&worktree, &marker),
        "the person's git in the worktree runs nothing of the agent's"
    );

    let approved = runner.approve(&id, "Fix the month").await.unwrap();
    let listing = world.git(&["ls-tree", "-r", &approved.commit]);
    assert!(
        !listing.contains("160000"),
        "no gitlink committed: {listing}"
    );
    assert!(listing.contains("sub/notes.txt"), "{listing}");
}

#[tokio::test]
async fn the_control_unboxed_the_same_plant_runs_the_agents_program() {
    let world = World::demo();
    let marker = world.dir.path().join("agent-program-ran");
    let runner = planter_runner(&world, &marker);
    let (_, events, worktree) = run(&runner, &world, Isolation::None).await;
    assert!(
        system_messages(&events)
            .iter()
            .all(|m| !m.contains("dropped the")),
        "nothing is taken out of an unboxed agent's worktree"
    );
    assert!(
        persons_git_runs_the_agents_program(&worktree, &marker),
        "the plant is real: git status runs the program its config names"
    );
}
