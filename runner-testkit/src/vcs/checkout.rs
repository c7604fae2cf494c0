//! The suite's part on the person's checkout: never touched.

use super::fixture::{CheckoutSnapshot, Fixture, git, git_rev, write};
use super::git_missing;
use runner_contract::Vcs;

/// The worktree is on a new branch from base, outside the repo, and the person's checkout
/// (HEAD, branch, index, working files, even uncommitted edits) is the same after create,
/// diff, commit and reject.
pub async fn worktree_leaves_the_checkout_untouched(vcs: &dyn Vcs) {
    if git_missing() {
        return;
    }
    let f = Fixture::new();
    // A checkout with work in progress: "unchanged" must not mean "cleaned".
    write(
        &f.repo,
        "README.md",
        "# edited by the person, not committed\n",
    );
    write(&f.repo, "notes.txt", "the person's untracked notes\n");
    write(&f.repo, "CHANGELOG.md", "- staged by the person\n");
    git(&f.repo, &["add", "CHANGELOG.md"]);
    let before = CheckoutSnapshot::of(&f.repo);

    let (spec, _) = f.spec(vcs, "Fix the date bug").await;
    vcs.create_worktree(&spec).await.expect("create");
    assert_eq!(
        CheckoutSnapshot::of(&f.repo),
        before,
        "after create_worktree"
    );
    let wt = &spec.path;
    assert!(wt.join("src/date.rs").is_file(), "files are checked out");
    assert!(!wt.starts_with(&f.repo), "the worktree is outside the repo");
    assert_eq!(
        git(wt, &["symbolic-ref", "HEAD"]).trim(),
        format!("refs/heads/{}", spec.branch),
        "the worktree is on the new branch"
    );
    assert_eq!(git_rev(wt, "HEAD"), spec.base, "the branch starts at base");
    assert_eq!(
        git_rev(&f.repo, &format!("refs/heads/{}", spec.branch)),
        spec.base
    );
    assert_eq!(
        std::fs::read_to_string(wt.join("README.md")).unwrap(),
        "# fixture\n\nA repo for the Vcs suite.\n",
        "the worktree holds the base commit, not the person's edits"
    );
    assert!(
        !wt.join("notes.txt").exists(),
        "untracked files of the person stay home"
    );
    assert_eq!(
        git(wt, &["status", "--porcelain"]),
        "",
        "a fresh worktree is clean"
    );

    write(wt, "src/date.rs", "pub fn year() -> u32 {\n    2026\n}\n");
    let diff = vcs.diff(&spec).await.expect("diff");
    assert_eq!(diff.stat.files_changed, 1);
    assert_eq!(CheckoutSnapshot::of(&f.repo), before, "after diff");
    vcs.commit(&spec, "Fix the date bug", None)
        .await
        .expect("commit");
    assert_eq!(CheckoutSnapshot::of(&f.repo), before, "after commit");

    let (other, _) = f.spec(vcs, "Another try").await;
    vcs.create_worktree(&other).await.unwrap();
    write(&other.path, "README.md", "changed and thrown away\n");
    vcs.remove_worktree(&f.repo, &other.path).await.unwrap();
    vcs.delete_branch(&f.repo, &other.branch).await.unwrap();
    assert_eq!(CheckoutSnapshot::of(&f.repo), before, "after reject");
}
