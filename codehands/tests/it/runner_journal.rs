//! Approve and reject as journaled operations, and recover that never removes what it cannot
//! prove abandoned: the real runner, the fake agent, real repos.

use crate::support;

use runner_contract::{
    AgentName, ErrorKind, Runner, SessionId, SessionRecord, SessionState, StartOptions, Vcs,
};
use runner_testkit::runner as suite;
use support::{World, new_id};

fn options(world: &World, id: SessionId) -> StartOptions {
    StartOptions::new(
        id,
        &world.repo,
        runner_fake::demo_repo::PROMPT,
        AgentName::parse("fake").unwrap(),
    )
}

async fn awaiting(world: &World, runner: &runner_core::LocalRunner) -> SessionRecord {
    let id = new_id();
    suite::collect(runner.start(options(world, id)).await.unwrap()).await;
    let record = runner.session(&id).await.unwrap();
    assert_eq!(record.state, SessionState::AwaitingApproval);
    record
}

/// Writes `record` as it would be on disk, with `change` made, bypassing the move table (what
/// a process killed half-way through an approve or reject leaves).
fn write_record(world: &World, record: &SessionRecord, change: impl FnOnce(&mut SessionRecord)) {
    let mut record = record.clone();
    change(&mut record);
    let path = world
        .home
        .sessions_dir()
        .join(format!("{}.json", record.session_id));
    std::fs::write(path, serde_json::to_vec_pretty(&record).unwrap()).unwrap();
}

fn tip(world: &World, branch: &str) -> String {
    world.git(&["rev-parse", branch]).trim().to_owned()
}

#[tokio::test]
async fn an_approve_cut_after_the_branch_moved_is_finished_never_undone() {
    let world = World::demo();
    let runner = world.fake_runner("replay", 0);
    let record = awaiting(&world, &runner).await;
    // The commit reached the branch, then the process died: the record says approving.
    let vcs = vcs_git::GitVcs::new();
    let spec = record.worktree_spec();
    let prepared = vcs
        .prepare_commit(&spec, "Fix the month", None)
        .await
        .unwrap();
    vcs.publish_commit(&spec, &prepared).await.unwrap();
    write_record(&world, &record, |r| {
        r.state = SessionState::Approving;
        r.commit = Some(prepared.commit.clone());
    });

    // A reject now must not delete the branch that holds the commit.
    let err = runner.reject(&record.session_id).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::IllegalMove, "{err}");
    let now = runner.session(&record.session_id).await.unwrap();
    assert_eq!(now.state, SessionState::Approved);
    assert_eq!(now.commit.as_deref(), Some(prepared.commit.as_str()));
    assert_eq!(tip(&world, &record.branch), prepared.commit);
    assert!(!record.worktree_path.exists());
}

#[tokio::test]
async fn an_approve_cut_before_the_branch_moved_goes_back_to_awaiting() {
    let world = World::demo();
    let runner = world.fake_runner("replay", 0);
    let record = awaiting(&world, &runner).await;
    let vcs = vcs_git::GitVcs::new();
    let prepared = vcs
        .prepare_commit(&record.worktree_spec(), "Fix the month", None)
        .await
        .unwrap();
    write_record(&world, &record, |r| {
        r.state = SessionState::Approving;
        r.commit = Some(prepared.commit.clone());
    });
    let report = runner.recover().await.unwrap();
    assert_eq!(report.settled, vec![record.session_id]);
    let now = runner.session(&record.session_id).await.unwrap();
    assert_eq!(now.state, SessionState::AwaitingApproval);
    assert_eq!(now.commit, None);
    assert_eq!(tip(&world, &record.branch), record.base_commit);
    assert!(record.worktree_path.is_dir(), "the worktree is untouched");
    let approved = runner
        .approve(&record.session_id, "Fix the month")
        .await
        .unwrap();
    support::assert_approved_demo_fix(&world, &record, &approved);
}

#[tokio::test]
async fn a_reject_cut_short_is_finished_by_recover() {
    let world = World::demo();
    let runner = world.fake_runner("replay", 0);
    let record = awaiting(&world, &runner).await;
    write_record(&world, &record, |r| r.state = SessionState::Rejecting);
    let report = runner.recover().await.unwrap();
    assert_eq!(report.settled, vec![record.session_id]);
    assert_eq!(
        runner.session(&record.session_id).await.unwrap().state,
        SessionState::Rejected
    );
    assert!(!record.worktree_path.exists());
    assert_eq!(world.branches(), vec!["main".to_owned()]);
}

#[tokio::test]
async fn recover_keeps_the_worktree_and_branch_of_an_unreadable_record() {
    let world = World::demo();
    let runner = world.fake_runner("replay", 0);
    let record = awaiting(&world, &runner).await;
    let path = world
        .home
        .sessions_dir()
        .join(format!("{}.json", record.session_id));
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();

    let report = runner.recover().await.unwrap();
    assert_eq!(report.unreadable.len(), 1, "{report:?}");
    assert!(
        report.unreadable[0].message.contains("kept"),
        "the report says the worktree is kept: {:?}",
        report.unreadable[0]
    );
    assert_eq!(report.kept_worktrees, vec![record.worktree_path.clone()]);
    assert!(report.removed_worktrees.is_empty(), "{report:?}");
    assert!(
        record.worktree_path.join("src").is_dir(),
        "the unapproved change is still there"
    );
    assert!(world.branches().contains(&record.branch));

    // Once the record is whole again, the session is approvable.
    std::fs::write(&path, &bytes).unwrap();
    let approved = runner
        .approve(&record.session_id, "Fix the month")
        .await
        .unwrap();
    support::assert_approved_demo_fix(&world, &record, &approved);
}

#[tokio::test]
async fn recover_removes_stale_temp_files_of_cut_writes() {
    let world = World::demo();
    let runner = world.fake_runner("replay", 0);
    awaiting(&world, &runner).await;
    let dir = world.home.sessions_dir();
    let old = dir.join(".tmp-old.partial");
    let young = dir.join(".tmp-young.partial");
    std::fs::write(&old, b"{").unwrap();
    std::fs::write(&young, b"{").unwrap();
    let file = std::fs::File::options().write(true).open(&old).unwrap();
    file.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3600))
        .unwrap();
    runner.recover().await.unwrap();
    assert!(!old.exists(), "a stale temp file is removed");
    assert!(
        young.exists(),
        "a write that may be under way is left alone"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn approve_and_reject_on_a_read_only_home_change_nothing_then_work() {
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::fs::PermissionsExt;
    // /proc/self belongs to the process's effective user.
    if std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0) {
        // Root writes through read-only permissions; the vcs-git suite checks unwritable
        // folders the same way.
        println!("skipped: running as root, a read-only home cannot be made");
        return;
    }
    let world = World::demo();
    let runner = world.fake_runner("replay", 0);
    let to_approve = awaiting(&world, &runner).await;
    let to_reject = awaiting(&world, &runner).await;
    let set_mode = |mode: u32| {
        for dir in [
            world.home.root().to_owned(),
            world.home.sessions_dir(),
            world.home.worktrees_dir(),
            to_approve.worktree_path.parent().unwrap().to_owned(),
        ] {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        for record in [&to_approve, &to_reject] {
            let file = world
                .home
                .sessions_dir()
                .join(format!("{}.json", record.session_id));
            let file_mode = if mode == 0o555 { 0o444 } else { 0o644 };
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(file_mode)).unwrap();
        }
    };
    set_mode(0o555);
    assert!(runner.approve(&to_approve.session_id, "x").await.is_err());
    assert!(runner.reject(&to_reject.session_id).await.is_err());
    set_mode(0o755);
    for record in [&to_approve, &to_reject] {
        let now = runner.session(&record.session_id).await.unwrap();
        assert_eq!(now.state, SessionState::AwaitingApproval);
        assert!(record.worktree_path.is_dir(), "the worktree is whole");
        assert_eq!(tip(&world, &record.branch), record.base_commit);
    }
    let approved = runner
        .approve(&to_approve.session_id, "Fix the month")
        .await
        .unwrap();
    support::assert_approved_demo_fix(&world, &to_approve, &approved);
    runner.reject(&to_reject.session_id).await.unwrap();
    assert!(!to_reject.worktree_path.exists());
}
