//! The suite's part on faults: leftovers, unwritable folders, locks, unusual paths.

use super::diff::assert_patch_rebuilds_worktree;
use super::fixture::{
    CheckoutSnapshot, Fixture, git, git_branch_exists, git_rev, git_worktrees, tree_files, write,
};
use super::git_missing;
use crate::expect_error;
use runner_contract::{ErrorKind, Vcs, WorktreeSpec};

/// Leftovers of a crash are refused with a clear error and nothing new is left behind: a branch
/// already there, a non-empty folder already there, the same worktree twice. A registration
/// whose folder is gone does not block a new worktree at that path.
pub async fn leftovers_are_refused_cleanly(vcs: &dyn Vcs) {
    if git_missing() {
        return;
    }
    let f = Fixture::new();
    let before = CheckoutSnapshot::of(&f.repo);

    let (spec, _) = f.spec(vcs, "Branch left over").await;
    git(&f.repo, &["branch", &spec.branch, "HEAD~1"]);
    let old_tip = git_rev(&f.repo, &format!("refs/heads/{}", spec.branch));
    let message = expect_error(
        vcs.create_worktree(&spec).await,
        ErrorKind::Vcs,
        "branch there",
    );
    assert!(
        message.contains(&spec.branch),
        "names the branch: {message}"
    );
    assert!(!spec.path.exists(), "no folder was made");
    assert_eq!(
        git_rev(&f.repo, &format!("refs/heads/{}", spec.branch)),
        old_tip,
        "branch untouched"
    );

    let (spec, _) = f.spec(vcs, "Folder left over").await;
    write(&spec.path, "leftover.txt", "from a crash\n");
    let message = expect_error(
        vcs.create_worktree(&spec).await,
        ErrorKind::Vcs,
        "folder there",
    );
    assert!(
        message.contains(&spec.path.display().to_string()),
        "names the folder: {message}"
    );
    assert!(
        !git_branch_exists(&f.repo, &spec.branch),
        "no branch was made"
    );
    assert_eq!(
        std::fs::read_to_string(spec.path.join("leftover.txt")).unwrap(),
        "from a crash\n"
    );

    let (spec, id) = f.spec(vcs, "Twice").await;
    vcs.create_worktree(&spec).await.unwrap();
    write(&spec.path, "work.txt", "in progress\n");
    expect_error(
        vcs.create_worktree(&spec).await,
        ErrorKind::Vcs,
        "the same worktree twice",
    );
    assert_eq!(
        std::fs::read_to_string(spec.path.join("work.txt")).unwrap(),
        "in progress\n"
    );
    assert!(git_branch_exists(&f.repo, &spec.branch));

    // The folder vanished but the registration stayed: a retry at that path works.
    std::fs::remove_dir_all(&spec.path).unwrap();
    let retry = WorktreeSpec {
        branch: vcs.branch_name("Twice retried", &id),
        ..spec.clone()
    };
    vcs.create_worktree(&retry)
        .await
        .expect("a stale registration does not block");
    assert!(retry.path.join("README.md").exists());

    // Emptied but not deleted (the folder stays, its files are gone): also stale.
    std::fs::remove_dir_all(&retry.path).unwrap();
    std::fs::create_dir(&retry.path).unwrap();
    let again = WorktreeSpec {
        branch: vcs.branch_name("Twice retried again", &id),
        ..spec.clone()
    };
    vcs.create_worktree(&again)
        .await
        .expect("an emptied worktree folder does not block");
    assert!(again.path.join("README.md").exists());
    assert_eq!(CheckoutSnapshot::of(&f.repo), before);
}

/// A worktree folder that cannot be written gives a clear error and leaves no branch, no
/// registration and no folder behind.
pub async fn unwritable_folder_leaves_nothing(vcs: &dyn Vcs) {
    if git_missing() {
        return;
    }
    let f = Fixture::new();
    let before = CheckoutSnapshot::of(&f.repo);
    let (spec, _) = f.spec(vcs, "Blocked").await;
    // A file where a folder of the path should be: no user, root included, can write there.
    let blocker = f.dir.path().join("blocker");
    std::fs::write(&blocker, "a file, not a folder").unwrap();
    let blocked = WorktreeSpec {
        path: blocker.join("worktrees").join("key").join("id"),
        ..spec.clone()
    };
    let message = expect_error(
        vcs.create_worktree(&blocked).await,
        ErrorKind::Vcs,
        "a file in the way",
    );
    assert!(message.contains("blocker"), "names the path: {message}");
    assert!(
        !git_branch_exists(&f.repo, &spec.branch),
        "no branch is left"
    );
    assert_eq!(git_worktrees(&f.repo).len(), 1, "no registration is left");

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let locked = f.dir.path().join("read-only");
        std::fs::create_dir_all(&locked).unwrap();
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
        let writable_anyway = std::fs::write(locked.join("probe"), "x").is_ok();
        if writable_anyway {
            // Root ignores permission bits; the file-in-the-way case above covers it.
            let _ = std::fs::remove_file(locked.join("probe"));
        } else {
            let denied = WorktreeSpec {
                path: locked.join("worktrees").join("id"),
                ..spec.clone()
            };
            expect_error(
                vcs.create_worktree(&denied).await,
                ErrorKind::Vcs,
                "a read-only folder",
            );
            assert!(!git_branch_exists(&f.repo, &spec.branch));
            assert_eq!(
                std::fs::read_dir(&locked).unwrap().count(),
                0,
                "nothing made inside"
            );
        }
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    assert_eq!(CheckoutSnapshot::of(&f.repo), before);
}

/// Locks held by another git: the person's `index.lock` does not stop a session (their index
/// is never needed) and stays; an `index.lock` left in the worktree (by a git or an approve
/// that was killed) does not stop approve, which reads the worktree's index and never writes
/// it; a held branch lock stops create cleanly.
pub async fn locks_held_by_another_git(vcs: &dyn Vcs) {
    if git_missing() {
        return;
    }
    let f = Fixture::new();
    let user_lock = f.repo.join(".git/index.lock");
    std::fs::write(&user_lock, "held by the person's editor").unwrap();
    let (spec, _) = f.spec(vcs, "Locked").await;
    vcs.create_worktree(&spec)
        .await
        .expect("create despite the person's index.lock");
    write(
        &spec.path,
        "src/date.rs",
        "pub fn year() -> u32 {\n    2026\n}\n",
    );
    vcs.diff(&spec)
        .await
        .expect("diff despite the person's index.lock");

    let wt_index = git(
        &spec.path,
        &["rev-parse", "--path-format=absolute", "--git-path", "index"],
    );
    let wt_lock = format!("{}.lock", wt_index.trim());
    std::fs::write(&wt_lock, "left by a git that was killed").unwrap();
    let id = vcs
        .commit(&spec, "Despite the stale lock", None)
        .await
        .expect("approve despite a stale index.lock in the worktree");
    assert_eq!(
        git_rev(&f.repo, &format!("refs/heads/{}", spec.branch)),
        id,
        "the branch holds the commit"
    );
    assert!(
        git(&f.repo, &["show", &id]).contains("2026"),
        "the commit holds the change"
    );
    assert!(
        !std::path::Path::new(&wt_lock).exists(),
        "the lock went with the worktree"
    );
    assert_eq!(
        std::fs::read_to_string(&user_lock).unwrap(),
        "held by the person's editor",
        "the person's lock is untouched"
    );
    std::fs::remove_file(&user_lock).unwrap();

    let (spec, _) = f.spec(vcs, "Ref locked").await;
    let ref_lock = f
        .repo
        .join(".git/refs/heads")
        .join(format!("{}.lock", spec.branch));
    std::fs::create_dir_all(ref_lock.parent().unwrap()).unwrap();
    std::fs::write(&ref_lock, "").unwrap();
    // Its own kind, so a caller can wait and try again rather than read the message.
    let message = expect_error(
        vcs.create_worktree(&spec).await,
        ErrorKind::Locked,
        "a held branch lock",
    );
    assert!(message.contains("lock"), "says it is locked: {message}");
    assert!(!spec.path.exists(), "no folder is left");
    assert!(
        !git_branch_exists(&f.repo, &spec.branch),
        "no branch is left"
    );
    assert_eq!(git_worktrees(&f.repo).len(), 1, "no registration is left");
    std::fs::remove_file(&ref_lock).unwrap();
}

/// A repo and a home with spaces and non-ASCII in their paths, and files named so, go through
/// create, diff (a patch git applies) and commit.
pub async fn paths_with_spaces_and_non_ascii(vcs: &dyn Vcs) {
    if git_missing() {
        return;
    }
    let f = Fixture::named("my repo ünï", "home dir ✓");
    let (spec, _) = f.spec(vcs, "Ünïcödé paths").await;
    vcs.create_worktree(&spec).await.expect("create");
    let wt = &spec.path;
    write(wt, "a file with spaces.txt", "spaces\n");
    write(wt, "naïve café.md", "accents\n");
    write(wt, "日本/テスト.txt", "kanji\n");
    write(wt, "say \"hi\".txt", "quotes\n");
    write(wt, "README.md", "# fixture, edited\n");
    std::fs::create_dir_all(wt.join("new dir")).unwrap();
    std::fs::rename(wt.join("old/name.txt"), wt.join("new dir/ñame.txt")).unwrap();

    let diff = vcs.diff(&spec).await.expect("diff");
    let paths: Vec<&str> = diff.stat.files.iter().map(|f| f.path.as_str()).collect();
    for expected in [
        "a file with spaces.txt",
        "naïve café.md",
        "日本/テスト.txt",
        "say \"hi\".txt",
        "new dir/ñame.txt",
    ] {
        assert!(paths.contains(&expected), "{expected} in {paths:?}");
    }
    assert_patch_rebuilds_worktree(&f, wt, &spec.base, &diff.patch);

    let listed = vcs.list_worktrees(&f.repo, &f.root()).await.unwrap();
    assert_eq!(listed.len(), 1);
    let id = vcs.commit(&spec, "Ünïcödé", None).await.expect("commit");
    let files = tree_files(&f.repo, &id);
    assert!(files.contains_key("日本/テスト.txt") && files.contains_key("new dir/ñame.txt"));
    assert!(!wt.exists());
}
