//! Files that cross a trust boundary (issue 19): everything under `$CODEHANDS_HOME` is
//! private whatever the umask; a symbolic link planted under the home is never followed;
//! a REPO that is a codehands worktree is refused; the fake agent never writes outside
//! its worktree, through a symbolic link either.

use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use futures::StreamExt;
use runner_contract::{AgentName, EventBody, Runner, SessionId, StartOptions};
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

/// Every path under `root`, not entering `skip` (whose own entry is listed).
fn walk(root: &Path, skip: &[PathBuf], found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        found.push(path.clone());
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() && !skip.contains(&path) {
            walk(&path, skip, found);
        }
    }
}

fn sandbox_ready() -> bool {
    let image = sandbox_docker::LOCAL_DEBIAN_IMAGE;
    let ok = Command::new("docker")
        .args(["image", "inspect", image])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        runner_testkit::skip(&format!(
            "Docker or the image {image} is missing: run `cargo xtask images` (test-<n>.json is not checked)"
        ));
    }
    ok
}

#[test]
fn everything_under_the_home_is_private_whatever_the_umask() {
    let world = World::demo();
    let verify = sandbox_ready();
    let mut script = format!(
        "umask 022; exec \"$0\" run . 'Fix the failing test.' --agent fake --then keep --json --session-id {}",
        new_id()
    );
    if verify {
        script.push_str(" --verify");
    }
    let out = Command::new("sh")
        .arg("-c")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_codehands"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &world.agent_home)
        .env("CODEHANDS_HOME", world.home.root())
        .current_dir(&world.repo)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The worktree is the repo's checkout, with the modes git gives it (the sandbox's
    // non-root user reads it through a bind mount); no other user reaches it, as every
    // folder above it is private.
    let worktrees: Vec<PathBuf> = world.worktree_dirs();
    assert_eq!(worktrees.len(), 1, "the kept session's worktree");
    assert!(
        worktrees[0]
            .parent()
            .unwrap()
            .starts_with(world.home.worktrees_dir())
    );
    // What the agent writes is its own, as the worktree is: its box's private home and temp
    // folder (the folders themselves are private, and so is every folder above them).
    let mut agents_own = worktrees.clone();
    for run in std::fs::read_dir(world.home.root().join("runs"))
        .unwrap()
        .flatten()
    {
        for name in ["home", "tmp"] {
            if let Ok(inner) = std::fs::read_dir(run.path().join(name)) {
                agents_own.extend(inner.flatten().map(|e| e.path()));
            }
        }
    }
    let mut paths = vec![world.home.root().to_owned()];
    walk(world.home.root(), &agents_own, &mut paths);
    let mut wrong = Vec::new();
    let mut seen_files = 0;
    for path in paths.iter().filter(|p| !agents_own.contains(p)) {
        // The run's supervisor may still be tidying its control files away.
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            continue;
        };
        let mode = meta.permissions().mode() & 0o777;
        let want = if meta.is_dir() { 0o700 } else { 0o600 };
        seen_files += usize::from(meta.is_file());
        if mode != want {
            wrong.push(format!("{:o} {}", mode, path.display()));
        }
    }
    assert!(wrong.is_empty(), "not private: {wrong:#?}");
    let names: Vec<String> = paths
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let mut expected = vec!["transcript.jsonl", "notes.md", "profile.json", ".lock"];
    if verify {
        expected.push("test-1.json");
    }
    for name in expected {
        assert!(
            names.iter().any(|n| n == name),
            "{name} was written: {names:?}"
        );
    }
    assert!(seen_files >= 5);
}

/// A run of the demo repo, finished and rejected: the repo key exists from then on.
async fn repo_key(world: &World) -> String {
    let runner = world.fake_runner("replay", 0);
    let id = new_id();
    suite::collect(runner.start(options(world, id)).await.unwrap()).await;
    let key = runner.session(&id).await.unwrap().repo_key;
    runner.reject(&id).await.unwrap();
    key
}

fn symlink(target: &Path, link: &Path) {
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    let _ = std::fs::remove_dir_all(link);
    std::os::unix::fs::symlink(target, link).unwrap();
}

fn assert_refused_link(result: runner_contract::Result<runner_contract::EventStream>, link: &Path) {
    let message = match result {
        Ok(_) => panic!("a start through the link {} was accepted", link.display()),
        Err(e) => e.to_string(),
    };
    assert!(
        message.contains("symbolic link") && message.contains(&link.display().to_string()),
        "the error names the link: {message}"
    );
}

#[tokio::test]
async fn a_planted_worktrees_folder_link_is_refused() {
    let world = World::demo();
    let key = repo_key(&world).await;
    let elsewhere = world.dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let link = world.home.worktrees_dir().join(&key);
    symlink(&elsewhere, &link);
    let runner = world.fake_runner("replay", 0);
    assert_refused_link(runner.start(options(&world, new_id())).await, &link);
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

#[tokio::test]
async fn a_planted_run_folder_link_is_refused() {
    let world = World::demo();
    let elsewhere = world.dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let id = new_id();
    let link = world.home.run_dir(&id);
    symlink(&elsewhere, &link);
    let runner = world.fake_runner("replay", 0);
    assert_refused_link(runner.start(options(&world, id)).await, &link);
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    assert!(
        runner.sessions().await.unwrap().is_empty(),
        "nothing was made"
    );
}

#[tokio::test]
async fn a_planted_transcript_link_is_refused() {
    let world = World::demo();
    let victim = world.dir.path().join("victim.txt");
    std::fs::write(&victim, "the person's file\n").unwrap();
    let id = new_id();
    let link = world.home.run_dir(&id).join("transcript.jsonl");
    symlink(&victim, &link);
    let runner = world.fake_runner("replay", 0);
    assert_refused_link(runner.start(options(&world, id)).await, &link);
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "the person's file\n"
    );
}

#[tokio::test]
async fn a_planted_notes_link_is_not_read() {
    let world = World::demo();
    let key = repo_key(&world).await;
    let secret = world.dir.path().join("secret.txt");
    std::fs::write(&secret, "TOP-SECRET-TEXT of another file\n").unwrap();
    let link = world.home.memory_dir().join(&key).join("notes.md");
    std::fs::remove_file(&link).unwrap();
    symlink(&secret, &link);
    let runner = world.fake_runner("sleep", 0);
    let id = new_id();
    let mut stream = runner.start(options(&world, id)).await.unwrap();
    let mut said = Vec::new();
    while let Some(event) = stream.next().await {
        if let EventBody::Message(m) = &event.body {
            said.push(m.text.clone());
        }
        if matches!(event.body, EventBody::TaskStarted(_)) {
            break;
        }
    }
    let argv = support::agent_argv(&world.home, &id).join(" ");
    assert!(!argv.contains("TOP-SECRET"), "{argv}");
    let mut files = Vec::new();
    walk(&world.home.run_dir(&id), &[], &mut files);
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        assert!(!text.contains("TOP-SECRET"), "{}: {text}", file.display());
    }
    assert!(
        said.iter()
            .any(|m| m.contains("symbolic link") && m.contains("notes.md")),
        "the run says why it has no notes: {said:?}"
    );
    runner.stop(&id).await.unwrap();
    let _: Vec<_> = stream.collect().await;
}

#[tokio::test]
async fn a_repo_inside_a_codehands_worktree_is_refused() {
    let world = World::demo();
    let runner = world.fake_runner("replay", 0);
    let outer = new_id();
    suite::collect(runner.start(options(&world, outer)).await.unwrap()).await;
    let worktree = runner.session(&outer).await.unwrap().worktree_path;
    for repo in [worktree.clone(), worktree.join("src")] {
        let err = runner
            .start(StartOptions::new(
                new_id(),
                &repo,
                "Nested run",
                AgentName::parse("fake").unwrap(),
            ))
            .await
            .err()
            .unwrap_or_else(|| panic!("a run in {} was accepted", repo.display()));
        let message = err.to_string();
        assert!(
            message.contains("codehands worktree") && message.contains(&outer.to_string()),
            "{message}"
        );
        assert_eq!(err.kind(), runner_contract::ErrorKind::InvalidInput);
    }
    assert_eq!(runner.sessions().await.unwrap().len(), 1);
}

#[tokio::test]
async fn the_fake_agent_never_writes_through_a_link_out_of_its_worktree() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("victim.txt"), "old text\n").unwrap();
    let world = World::demo();
    std::os::unix::fs::symlink(outside.path(), world.repo.join("out")).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("victim.txt"),
        world.repo.join("victim.txt"),
    )
    .unwrap();
    world.git(&["add", "out", "victim.txt"]);
    world.git(&[
        "-c",
        "user.name=T",
        "-c",
        "user.email=t@example.invalid",
        "commit",
        "--quiet",
        "-m",
        "links",
    ]);
    let tool = |name: &str, input: &str| {
        format!(
            r#"{{"type":"assistant","message":{{"content":[{{"type":"tool_use","id":"t","name":"{name}","input":{input}}}],"role":"assistant"}},"session_id":"s"}}"#
        )
    };
    for line in [
        tool(
            "Write",
            r#"{"file_path":"/rec/out/pwned.txt","content":"pwned"}"#,
        ),
        tool(
            "Edit",
            r#"{"file_path":"/rec/victim.txt","old_string":"old","new_string":"pwned"}"#,
        ),
        tool(
            "Write",
            r#"{"file_path":"out/relative.txt","content":"pwned"}"#,
        ),
    ] {
        let script = format!(
            "{}\n{line}\n{}\n",
            r#"{"type":"system","subtype":"init","cwd":"/rec","session_id":"s","tools":[],"model":"m"}"#,
            r#"{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s"}"#
        );
        let runner = support::scripted_runner(&world, "replay", &script);
        let events = suite::collect(runner.start(options(&world, new_id())).await.unwrap()).await;
        let failed = events.iter().find_map(|e| match &e.body {
            EventBody::TaskFailed(f) => f.stderr.clone(),
            _ => None,
        });
        // The fake agent refuses a path outside its worktree; in its box the link leads
        // nowhere at all (the folder it names is not there), which fails the write too.
        assert!(
            failed
                .as_deref()
                .is_some_and(|s| s.contains("outside") || s.contains("File exists")),
            "the fake agent refuses {line}: {events:?}"
        );
    }
    let names: Vec<_> = std::fs::read_dir(outside.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("victim.txt")]);
    assert_eq!(
        std::fs::read_to_string(outside.path().join("victim.txt")).unwrap(),
        "old text\n"
    );
}
