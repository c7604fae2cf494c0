//! The suite's part on approve and reject.

use std::path::Path;

use super::diff::change_everything;
use super::fixture::{
    CheckoutSnapshot, Fixture, git, git_branch_exists, git_rev, git_worktrees, tree_files, write,
};
use super::{NOTHING_TO_APPROVE, git_missing};
use crate::expect_error;
use runner_contract::{ErrorKind, Signature, Vcs};

/// The worktree's files, except `.git` and the given ignored paths: path → bytes.
fn work_files(wt: &Path, ignored: &[&str]) -> std::collections::BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut std::collections::BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if rel == ".git" {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                walk(root, &path, out);
            } else if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                out.insert(rel, target.into_os_string().into_encoded_bytes());
            } else {
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk(wt, wt, &mut out);
    out.retain(|path, _| {
        !ignored
            .iter()
            .any(|i| path == i || path.starts_with(&format!("{i}/")))
    });
    out
}

/// Approve makes exactly one commit on the branch with base as its parent, holding every
/// file not ignored (also what the agent staged or committed itself), by the given author and
/// the repo's committer; the worktree goes, the branch stays, the person's branch does not move.
pub async fn commit_makes_one_commit_on_the_branch(vcs: &dyn Vcs) {
    if git_missing() {
        return;
    }
    let f = Fixture::new();
    let before = CheckoutSnapshot::of(&f.repo);
    let (spec, _) = f.spec(vcs, "Fix the date bug").await;
    vcs.create_worktree(&spec).await.unwrap();
    let wt = &spec.path;
    change_everything(wt);
    // The agent also committed one change and staged another.
    write(wt, "CHANGELOG.md", "- first\n- agent wip\n");
    git(wt, &["commit", "-q", "-am", "agent wip"]);
    write(wt, "staged.txt", "staged by the agent\n");
    git(wt, &["add", "staged.txt"]);
    let expected = work_files(wt, &["target", "debug.log"]);

    let reviewer = Signature {
        name: "Ada Reviewer".into(),
        email: "ada@example.com".into(),
    };
    let id = vcs
        .commit(&spec, "Fix the date bug\n\nWith a body.", Some(&reviewer))
        .await
        .expect("commit");
    let branch_ref = format!("refs/heads/{}", spec.branch);
    assert_eq!(
        git_rev(&f.repo, &branch_ref),
        id,
        "the branch points at the new commit"
    );
    assert_eq!(
        git(
            &f.repo,
            &[
                "rev-list",
                "--count",
                &format!("{}..{branch_ref}", spec.base)
            ]
        )
        .trim(),
        "1",
        "exactly one commit on top of base"
    );
    let info = git(
        &f.repo,
        &["log", "-1", "--format=%P|%an <%ae>|%cn <%ce>|%s|%b", &id],
    );
    assert_eq!(
        info.trim_end(),
        format!(
            "{}|Ada Reviewer <ada@example.com>|Repo Owner <owner@example.com>|Fix the date bug|With a body.",
            spec.base
        )
    );
    let committed: std::collections::BTreeMap<String, Vec<u8>> = tree_files(&f.repo, &id)
        .into_iter()
        .map(|(p, (_, bytes))| (p, bytes))
        .collect();
    assert_eq!(
        committed.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>(),
        "the commit holds every file not ignored, and nothing else"
    );
    assert_eq!(committed, expected, "with the worktree's contents");
    #[cfg(unix)]
    assert_eq!(
        tree_files(&f.repo, &id)["scripts/run.sh"].0,
        "100755",
        "with its modes"
    );

    assert!(!wt.exists(), "the worktree is removed");
    assert!(
        !git_worktrees(&f.repo)
            .iter()
            .any(|p| p.ends_with(spec.path.file_name().unwrap()))
    );
    assert!(git_branch_exists(&f.repo, &spec.branch), "the branch stays");
    assert_eq!(
        CheckoutSnapshot::of(&f.repo),
        before,
        "the person's checkout did not move"
    );

    // Without an author, the repo's configured identity signs it.
    let (second, _) = f.spec(vcs, "Second").await;
    vcs.create_worktree(&second).await.unwrap();
    write(&second.path, "second.txt", "two\n");
    let id = vcs.commit(&second, "Second", None).await.unwrap();
    assert_eq!(
        git(&f.repo, &["log", "-1", "--format=%an <%ae>", &id]).trim(),
        "Repo Owner <owner@example.com>"
    );
}

/// Approving an untouched worktree (or one with only ignored files) is refused with
/// "nothing to approve: the agent made no changes", and the worktree and branch stay.
pub async fn nothing_to_approve(vcs: &dyn Vcs) {
    if git_missing() {
        return;
    }
    let f = Fixture::new();
    let (spec, _) = f.spec(vcs, "Do nothing").await;
    vcs.create_worktree(&spec).await.unwrap();
    for round in ["untouched", "only ignored files"] {
        let message = expect_error(
            vcs.commit(&spec, "Nothing", None).await,
            ErrorKind::NothingToApprove,
            round,
        );
        assert!(message.contains(NOTHING_TO_APPROVE), "{round}: {message}");
        assert!(
            spec.path.join("README.md").exists(),
            "{round}: the worktree stays"
        );
        assert_eq!(
            git_rev(&f.repo, &format!("refs/heads/{}", spec.branch)),
            spec.base
        );
        write(&spec.path, "debug.log", "ignored\n");
        write(&spec.path, "target/out.o", "ignored\n");
    }
}

/// Reject removes the worktree even with changes in it, then deletes the branch; both are
/// quiet when already gone; a branch checked out in a worktree is not deleted.
pub async fn reject_removes_worktree_and_branch(vcs: &dyn Vcs) {
    if git_missing() {
        return;
    }
    let f = Fixture::new();
    let before = CheckoutSnapshot::of(&f.repo);
    let (spec, _) = f.spec(vcs, "Throw away").await;
    vcs.create_worktree(&spec).await.unwrap();
    change_everything(&spec.path);

    expect_error(
        vcs.delete_branch(&f.repo, &spec.branch).await,
        ErrorKind::Vcs,
        "deleting a branch that a worktree has checked out",
    );
    assert!(git_branch_exists(&f.repo, &spec.branch));

    vcs.remove_worktree(&f.repo, &spec.path)
        .await
        .expect("remove with changes");
    assert!(!spec.path.exists(), "the folder is gone");
    assert!(
        !git_worktrees(&f.repo)
            .iter()
            .any(|p| p.ends_with(spec.path.file_name().unwrap()))
    );
    assert!(
        git_branch_exists(&f.repo, &spec.branch),
        "remove keeps the branch"
    );
    vcs.delete_branch(&f.repo, &spec.branch)
        .await
        .expect("delete");
    assert!(!git_branch_exists(&f.repo, &spec.branch));
    assert!(!vcs.branch_exists(&f.repo, &spec.branch).await.unwrap());

    vcs.remove_worktree(&f.repo, &spec.path)
        .await
        .expect("removing again is fine");
    vcs.delete_branch(&f.repo, &spec.branch)
        .await
        .expect("deleting again is fine");
    assert_eq!(CheckoutSnapshot::of(&f.repo), before);
}
