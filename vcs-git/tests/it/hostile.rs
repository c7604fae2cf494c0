//! The worktree is hostile ground: each attack an agent that can write files could make on
//! approve and diff, against the real adapter and real repos. In every case the person's
//! branch and index are untouched and no program the agent could name is run (each would
//! create a marker file).

use std::path::{Path, PathBuf};

use runner_contract::{ErrorKind, Vcs, WorktreeSpec};
use runner_testkit::expect_error;
use runner_testkit::vcs::fixture::{Fixture, git, git_rev, write};
use vcs_git::GitVcs;

fn git_missing() -> bool {
    if runner_testkit::vcs::fixture::git_available() {
        return false;
    }
    runner_testkit::skip("the git program is not installed");
    true
}

/// A fixture with a worktree made for a session and a change in it.
async fn session(prompt: &str) -> (Fixture, WorktreeSpec) {
    let f = Fixture::new();
    let (spec, _) = f.spec(&GitVcs::new(), prompt).await;
    GitVcs::new().create_worktree(&spec).await.expect("create");
    write(
        &spec.path,
        "src/date.rs",
        "pub fn year() -> u32 {\n    2026\n}\n",
    );
    (f, spec)
}

/// What must not change in the person's repository.
#[derive(Debug, PartialEq)]
struct PersonsRepo {
    main: String,
    head: String,
    index: Vec<u8>,
    status: String,
}

impl PersonsRepo {
    fn of(repo: &Path) -> Self {
        Self {
            main: git_rev(repo, "refs/heads/main"),
            head: std::fs::read_to_string(repo.join(".git/HEAD")).unwrap(),
            index: std::fs::read(repo.join(".git/index")).unwrap(),
            status: git(repo, &["status", "--porcelain"]),
        }
    }
}

/// A shell script that creates `marker` when run, then passes stdin through.
fn marker_program(dir: &Path, name: &str, marker: &Path) -> PathBuf {
    let path = dir.join(name);
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        &path,
        format!("#!/bin/sh\ntouch '{}'\ncat\n", marker.display()),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    path
}

/// A fake git folder that claims to be a worktree of the person's repo on `main`.
fn evil_gitdir(at: &Path, repo: &Path) {
    std::fs::create_dir_all(at).unwrap();
    std::fs::write(at.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(
        at.join("commondir"),
        format!("{}\n", repo.join(".git").display()),
    )
    .unwrap();
    std::fs::write(at.join("gitdir"), format!("{}\n", at.display())).unwrap();
}

async fn refuses_a_rewritten_dot_git(evil: impl Fn(&WorktreeSpec, &Fixture) -> PathBuf) {
    if git_missing() {
        return;
    }
    let vcs = GitVcs::new();
    let (f, spec) = session("Rewrite the git file").await;
    let before = PersonsRepo::of(&f.repo);
    let evil = evil(&spec, &f);
    evil_gitdir(&evil, &f.repo);
    std::fs::write(
        spec.path.join(".git"),
        format!("gitdir: {}\n", evil.display()),
    )
    .unwrap();

    let message = expect_error(vcs.diff(&spec).await, ErrorKind::Vcs, "diff");
    assert!(
        message.contains(".git file") && message.contains("Reject"),
        "says what happened and what to do: {message}"
    );
    let message = expect_error(
        vcs.commit(&spec, "Evil", None).await,
        ErrorKind::Vcs,
        "approve",
    );
    assert!(message.contains(".git file"), "{message}");
    assert_eq!(
        PersonsRepo::of(&f.repo),
        before,
        "the person's repo is untouched"
    );
    assert_eq!(
        git_rev(&f.repo, &format!("refs/heads/{}", spec.branch)),
        spec.base,
        "the session's branch did not move"
    );
    assert!(spec.path.join("src/date.rs").exists(), "the worktree stays");

    // Put back as codehands wrote it, approve works and commits on the session's branch.
    let admin = f
        .repo
        .join(".git/worktrees")
        .join(spec.path.file_name().unwrap());
    std::fs::write(
        spec.path.join(".git"),
        format!("gitdir: {}\n", admin.display()),
    )
    .unwrap();
    let id = vcs.commit(&spec, "Restored", None).await.expect("approve");
    assert_eq!(git_rev(&f.repo, &format!("refs/heads/{}", spec.branch)), id);
    assert_eq!(git_rev(&f.repo, "refs/heads/main"), before.main);
}

#[tokio::test]
async fn a_dot_git_pointing_inside_the_worktree_is_refused() {
    refuses_a_rewritten_dot_git(|spec, _| spec.path.join("evil")).await;
}

#[tokio::test]
async fn a_dot_git_pointing_outside_the_worktree_is_refused() {
    refuses_a_rewritten_dot_git(|_, f| f.dir.path().join("elsewhere/evil")).await;
}

#[tokio::test]
async fn a_dot_git_that_is_a_symlink_or_a_folder_is_refused() {
    if git_missing() {
        return;
    }
    let vcs = GitVcs::new();
    let (f, spec) = session("Replace the git file").await;
    let before = PersonsRepo::of(&f.repo);
    let dot_git = spec.path.join(".git");
    let admin = f
        .repo
        .join(".git/worktrees")
        .join(spec.path.file_name().unwrap());
    std::fs::remove_file(&dot_git).unwrap();
    #[cfg(unix)]
    {
        let file = f.dir.path().join("looks-right");
        std::fs::write(&file, format!("gitdir: {}\n", admin.display())).unwrap();
        std::os::unix::fs::symlink(&file, &dot_git).unwrap();
        expect_error(vcs.diff(&spec).await, ErrorKind::Vcs, "a symlinked .git");
        std::fs::remove_file(&dot_git).unwrap();
    }
    std::fs::create_dir(&dot_git).unwrap();
    expect_error(
        vcs.commit(&spec, "x", None).await,
        ErrorKind::Vcs,
        "a .git folder",
    );
    assert_eq!(PersonsRepo::of(&f.repo), before);
}

#[tokio::test]
async fn approve_commits_on_the_recorded_branch_whatever_head_says() {
    if git_missing() {
        return;
    }
    let vcs = GitVcs::new();
    let (f, spec) = session("Switch branches").await;
    git(&spec.path, &["checkout", "-q", "-b", "agent-choice"]);
    let id = vcs
        .commit(&spec, "On the session's branch", None)
        .await
        .unwrap();
    assert_eq!(git_rev(&f.repo, &format!("refs/heads/{}", spec.branch)), id);
    assert_eq!(
        git_rev(&f.repo, "refs/heads/agent-choice"),
        spec.base,
        "the branch the worktree's HEAD named did not move"
    );
}

#[tokio::test]
async fn filters_named_by_attributes_are_never_run() {
    if git_missing() {
        return;
    }
    let vcs = GitVcs::new();
    let (f, spec) = session("Filter").await;
    let marker = f.dir.path().join("filter-ran");
    let program = marker_program(&f.dir.path().join("bin"), "filter", &marker);
    // The filter is in the shared config (an agent's `git config` in its worktree writes
    // there), the attribute in the worktree.
    git(
        &f.repo,
        &["config", "filter.x.clean", &program.display().to_string()],
    );
    git(
        &f.repo,
        &["config", "filter.x.smudge", &program.display().to_string()],
    );
    git(
        &f.repo,
        &["config", "filter.x.process", &program.display().to_string()],
    );
    git(&f.repo, &["config", "filter.x.required", "true"]);
    write(&spec.path, ".gitattributes", "* filter=x\n");
    write(&spec.path, "new.txt", "raw bytes\r\n");
    // Also a tracked file with new stat data and the same bytes (status would hash it).
    let readme = std::fs::read(spec.path.join("README.md")).unwrap();
    std::fs::remove_file(spec.path.join("README.md")).unwrap();
    std::fs::write(spec.path.join("README.md"), readme).unwrap();
    let before = PersonsRepo::of(&f.repo);

    let diff = vcs.diff(&spec).await.expect("diff");
    assert!(!marker.exists(), "diff ran the filter");
    assert!(diff.patch.contains("+raw bytes\r"), "{}", diff.patch);
    let id = vcs.commit(&spec, "Filtered?", None).await.expect("approve");
    assert!(!marker.exists(), "approve ran the filter");
    assert_eq!(
        git(&f.repo, &["cat-file", "blob", &format!("{id}:new.txt")]),
        "raw bytes\r\n",
        "the bytes are committed as they are"
    );
    let mut after = PersonsRepo::of(&f.repo);
    after.status = before.status.clone(); // git status itself runs the filter; not ours
    assert_eq!(after, before);
    let _ = std::fs::remove_file(&marker);
}

#[tokio::test]
async fn textconv_and_fsmonitor_are_never_run() {
    if git_missing() {
        return;
    }
    let vcs = GitVcs::new();
    let (f, spec) = session("Textconv").await;
    let marker = f.dir.path().join("program-ran");
    let program = marker_program(&f.dir.path().join("bin"), "conv", &marker);
    git(
        &f.repo,
        &["config", "diff.x.textconv", &program.display().to_string()],
    );
    git(
        &f.repo,
        &["config", "core.fsmonitor", &program.display().to_string()],
    );
    write(&spec.path, ".gitattributes", "* diff=x\n");
    write(&spec.path, "docs/guide.md", "rewritten\n");
    write(&spec.path, "old/name.txt", "renamed and changed\n");

    let diff = vcs.diff(&spec).await.expect("diff");
    assert!(diff.patch.contains("+rewritten"), "{}", diff.patch);
    vcs.commit(&spec, "Converted?", None)
        .await
        .expect("approve");
    assert!(!marker.exists(), "a program named by the config ran");
}

#[tokio::test]
async fn hooks_are_never_run() {
    if git_missing() {
        return;
    }
    let vcs = GitVcs::new();
    let (f, spec) = session("Hooks").await;
    let marker = f.dir.path().join("hook-ran");
    let admin = f
        .repo
        .join(".git/worktrees")
        .join(spec.path.file_name().unwrap());
    for dir in [
        f.repo.join(".git/hooks"),
        admin.join("hooks"),
        spec.path.join("hooks"),
    ] {
        for hook in [
            "pre-commit",
            "commit-msg",
            "post-commit",
            "reference-transaction",
            "post-checkout",
            "post-index-change",
        ] {
            marker_program(&dir, hook, &marker);
        }
    }
    git(
        &f.repo,
        &[
            "config",
            "core.hooksPath",
            &spec.path.join("hooks").display().to_string(),
        ],
    );
    vcs.diff(&spec).await.expect("diff");
    let id = vcs.commit(&spec, "Hooked?", None).await.expect("approve");
    assert!(!marker.exists(), "a hook ran");
    assert_eq!(git_rev(&f.repo, &format!("refs/heads/{}", spec.branch)), id);
}

#[tokio::test]
async fn large_files_are_too_large_to_show_but_committed() {
    if git_missing() {
        return;
    }
    let vcs = GitVcs::new().with_large_file_limit(64 * 1024);
    let (f, spec) = session("Large").await;
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    write(&spec.path, "data/big.bin", &big);
    write(&spec.path, "data/big.txt", "line\n".repeat(40_000));

    let diff = vcs.diff(&spec).await.expect("diff");
    let stat = |path: &str| {
        diff.stat
            .files
            .iter()
            .find(|s| s.path == path)
            .unwrap_or_else(|| panic!("{path} in the stat: {:?}", diff.stat))
    };
    assert!(stat("data/big.bin").too_large);
    assert!(stat("data/big.txt").too_large);
    assert!(!stat("src/date.rs").too_large);
    assert!(
        diff.patch.contains("Too large to show (300000 bytes)"),
        "{}",
        diff.patch
    );
    assert!(
        diff.patch.len() < 10_000,
        "the patch holds no large file: {}",
        diff.patch.len()
    );

    let id = vcs
        .commit(&spec, "Large files", None)
        .await
        .expect("approve");
    let committed = std::process::Command::new("git")
        .arg("-C")
        .arg(&f.repo)
        .args(["cat-file", "blob", &format!("{id}:data/big.bin")])
        .output()
        .unwrap();
    assert_eq!(
        committed.stdout, big,
        "approve commits the large file whole"
    );
    assert_eq!(
        git(&f.repo, &["cat-file", "-s", &format!("{id}:data/big.txt")]).trim(),
        "200000"
    );
}

#[tokio::test]
async fn publish_moves_the_branch_only_from_the_tip_it_read() {
    if git_missing() {
        return;
    }
    let vcs = GitVcs::new();
    let (f, spec) = session("Compare and swap").await;
    let prepared = vcs.prepare_commit(&spec, "First", None).await.unwrap();
    assert_eq!(prepared.replaces, spec.base);
    // Someone moves the branch in between: publish refuses and leaves it where it is.
    let other = git(&f.repo, &["rev-parse", "main~1"]).trim().to_owned();
    git(
        &f.repo,
        &["update-ref", &format!("refs/heads/{}", spec.branch), &other],
    );
    expect_error(
        vcs.publish_commit(&spec, &prepared).await,
        ErrorKind::Vcs,
        "a branch that moved",
    );
    assert_eq!(
        git_rev(&f.repo, &format!("refs/heads/{}", spec.branch)),
        other
    );
    // Back where it was, publish works, and publishing again is a no-op.
    git(
        &f.repo,
        &[
            "update-ref",
            &format!("refs/heads/{}", spec.branch),
            &spec.base,
        ],
    );
    vcs.publish_commit(&spec, &prepared).await.unwrap();
    vcs.publish_commit(&spec, &prepared).await.unwrap();
    assert_eq!(
        git_rev(&f.repo, &format!("refs/heads/{}", spec.branch)),
        prepared.commit
    );
    assert_eq!(git_rev(&f.repo, "refs/heads/main"), spec.base);
}

/// Removal deletes a big checkout's folders with several threads: links the agent left there
/// (to a folder outside, in place of a folder, at either level the threads split on) are
/// removed as links, and nothing they point at is touched.
#[tokio::test]
async fn removing_a_worktree_never_follows_a_link_out_of_it() {
    if git_missing() {
        return;
    }
    let (f, spec) = session("links everywhere").await;
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("precious.txt"), "keep me\n").unwrap();
    std::fs::create_dir(outside.path().join("folder")).unwrap();
    std::fs::write(outside.path().join("folder/inner.txt"), "keep me too\n").unwrap();
    // Enough folders that the work is split at the top, one with a link among its subfolders.
    for i in 0..20 {
        write(&spec.path, &format!("d{i}/sub/file.txt"), "x\n");
        std::os::unix::fs::symlink(outside.path(), spec.path.join(format!("d{i}/link"))).unwrap();
    }
    std::os::unix::fs::symlink(outside.path(), spec.path.join("top-link")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("folder"), spec.path.join("d0/sub/deep"))
        .unwrap();
    GitVcs::new()
        .remove_worktree(&f.repo, &spec.path)
        .await
        .expect("remove");
    assert!(!spec.path.exists(), "the worktree is gone");
    assert_eq!(
        std::fs::read_to_string(outside.path().join("precious.txt")).unwrap(),
        "keep me\n"
    );
    assert_eq!(
        std::fs::read_to_string(outside.path().join("folder/inner.txt")).unwrap(),
        "keep me too\n"
    );
}
