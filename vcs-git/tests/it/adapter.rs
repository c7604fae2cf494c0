//! What `GitVcs` promises beyond the shared suite: its refusals, its identity fallback, and
//! patches for line endings and encodings git treats specially.

use std::path::Path;

use runner_contract::{ErrorKind, Vcs, WorktreeSpec};
use runner_testkit::expect_error;
use runner_testkit::vcs::fixture::{
    Fixture, git, git_branch_exists, git_rev, git_with_stdin, write,
};
use vcs_git::GitVcs;

fn git_missing() -> bool {
    if runner_testkit::vcs::fixture::git_available() {
        return false;
    }
    runner_testkit::skip("the git program is not installed");
    true
}

async fn fresh_worktree(f: &Fixture, prompt: &str) -> WorktreeSpec {
    let (spec, _) = f.spec(&GitVcs::new(), prompt).await;
    GitVcs::new().create_worktree(&spec).await.expect("create");
    spec
}

#[tokio::test]
async fn refuses_bad_paths_and_names_before_doing_anything() {
    if git_missing() {
        return;
    }
    let vcs = GitVcs::new();
    let f = Fixture::new();
    let (spec, _) = f.spec(&vcs, "Bad input").await;

    let relative = WorktreeSpec {
        path: "worktrees/x".into(),
        ..spec.clone()
    };
    let message = expect_error(
        vcs.create_worktree(&relative).await,
        ErrorKind::InvalidInput,
        "relative path",
    );
    assert!(message.contains("absolute"), "{message}");

    let inside = WorktreeSpec {
        path: f.repo.join("nested"),
        ..spec.clone()
    };
    let message = expect_error(
        vcs.create_worktree(&inside).await,
        ErrorKind::InvalidInput,
        "inside the repo",
    );
    assert!(message.contains("inside the repo"), "{message}");
    assert!(!f.repo.join("nested").exists());

    let bad_branch = WorktreeSpec {
        branch: "codehands/a..b".into(),
        ..spec.clone()
    };
    expect_error(
        vcs.create_worktree(&bad_branch).await,
        ErrorKind::InvalidInput,
        "bad branch",
    );
    let bad_base = WorktreeSpec {
        base: "not-a-commit".into(),
        ..spec.clone()
    };
    expect_error(
        vcs.create_worktree(&bad_base).await,
        ErrorKind::InvalidInput,
        "bad base",
    );
    let unknown = WorktreeSpec {
        base: "0".repeat(40).replace("00", "1f"),
        ..spec.clone()
    };
    expect_error(
        vcs.create_worktree(&unknown).await,
        ErrorKind::InvalidInput,
        "unknown base",
    );
    assert!(
        !spec.path.exists() && !git_branch_exists(&f.repo, &spec.branch),
        "nothing was made"
    );

    expect_error(
        vcs.delete_branch(&f.repo, "-D").await,
        ErrorKind::InvalidInput,
        "branch -D",
    );
    expect_error(
        vcs.branch_exists(&f.repo, "refs/heads/main").await,
        ErrorKind::InvalidInput,
        "full ref",
    );
}

#[tokio::test]
async fn commit_refuses_what_is_not_its_own_worktree() {
    if git_missing() {
        return;
    }
    let vcs = GitVcs::new();
    let f = Fixture::new();
    let spec = fresh_worktree(&f, "Mine").await;
    write(&spec.path, "x.txt", "x\n");

    let message = expect_error(
        vcs.commit(&spec, "  \n", None).await,
        ErrorKind::InvalidInput,
        "an empty message",
    );
    assert!(message.contains("message is empty"), "{message}");

    write(&f.repo, "user-edit.txt", "the person's own work\n");
    let message = expect_error(
        vcs.commit(
            &WorktreeSpec {
                path: f.repo.clone(),
                ..spec.clone()
            },
            "Into the checkout",
            None,
        )
        .await,
        ErrorKind::InvalidInput,
        "the person's checkout",
    );
    assert!(message.contains("own checkout"), "{message}");
    assert_eq!(
        git_rev(&f.repo, "HEAD"),
        spec.base,
        "the person's branch did not move"
    );

    let other = Fixture::new();
    let message = expect_error(
        vcs.commit(
            &WorktreeSpec {
                repo: other.repo.clone(),
                ..spec.clone()
            },
            "Wrong repo",
            None,
        )
        .await,
        ErrorKind::InvalidInput,
        "a worktree of another repo",
    );
    assert!(message.contains("is not a worktree of"), "{message}");

    let gone = f.home.join("worktrees/none/00000000");
    expect_error(
        vcs.diff(&WorktreeSpec {
            path: gone,
            ..spec.clone()
        })
        .await,
        ErrorKind::NotFound,
        "diff of a removed worktree",
    );
    let plain = f.dir.path().join("plain folder");
    write(&plain, "keep.txt", "keep\n");
    let message = expect_error(
        vcs.remove_worktree(&f.repo, &plain).await,
        ErrorKind::InvalidInput,
        "removing a folder that is not a worktree",
    );
    assert!(message.contains("left alone"), "{message}");
    assert!(plain.join("keep.txt").exists(), "the folder is left alone");
}

#[tokio::test]
async fn identity_falls_back_when_the_config_names_nobody() {
    if git_missing() {
        return;
    }
    let vcs = GitVcs::new();
    let f = Fixture::new();
    // An empty identity in the repo's config overrides any global one.
    git(&f.repo, &["config", "user.name", ""]);
    git(&f.repo, &["config", "user.email", ""]);
    let spec = fresh_worktree(&f, "No identity").await;
    write(&spec.path, "x.txt", "x\n");
    let id = vcs.commit(&spec, "Anonymous", None).await.expect("commit");
    assert_eq!(
        git(&f.repo, &["log", "-1", "--format=%an <%ae>|%cn <%ce>", &id]).trim(),
        "codehands <codehands@localhost>|codehands <codehands@localhost>"
    );
}

#[tokio::test]
async fn an_agent_commit_alone_is_approved_and_squashed_onto_base() {
    if git_missing() {
        return;
    }
    let vcs = GitVcs::new();
    let f = Fixture::new();
    let spec = fresh_worktree(&f, "Agent commits").await;
    write(&spec.path, "a.txt", "a\n");
    git(&spec.path, &["add", "a.txt"]);
    git(&spec.path, &["commit", "-q", "-m", "one"]);
    write(&spec.path, "b.txt", "b\n");
    git(&spec.path, &["add", "b.txt"]);
    git(&spec.path, &["commit", "-q", "-m", "two"]);
    assert!(vcs.diff(&spec).await.unwrap().stat.files_changed == 2);
    let id = vcs.commit(&spec, "Squashed", None).await.unwrap();
    assert_eq!(
        git_rev(&f.repo, &format!("{id}^")),
        spec.base,
        "one commit, on base"
    );
    assert_eq!(git_rev(&f.repo, &format!("refs/heads/{}", spec.branch)), id);

    // Commits that undo themselves leave nothing to approve.
    let spec = fresh_worktree(&f, "Undo").await;
    write(&spec.path, "README.md", "changed\n");
    git(&spec.path, &["commit", "-q", "-am", "change"]);
    git(&spec.path, &["revert", "--no-edit", "HEAD"]);
    expect_error(
        vcs.commit(&spec, "Nothing", None).await,
        ErrorKind::NothingToApprove,
        "commits that cancel out",
    );
}

/// A lock stops `prune` (a person's worktree on a USB disk), never the removal of a session's
/// worktree: the agent in the box can lock its own (`agent_admin.rs` has the agent's side).
#[tokio::test]
async fn a_locked_worktree_is_removed_but_not_pruned() {
    if git_missing() {
        return;
    }
    let vcs = GitVcs::new();
    let f = Fixture::new();
    let lock = |spec: &WorktreeSpec| {
        git(
            &f.repo,
            &[
                "worktree",
                "lock",
                "--reason",
                "on a USB disk",
                spec.path.to_str().unwrap(),
            ],
        )
    };
    let removed = fresh_worktree(&f, "Locked").await;
    lock(&removed);
    vcs.remove_worktree(&f.repo, &removed.path)
        .await
        .expect("a locked worktree is removed");
    assert!(!removed.path.exists());
    assert_eq!(
        vcs.list_worktrees(&f.repo, &f.root()).await.unwrap().len(),
        0,
        "its registration went with it"
    );

    let kept = fresh_worktree(&f, "Locked and gone").await;
    lock(&kept);
    std::fs::remove_dir_all(&kept.path).unwrap();
    vcs.prune(&f.repo).await.unwrap();
    assert_eq!(
        vcs.list_worktrees(&f.repo, &f.root()).await.unwrap().len(),
        1,
        "a locked entry stays"
    );
}

fn assert_applies(f: &Fixture, wt: &Path, patch: &str) {
    let check = git_with_stdin(&f.repo, &["apply", "--check", "-"], patch.as_bytes());
    assert!(
        check.status.success(),
        "{}\n{patch}",
        String::from_utf8_lossy(&check.stderr)
    );
    let scratch = f.dir.path().join("scratch");
    git(
        f.dir.path(),
        &[
            "clone",
            "-q",
            f.repo.to_str().unwrap(),
            scratch.to_str().unwrap(),
        ],
    );
    let applied = git_with_stdin(&scratch, &["apply", "--index", "-"], patch.as_bytes());
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    git(wt, &["add", "-A"]);
    assert_eq!(git(&scratch, &["write-tree"]), git(wt, &["write-tree"]));
}

#[tokio::test]
async fn patches_keep_crlf_and_non_utf8_bytes_exactly() {
    if git_missing() {
        return;
    }
    let vcs = GitVcs::new();
    let f = Fixture::new();
    write(&f.repo, "windows.txt", "one\r\ntwo\r\nthree\r\n");
    write(&f.repo, "latin1.txt", b"caf\xe9\n".as_slice());
    git(&f.repo, &["add", "-A"]);
    git(&f.repo, &["commit", "-q", "-m", "encodings"]);
    let spec = fresh_worktree(&f, "Encodings").await;
    write(&spec.path, "windows.txt", "one\r\n2\r\nthree\r\n");
    write(&spec.path, "latin1.txt", b"caf\xe9 cr\xe8me\n".as_slice());
    write(&spec.path, "only-cr-end.txt", "no newline at all");
    let diff = vcs.diff(&spec).await.unwrap();
    let windows = diff
        .stat
        .files
        .iter()
        .find(|s| s.path == "windows.txt")
        .unwrap();
    assert_eq!((windows.insertions, windows.deletions), (1, 1));
    assert!(
        diff.stat
            .files
            .iter()
            .find(|s| s.path == "latin1.txt")
            .unwrap()
            .binary,
        "not UTF-8: sent as binary"
    );
    assert_applies(&f, &spec.path, &diff.patch);
}

#[cfg(unix)]
#[tokio::test]
async fn a_file_that_becomes_a_symlink_is_a_deletion_and_an_addition() {
    if git_missing() {
        return;
    }
    let vcs = GitVcs::new();
    let f = Fixture::new();
    let spec = fresh_worktree(&f, "Type change").await;
    std::fs::remove_file(spec.path.join("CHANGELOG.md")).unwrap();
    std::os::unix::fs::symlink("README.md", spec.path.join("CHANGELOG.md")).unwrap();
    let diff = vcs.diff(&spec).await.unwrap();
    assert_eq!(diff.stat.files_changed, 1);
    let stat = &diff.stat.files[0];
    assert_eq!(
        (stat.path.as_str(), stat.insertions, stat.deletions),
        ("CHANGELOG.md", 1, 1)
    );
    assert!(
        diff.patch.contains("deleted file mode 100644")
            && diff.patch.contains("new file mode 120000")
    );
    assert_applies(&f, &spec.path, &diff.patch);
}

/// The child's half of `works_with_no_git_identity_anywhere`.
const NO_IDENTITY_CHILD: &str = "CODEHANDS_VCS_GIT_NO_IDENTITY_CHILD";

/// A machine with no git identity at all (no global config, no variables, none in the repo):
/// create, commit and the reflogs still work, signed `codehands <codehands@localhost>`.
/// The process environment cannot be changed safely from a test, so the test binary runs
/// itself again with a clean one.
#[tokio::test]
async fn works_with_no_git_identity_anywhere() {
    if git_missing() {
        return;
    }
    if std::env::var_os(NO_IDENTITY_CHILD).is_none() {
        let home = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new(std::env::current_exe().unwrap());
        child
            .args([
                "--exact",
                "adapter::works_with_no_git_identity_anywhere",
                "--nocapture",
            ])
            .env(NO_IDENTITY_CHILD, "1")
            .env("HOME", home.path())
            .env("XDG_CONFIG_HOME", home.path())
            .env("GIT_CONFIG_NOSYSTEM", "1");
        for var in [
            "GIT_AUTHOR_NAME",
            "GIT_AUTHOR_EMAIL",
            "GIT_COMMITTER_NAME",
            "GIT_COMMITTER_EMAIL",
            "EMAIL",
            "GIT_CONFIG_GLOBAL",
        ] {
            child.env_remove(var);
        }
        let out = child.output().unwrap();
        assert!(
            out.status.success(),
            "the run without an identity failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("1 passed"),
            "the child ran the test"
        );
        return;
    }
    let vcs = GitVcs::new();
    let f = Fixture::new();
    git(&f.repo, &["config", "--unset", "user.name"]);
    git(&f.repo, &["config", "--unset", "user.email"]);
    let spec = fresh_worktree(&f, "Nobody").await;
    write(&spec.path, "x.txt", "x\n");
    let id = vcs
        .commit(&spec, "Anonymous", None)
        .await
        .expect("commit without any identity");
    assert_eq!(
        git(&f.repo, &["log", "-1", "--format=%an <%ae>|%cn <%ce>", &id]).trim(),
        "codehands <codehands@localhost>|codehands <codehands@localhost>"
    );
}

/// A repo keeps a worktree per session awaiting approval. A new one goes on its own branch
/// whatever else is registered: a folder of the same name under another root, one the person
/// made with git on a branch of their own, and earlier sessions' worktrees all stay as they were.
#[tokio::test]
async fn a_new_worktree_leaves_every_registered_one_alone() {
    if git_missing() {
        return;
    }
    let vcs = GitVcs::new();
    let f = Fixture::new();
    let own = f.home.join("own-checkout");
    git(
        &f.repo,
        &[
            "worktree",
            "add",
            "--quiet",
            "-b",
            "mine",
            &own.display().to_string(),
        ],
    );
    let mut kept = Vec::new();
    for n in 0..6 {
        kept.push(fresh_worktree(&f, &format!("Kept session {n}")).await);
    }
    // Another root, and a folder with the same name as the next session's.
    let (next, _) = f.spec(&vcs, "The next session").await;
    let elsewhere = f
        .home
        .join("elsewhere")
        .join(next.path.file_name().unwrap());
    std::fs::create_dir_all(elsewhere.parent().unwrap()).unwrap();
    git(
        &f.repo,
        &[
            "worktree",
            "add",
            "--quiet",
            "-b",
            "same-name",
            &elsewhere.display().to_string(),
        ],
    );

    vcs.create_worktree(&next)
        .await
        .expect("create next to the others");

    assert_eq!(
        git(&next.path, &["symbolic-ref", "HEAD"]).trim(),
        format!("refs/heads/{}", next.branch),
        "the new worktree is on its own branch"
    );
    assert_eq!(git_rev(&next.path, "HEAD"), next.base);
    assert!(
        git(&next.path, &["status", "--porcelain"]).is_empty(),
        "a clean checkout"
    );
    for (dir, branch) in kept
        .iter()
        .map(|s| (s.path.clone(), s.branch.clone()))
        .chain([
            (own.clone(), "mine".into()),
            (elsewhere.clone(), "same-name".into()),
        ])
    {
        assert_eq!(
            git(&dir, &["symbolic-ref", "HEAD"]).trim(),
            format!("refs/heads/{branch}"),
            "{} is still on {branch}",
            dir.display()
        );
    }
    let listed = runner_testkit::vcs::fixture::git_worktrees(&f.repo);
    // The checkout itself, the person's, the same-named one, the kept ones and the new one.
    assert_eq!(listed.len(), 1 + 1 + 1 + kept.len() + 1, "{listed:?}");
}
