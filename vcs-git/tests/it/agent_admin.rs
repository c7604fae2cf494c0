//! What an agent in the box can write in its worktree's own git folder
//! (`<repo>/.git/worktrees/<name>`, writable there so git works: ARCHITECTURE.md, "agent-box"):
//! a `locked` file (`git worktree lock`) and any HEAD (another branch, a detached commit,
//! garbage, none). Written here directly, as the agent's git would; approve and reject must
//! still settle: the commit on the session's branch, the person's branches untouched, nothing
//! of the worktree left.

use std::path::{Path, PathBuf};

use runner_contract::{Vcs, WorktreeSpec};
use runner_testkit::vcs::fixture::{
    Fixture, git, git_branch_exists, git_rev, git_worktrees, write,
};
use vcs_git::GitVcs;

fn git_missing() -> bool {
    if runner_testkit::vcs::fixture::git_available() {
        return false;
    }
    runner_testkit::skip("the git program is not installed");
    true
}

/// Where the agent points its worktree's HEAD.
#[derive(Debug, Clone, Copy)]
enum Head {
    /// `git symbolic-ref HEAD refs/heads/main`: the person's branch.
    PersonsBranch,
    /// `git checkout --detach`.
    Detached,
    /// Bytes that are no reference at all.
    Garbage,
    /// Deleted.
    Missing,
    /// A folder in its place.
    Folder,
}

const HEADS: [Head; 5] = [
    Head::PersonsBranch,
    Head::Detached,
    Head::Garbage,
    Head::Missing,
    Head::Folder,
];

/// A worktree made for a session, with a change in it, then locked and its HEAD moved.
async fn tampered(head: Head) -> (Fixture, WorktreeSpec, PathBuf) {
    let f = Fixture::new();
    let (spec, _) = f.spec(&GitVcs::new(), "Tampered").await;
    GitVcs::new().create_worktree(&spec).await.expect("create");
    write(
        &spec.path,
        "src/date.rs",
        "pub fn year() -> u32 {\n    2026\n}\n",
    );
    let admin = f
        .repo
        .join(".git/worktrees")
        .join(spec.path.file_name().unwrap());
    assert!(
        admin.join("HEAD").is_file(),
        "{} is the git folder",
        admin.display()
    );
    std::fs::write(admin.join("locked"), "the agent's own lock\n").unwrap();
    match head {
        Head::PersonsBranch => std::fs::write(admin.join("HEAD"), "ref: refs/heads/main\n"),
        Head::Detached => std::fs::write(admin.join("HEAD"), format!("{}\n", spec.base)),
        Head::Garbage => std::fs::write(admin.join("HEAD"), b"\xffnot a reference\0\n"),
        Head::Missing => std::fs::remove_file(admin.join("HEAD")),
        Head::Folder => std::fs::remove_file(admin.join("HEAD"))
            .and_then(|()| std::fs::create_dir_all(admin.join("HEAD/refs"))),
    }
    .unwrap();
    (f, spec, admin)
}

/// Nothing of the session's worktree is left: its folder, its git folder, git's listing.
fn nothing_left(f: &Fixture, spec: &WorktreeSpec, admin: &Path) {
    assert!(!spec.path.exists(), "the worktree's folder is gone");
    assert!(!admin.exists(), "its git folder is gone, lock and all");
    assert_eq!(
        git_worktrees(&f.repo),
        vec![f.repo.canonicalize().unwrap()],
        "git lists only the person's checkout"
    );
}

#[tokio::test]
async fn approve_commits_on_the_sessions_branch_over_the_agents_lock_and_head() {
    if git_missing() {
        return;
    }
    let vcs = GitVcs::new();
    for head in HEADS {
        let (f, spec, admin) = tampered(head).await;
        let main = git_rev(&f.repo, "refs/heads/main");

        let diff = vcs
            .diff(&spec)
            .await
            .unwrap_or_else(|e| panic!("{head:?}: diff: {e}"));
        assert!(
            diff.patch.contains("2026"),
            "{head:?}: the diff shows the change"
        );
        let id = vcs
            .commit(&spec, "Approved over the lock", None)
            .await
            .unwrap_or_else(|e| panic!("{head:?}: approve: {e}"));

        let branch = format!("refs/heads/{}", spec.branch);
        assert_eq!(
            git_rev(&f.repo, &branch),
            id,
            "{head:?}: on the session's branch"
        );
        assert_eq!(git_rev(&f.repo, &format!("{id}^")), spec.base, "{head:?}");
        assert_eq!(
            git(&f.repo, &["show", &format!("{id}:src/date.rs")]),
            "pub fn year() -> u32 {\n    2026\n}\n",
            "{head:?}: the commit holds the change"
        );
        assert_eq!(
            git_rev(&f.repo, "refs/heads/main"),
            main,
            "{head:?}: main did not move"
        );
        nothing_left(&f, &spec, &admin);
    }
}

#[tokio::test]
async fn reject_removes_everything_over_the_agents_lock_and_head() {
    if git_missing() {
        return;
    }
    let vcs = GitVcs::new();
    for head in HEADS {
        let (f, spec, admin) = tampered(head).await;
        let main = git_rev(&f.repo, "refs/heads/main");

        vcs.remove_worktree(&f.repo, &spec.path)
            .await
            .unwrap_or_else(|e| panic!("{head:?}: remove: {e}"));
        vcs.delete_branch(&f.repo, &spec.branch)
            .await
            .unwrap_or_else(|e| panic!("{head:?}: delete the branch: {e}"));

        assert!(!git_branch_exists(&f.repo, &spec.branch), "{head:?}");
        assert_eq!(
            git_rev(&f.repo, "refs/heads/main"),
            main,
            "{head:?}: main stays"
        );
        nothing_left(&f, &spec, &admin);
    }
}
