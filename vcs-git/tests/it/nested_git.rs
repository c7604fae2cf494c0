//! Git folders an agent plants inside its worktree (`nested.rs`): against real repos and the
//! real `git` program, each plant first makes the person's own `git status` in the worktree
//! run the agent's program (the control), then is taken out and runs nothing; approve never
//! commits a gitlink or a `.git` path of the agent's.

use std::path::{Path, PathBuf};

use runner_contract::{Vcs, WorktreeSpec};
use runner_testkit::vcs::fixture::{Fixture, git, git_output, tree_files, write};
use vcs_git::GitVcs;

fn git_missing() -> bool {
    if runner_testkit::vcs::fixture::git_available() {
        return false;
    }
    runner_testkit::skip("the git program is not installed");
    true
}

/// A session's worktree on `f`'s repo, made as the runner makes it.
async fn session(f: &Fixture, prompt: &str) -> WorktreeSpec {
    let (spec, _) = f.spec(&GitVcs::new(), prompt).await;
    GitVcs::new().create_worktree(&spec).await.expect("create");
    spec
}

/// The worktree's own git folder (its registration), where its index is.
fn admin(f: &Fixture, spec: &WorktreeSpec) -> PathBuf {
    f.repo
        .join(".git/worktrees")
        .join(spec.path.file_name().unwrap())
}

/// A git repo at `at` whose config names a program (`core.fsmonitor`) that makes `marker`,
/// as the agent would plant it.
fn evil_repo(at: &Path, marker: &Path) {
    std::fs::create_dir_all(at).unwrap();
    git(at, &["init", "-q"]);
    git(
        at,
        &[
            "config",
            "core.fsmonitor",
            &format!("touch '{}'; false", marker.display()),
        ],
    );
}

/// Runs the person's `git status` in the worktree; whether the agent's program ran.
fn status_runs_the_agents_program(spec: &WorktreeSpec, marker: &Path) -> bool {
    let _ = std::fs::remove_file(marker);
    git_output(&spec.path, &["status"]);
    git_output(&spec.path, &["diff"]);
    let ran = marker.exists();
    let _ = std::fs::remove_file(marker);
    ran
}

/// The index's submodule entries (mode 160000) in `dir`.
fn gitlinks(dir: &Path) -> Vec<String> {
    git(dir, &["ls-files", "-s"])
        .lines()
        .filter(|l| l.starts_with("160000 "))
        .map(|l| l.split('\t').nth(1).unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn an_agents_gitlink_and_git_folder_are_taken_out_and_status_runs_nothing() {
    if git_missing() {
        return;
    }
    let vcs = GitVcs::new();
    let f = Fixture::new();
    let spec = session(&f, "Plant a submodule").await;
    let marker = f.dir.path().join("agent-program-ran");
    // What the box lets the agent write: files in its worktree, and its worktree's index.
    evil_repo(&spec.path.join("sub"), &marker);
    write(&spec.path, "sub/notes.txt", "the agent's own file\n");
    let cacheinfo = format!("160000,{},sub", spec.base);
    git(
        &spec.path,
        &["update-index", "--add", "--cacheinfo", &cacheinfo],
    );
    assert!(
        status_runs_the_agents_program(&spec, &marker),
        "the control: without the fix the person's git status runs the agent's program"
    );

    let quarantine = f.dir.path().join("runs/x/quarantine/turn-1");
    let found = vcs
        .take_out_nested_git(&spec, &quarantine)
        .await
        .expect("take out");
    let moved_to = quarantine.join("sub/dot-git");
    assert_eq!(found.moved, vec![("sub/.git".to_owned(), moved_to.clone())]);
    assert_eq!(found.gitlinks, vec!["sub".to_owned()]);
    assert!(
        found.removed.is_empty() && found.failed.is_empty(),
        "{found:?}"
    );
    assert!(
        moved_to.join("config").is_file(),
        "kept for the person to look at"
    );
    assert!(!spec.path.join("sub/.git").exists());
    assert!(gitlinks(&spec.path).is_empty(), "the gitlink is dropped");
    assert!(
        !status_runs_the_agents_program(&spec, &marker),
        "the person's git status runs nothing of the agent's"
    );
    let again = vcs.take_out_nested_git(&spec, &quarantine).await.unwrap();
    assert!(again.is_empty(), "nothing is left to take: {again:?}");

    // The agent's other files in that folder are its change like any other.
    let id = vcs.commit(&spec, "Approve", None).await.expect("approve");
    let files = tree_files(&f.repo, &id);
    assert_eq!(
        files.get("sub/notes.txt").map(|(mode, _)| mode.as_str()),
        Some("100644")
    );
    assert!(files.keys().all(|p| !p.contains(".git/")), "{files:?}");
}

#[tokio::test]
async fn a_git_file_at_a_bases_submodule_path_is_taken_out_and_one_into_modules_kept() {
    if git_missing() {
        return;
    }
    let vcs = GitVcs::new();
    let f = Fixture::new();
    // A base with two submodules (gitlinks need no object of theirs in the repository).
    let head = git(&f.repo, &["rev-parse", "HEAD"]).trim().to_owned();
    for path in ["lib/planted", "lib/kept"] {
        let cacheinfo = format!("160000,{head},{path}");
        git(
            &f.repo,
            &["update-index", "--add", "--cacheinfo", &cacheinfo],
        );
    }
    git(&f.repo, &["commit", "-q", "-m", "submodules"]);
    let spec = session(&f, "Submodules").await;
    let marker = f.dir.path().join("agent-program-ran");

    // No index write at all: a `.git` file at a submodule's path, naming a git folder of the
    // agent's (here outside the worktree, as in its private home).
    let evil = f.dir.path().join("agent-home/evil");
    evil_repo(&evil, &marker);
    write(
        &spec.path,
        "lib/planted/.git",
        format!("gitdir: {}\n", evil.join(".git").display()),
    );
    // A submodule's git folder where git keeps it for a linked worktree, made by the person.
    let module = admin(&f, &spec).join("modules/lib/kept");
    std::fs::create_dir_all(&module).unwrap();
    git(&module, &["init", "-q", "--bare"]);
    git(&module, &["config", "core.bare", "false"]);
    let checkout = spec.path.join("lib/kept").display().to_string();
    git(&module, &["config", "core.worktree", &checkout]);
    write(
        &spec.path,
        "lib/kept/.git",
        format!("gitdir: {}\n", module.display()),
    );
    // A link named `.git` deeper down, and a nested repo where no submodule is.
    std::fs::create_dir_all(spec.path.join("docs/deep")).unwrap();
    std::os::unix::fs::symlink(evil.join(".git"), spec.path.join("docs/deep/.git")).unwrap();
    git(&spec.path.join("docs"), &["init", "-q", "scratch"]);
    assert!(
        status_runs_the_agents_program(&spec, &marker),
        "the control: a `.git` at a submodule's path is entered by git status"
    );

    let quarantine = f.dir.path().join("runs/x/quarantine/turn-1");
    let found = vcs.take_out_nested_git(&spec, &quarantine).await.unwrap();
    let taken: Vec<&str> = found.moved.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        taken,
        ["docs/deep/.git", "docs/scratch/.git", "lib/planted/.git"]
    );
    assert!(found.gitlinks.is_empty(), "the base's own submodules stay");
    assert_eq!(gitlinks(&spec.path), ["lib/kept", "lib/planted"]);
    assert!(
        spec.path.join("lib/kept/.git").is_file(),
        "a link into modules/ stays"
    );
    assert!(
        std::fs::symlink_metadata(quarantine.join("docs/deep/dot-git"))
            .unwrap()
            .is_symlink(),
        "a link is moved as a link, never followed"
    );
    assert!(
        evil.join(".git/config").is_file(),
        "what it named is left alone"
    );
    assert!(!status_runs_the_agents_program(&spec, &marker));
}

#[tokio::test]
async fn a_locked_index_is_said_and_the_git_folder_still_taken_out() {
    if git_missing() {
        return;
    }
    let vcs = GitVcs::new();
    let f = Fixture::new();
    let spec = session(&f, "Lock the index").await;
    let marker = f.dir.path().join("agent-program-ran");
    evil_repo(&spec.path.join("sub"), &marker);
    let cacheinfo = format!("160000,{},sub", spec.base);
    git(
        &spec.path,
        &["update-index", "--add", "--cacheinfo", &cacheinfo],
    );
    std::fs::write(admin(&f, &spec).join("index.lock"), "").unwrap();

    let quarantine = f.dir.path().join("quarantine");
    let found = vcs.take_out_nested_git(&spec, &quarantine).await.unwrap();
    assert_eq!(found.moved.len(), 1, "{found:?}");
    assert_eq!(found.failed.len(), 1, "{found:?}");
    assert!(
        found.failed[0].contains("sub") && found.failed[0].contains("index"),
        "names the entry and the index: {}",
        found.failed[0]
    );
    std::fs::remove_file(admin(&f, &spec).join("index.lock")).unwrap();
    assert!(
        !status_runs_the_agents_program(&spec, &marker),
        "with no `.git` there, git does not enter the gitlink"
    );
}

#[tokio::test]
async fn approve_never_commits_a_gitlink_the_agent_made_but_keeps_a_bases_moved_one() {
    if git_missing() {
        return;
    }
    let vcs = GitVcs::new();
    let f = Fixture::new();
    let head = git(&f.repo, &["rev-parse", "HEAD"]).trim().to_owned();
    let first = git(&f.repo, &["rev-parse", "HEAD~1"]).trim().to_owned();
    let cacheinfo = format!("160000,{head},lib/base-sub");
    git(
        &f.repo,
        &["update-index", "--add", "--cacheinfo", &cacheinfo],
    );
    git(&f.repo, &["commit", "-q", "-m", "a submodule"]);
    let spec = session(&f, "Gitlinks at approve").await;
    // Not taken out (as if the turn's end had not run): approve itself leaves them out.
    for info in [
        format!("160000,{head},made-up"),
        format!("160000,{first},lib/base-sub"),
    ] {
        git(&spec.path, &["update-index", "--add", "--cacheinfo", &info]);
    }
    write(
        &spec.path,
        "src/date.rs",
        "pub fn year() -> u32 {\n    2026\n}\n",
    );
    write(&spec.path, "nested/.git", "gitdir: /nowhere\n");
    write(
        &spec.path,
        "nested/file.txt",
        "inside a folder with a .git\n",
    );

    let diff = vcs.diff(&spec).await.expect("diff");
    assert!(!diff.patch.contains("made-up"), "{}", diff.patch);
    let id = vcs.commit(&spec, "Approve", None).await.expect("approve");
    let listing = git(&f.repo, &["ls-tree", "-r", &id]);
    assert!(!listing.contains("made-up"), "{listing}");
    assert!(!listing.contains("nested/.git"), "{listing}");
    assert!(
        listing.contains(&format!("160000 commit {first}\tlib/base-sub")),
        "moving a submodule the base has is a change like any other: {listing}"
    );
    assert!(listing.contains("src/date.rs"), "{listing}");
}
