//! The suite's part on recovery: listing, pruning, commits beyond base.

use super::fixture::{Fixture, git, git_branch_exists, git_worktrees, write};
use super::git_missing;
use runner_contract::Vcs;

/// Recovery: this tool's worktrees (and only those under the root) are listed with their
/// branches, stale entries are pruned, and a branch tells whether the agent committed.
pub async fn recovery_helpers(vcs: &dyn Vcs) {
    if git_missing() {
        return;
    }
    let f = Fixture::new();
    let (one, _) = f.spec(vcs, "First session").await;
    let (two, _) = f.spec(vcs, "Second session").await;
    vcs.create_worktree(&one).await.unwrap();
    vcs.create_worktree(&two).await.unwrap();
    let elsewhere = f.dir.path().join("elsewhere");
    git(
        &f.repo,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "mine",
            elsewhere.to_str().unwrap(),
        ],
    );

    let listed = vcs.list_worktrees(&f.repo, &f.root()).await.unwrap();
    let mut expected: Vec<(std::path::PathBuf, Option<String>)> = [&one, &two]
        .iter()
        .map(|s| (s.path.clone(), Some(s.branch.clone())))
        .collect();
    expected.sort();
    let got: Vec<_> = listed
        .iter()
        .map(|w| (w.path.clone(), w.branch.clone()))
        .collect();
    assert_eq!(
        got, expected,
        "ours, spelled as they were made, with branches; not the person's own worktree"
    );
    #[cfg(unix)]
    {
        // Through a symlinked home, paths come back spelled under the root as given.
        let link = f.dir.path().join("home-link");
        std::os::unix::fs::symlink(&f.home, &link).unwrap();
        let via_link = vcs
            .list_worktrees(&f.repo, &link.join("worktrees"))
            .await
            .unwrap();
        assert_eq!(via_link.len(), 2);
        assert!(
            via_link.iter().all(|w| w.path.starts_with(&link)),
            "{via_link:?}"
        );
    }

    assert!(
        !vcs.has_commits_beyond(&f.repo, &one.branch, &one.base)
            .await
            .unwrap()
    );
    write(&one.path, "agent.txt", "committed by the agent\n");
    git(&one.path, &["add", "agent.txt"]);
    git(&one.path, &["commit", "-q", "-m", "agent commit"]);
    assert!(
        vcs.has_commits_beyond(&f.repo, &one.branch, &one.base)
            .await
            .unwrap()
    );
    assert!(vcs.branch_exists(&f.repo, &one.branch).await.unwrap());
    assert!(
        !vcs.branch_exists(&f.repo, "codehands/never-made-00000000")
            .await
            .unwrap()
    );

    // Removing a worktree whose folder is already gone forgets its entry.
    let (three, _) = f.spec(vcs, "Third session").await;
    vcs.create_worktree(&three).await.unwrap();
    std::fs::remove_dir_all(&three.path).unwrap();
    vcs.remove_worktree(&f.repo, &three.path)
        .await
        .expect("remove a worktree whose folder is gone");
    assert!(
        !git_worktrees(&f.repo)
            .iter()
            .any(|p| p.ends_with(three.path.file_name().unwrap())),
        "its entry is gone"
    );
    vcs.delete_branch(&f.repo, &three.branch).await.unwrap();

    // A crash or a person deleted the second folder by hand.
    std::fs::remove_dir_all(&two.path).unwrap();
    vcs.prune(&f.repo).await.expect("prune");
    let listed = vcs.list_worktrees(&f.repo, &f.root()).await.unwrap();
    assert_eq!(listed.len(), 1, "the stale entry is pruned: {listed:?}");
    assert_eq!(listed[0].branch.as_deref(), Some(one.branch.as_str()));
    let registered = git_worktrees(&f.repo);
    assert!(
        registered.iter().any(|p| p.ends_with("elsewhere")),
        "other worktrees stay"
    );
    assert!(
        !registered
            .iter()
            .any(|p| p.ends_with(two.path.file_name().unwrap())),
        "git agrees"
    );
    assert!(
        git_branch_exists(&f.repo, &two.branch),
        "pruning keeps branches"
    );
    vcs.delete_branch(&f.repo, &two.branch)
        .await
        .expect("its branch can go now");
}
