//! The first hour of a new user (issue 22): the verify gate, throwing away a stopped
//! session, the question on a real terminal, failures that show their reason, agents found
//! where `cargo xtask install` put them, ids by prefix, the sessions table, and the small
//! conventions of a command line (a closed pipe, logs on stderr, gc, completions).

use crate::support;

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use runner_contract::{
    AgentName, ApproveOptions, ErrorKind, EventBody, Runner, Sandbox, SandboxError,
    SandboxErrorKind, SandboxRequest, SandboxResult, SessionId, SessionState, StartOptions,
};
use support::terminal::OnTerminal;
use support::{World, ok, run, text};

const ID: &str = "3f2a9c1e-0b7d-4c55-9a57-2f0d8e6b1a42";
/// Shares ID's first 8 characters, so its branch and worktree folder too: the two can
/// only both be on record once the first is rejected.
const TWIN: &str = "3f2a9c1e-1111-4c55-9a57-2f0d8e6b1a42";
const OTHER: &str = "7c1d2e3f-0b7d-4c55-9a57-2f0d8e6b1a42";

fn codehands(world: &World, mode: &str) -> Command {
    let mut cmd = world.codehands();
    cmd.env("CODEHANDS_FAKE_MODE", mode)
        .env("CODEHANDS_NO_SPINNER", "1")
        .env("NO_COLOR", "1")
        .current_dir(&world.repo);
    cmd
}

/// `codehands run . --agent fake --then keep --session-id id` on the demo.
fn kept(world: &World, id: &str) {
    kept_in(world, &world.repo, id);
}

/// The same on the repo at `repo`.
fn kept_in(world: &World, repo: &std::path::Path, id: &str) {
    ok(&run(codehands(world, "replay").args([
        "run",
        repo.to_str().unwrap(),
        "--agent",
        "fake",
        "--then",
        "keep",
        "--session-id",
        id,
    ])));
}

fn sessions_json(world: &World) -> Vec<serde_json::Value> {
    let out = ok(&run(codehands(world, "replay").args(["sessions", "--json"])));
    serde_json::from_str::<serde_json::Value>(&out)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// A sandbox that answers one fixed result.
struct FixedSandbox(SandboxResult);

#[async_trait]
impl Sandbox for FixedSandbox {
    async fn available(&self) -> bool {
        true
    }

    async fn run_tests(&self, _request: &SandboxRequest) -> SandboxResult {
        self.0.clone()
    }
}

fn sandbox_result(exit: i64, error: Option<SandboxError>) -> SandboxResult {
    SandboxResult {
        n: 1,
        command: "pnpm test".into(),
        image: "codehands/sandbox-node:22".into(),
        passed: false,
        exit_code: Some(exit),
        timed_out: false,
        out_of_memory: false,
        output: "sh: pnpm: not found".into(),
        duration_ms: 5,
        error,
    }
}

/// Runs the demo with `--verify` against `sandbox` and returns the sandbox's event.
async fn verified_run(world: &World, id: SessionId, sandbox: FixedSandbox) -> EventBody {
    let runner = world
        .fake_runner("replay", 0)
        .with_sandbox(Arc::new(sandbox));
    let mut options = StartOptions::new(
        id,
        &world.repo,
        runner_fake::demo_repo::PROMPT,
        AgentName::parse("fake").unwrap(),
    );
    options.verify = true;
    let events: Vec<_> = runner.start(options).await.unwrap().collect().await;
    assert!(matches!(
        events.last().map(|e| &e.body),
        Some(EventBody::ApprovalRequested(_))
    ));
    let sandboxed = events
        .iter()
        .find(|e| matches!(&e.body, EventBody::TestResult(t) if t.sandboxed))
        .expect("a sandboxed test.result");
    sandboxed.body.clone()
}

#[tokio::test]
async fn a_box_that_could_not_run_the_tests_gates_approve_until_forced() {
    let world = World::demo();
    let id = SessionId::parse(ID).unwrap();
    let unrun = sandbox_result(
        127,
        Some(SandboxError {
            kind: SandboxErrorKind::Unsupported,
            message: "`pnpm` is not in the image".into(),
        }),
    );
    let EventBody::TestResult(t) = verified_run(&world, id, FixedSandbox(unrun)).await else {
        unreachable!()
    };
    assert_eq!(t.could_not_run, Some(SandboxErrorKind::Unsupported));
    assert!(
        t.summary
            .as_deref()
            .unwrap_or_default()
            .starts_with("sandbox.unsupported: "),
        "the kind's own name, not its Debug form: {t:?}"
    );

    // The command line, in another process: refused with why, then forced.
    let refused = run(codehands(&world, "replay").args(["approve", &ID[..8], "-m", "x"]));
    assert!(!refused.status.success());
    let stderr = text(&refused.stderr);
    assert!(
        stderr.contains("could not run `pnpm test`") && stderr.contains("--force"),
        "{stderr}"
    );
    assert!(world.branches().len() == 2, "nothing committed");
    let forced = ok(&run(codehands(&world, "replay").args([
        "approve",
        &ID[..8],
        "-m",
        "x",
        "--force",
    ])));
    assert!(forced.starts_with("approved: "), "{forced}");
}

#[tokio::test]
async fn failing_sandbox_tests_refuse_approve_in_the_library_unless_forced() {
    let world = World::demo();
    let id = SessionId::new_random();
    let EventBody::TestResult(t) =
        verified_run(&world, id, FixedSandbox(sandbox_result(1, None))).await
    else {
        unreachable!()
    };
    assert_eq!((t.passed, t.could_not_run), (false, None));
    let runner = world.fake_runner("replay", 0);
    let refused = runner
        .approve_with(&id, "x", ApproveOptions::default())
        .await
        .unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::VerifyFailed);
    assert!(
        refused
            .message()
            .contains("`pnpm test` failed in the sandbox"),
        "{refused}"
    );
    let refused_by_trait = runner.approve(&id, "x").await.unwrap_err();
    assert_eq!(refused_by_trait.kind(), ErrorKind::VerifyFailed);
    runner
        .approve_with(&id, "x", ApproveOptions { force: true })
        .await
        .unwrap();
    assert_eq!(
        runner.session(&id).await.unwrap().state,
        SessionState::Approved
    );
}

#[tokio::test]
async fn a_stopped_session_is_rejected_keeping_only_a_branch_the_agent_committed_to() {
    let world = World::demo();
    let runner = world.fake_runner("sleep", 0);
    let mut stopped = Vec::new();
    for _ in 0..2 {
        let id = SessionId::new_random();
        let options = StartOptions::new(
            id,
            &world.repo,
            "Fix it.",
            AgentName::parse("fake").unwrap(),
        );
        let mut events = runner.start(options).await.unwrap();
        events.next().await.expect("task.started");
        runner.stop(&id).await.unwrap();
        while events.next().await.is_some() {}
        stopped.push(runner.session(&id).await.unwrap());
    }
    // The agent of the second committed in its worktree before it was stopped.
    let committer = &stopped[1];
    std::fs::write(committer.worktree_path.join("NOTE.md"), "agent work\n").unwrap();
    support::git(&committer.worktree_path, &["add", "NOTE.md"]);
    support::git(
        &committer.worktree_path,
        &[
            "-c",
            "user.name=Agent",
            "-c",
            "user.email=agent@example.invalid",
            "commit",
            "--quiet",
            "-m",
            "agent commit",
        ],
    );

    let first = ok(&run(
        codehands(&world, "replay").args(["reject", &stopped[0].session_id.short()])
    ));
    assert_eq!(
        first.trim(),
        "rejected: the worktree and the branch are gone"
    );
    let second = ok(&run(
        codehands(&world, "replay").args(["reject", &stopped[1].session_id.to_string()])
    ));
    assert!(
        second.contains(&format!("branch {} is kept", committer.branch)),
        "{second}"
    );
    for record in &stopped {
        assert_eq!(
            runner.session(&record.session_id).await.unwrap().state,
            SessionState::Rejected
        );
        assert!(!record.worktree_path.exists());
    }
    assert_eq!(
        world.branches(),
        vec![committer.branch.clone(), "main".to_owned()]
    );
}

const QUESTION: &str = "[a]pprove, [r]eject, [k]eep, or type a follow-up (Enter keeps): ";

#[test]
fn on_a_terminal_enter_keeps_and_says_so() {
    let world = World::demo();
    let mut cmd = codehands(&world, "replay");
    cmd.args(["run", ".", "--agent", "fake", "--session-id", ID]);
    let mut term = OnTerminal::start(&mut cmd, false);
    term.wait_for(QUESTION);
    term.master.write_all(b"\n").unwrap();
    let (code, seen) = term.finish();
    assert_eq!(code, Some(0), "{seen}");
    assert!(
        seen.contains("kept. Decide later: codehands approve 3f2a9c1e"),
        "{seen}"
    );
    assert_eq!(sessions_json(&world)[0]["state"], "awaiting_approval");
}

#[test]
fn ctrl_c_at_the_question_keeps_the_session_and_exits_130() {
    let world = World::demo();
    let mut cmd = codehands(&world, "replay");
    cmd.args(["run", ".", "--agent", "fake", "--session-id", ID]);
    let term = OnTerminal::start(&mut cmd, false);
    term.wait_for(QUESTION);
    let pid = nix::unistd::Pid::from_raw(term.child.id() as i32);
    // What the terminal sends the foreground process on Ctrl-C.
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let (code, seen) = term.finish();
    assert_eq!(code, Some(130), "{seen}");
    assert!(seen.contains("kept (interrupted). Decide later"), "{seen}");
    assert_eq!(sessions_json(&world)[0]["state"], "awaiting_approval");
}

#[test]
fn end_of_input_at_the_question_keeps_and_exits_130() {
    let world = World::demo();
    let mut cmd = codehands(&world, "replay");
    cmd.args(["run", ".", "--agent", "fake", "--session-id", ID]);
    let mut term = OnTerminal::start(&mut cmd, false);
    term.wait_for(QUESTION);
    term.master.write_all(&[4]).unwrap(); // Ctrl-D: end of input on a terminal
    let (code, seen) = term.finish();
    assert_eq!(code, Some(130), "{seen}");
    assert!(seen.contains("kept (interrupted)"), "{seen}");
}

#[test]
fn with_stdout_piped_nobody_is_asked() {
    let world = World::demo();
    let mut cmd = codehands(&world, "replay");
    cmd.args(["run", ".", "--agent", "fake", "--session-id", ID]);
    let mut term = OnTerminal::start(&mut cmd, true);
    let mut stdout = String::new();
    term.child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let (code, seen) = term.finish();
    assert_eq!(code, Some(0), "{seen}");
    assert!(
        !seen.contains("[a]pprove"),
        "no question with `| less`: {seen}"
    );
    assert!(stdout.contains("kept. Decide later"), "{stdout}");
}

#[test]
fn the_fake_agent_refuses_a_repo_that_is_not_the_demos_and_leaves_nothing() {
    let world = World::new(&[("README.md", "hi\n")]);
    let out = run(codehands(&world, "replay").args(["run", ".", "--agent", "fake"]));
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(
            "the fake agent replays the demo's fix: run `codehands demo`, or use a real agent"
        ),
        "{stderr}"
    );
    assert!(sessions_json(&world).is_empty(), "no session record");
    assert_eq!(world.branches(), vec!["main".to_owned()]);
}

#[test]
fn a_failed_run_shows_the_last_lines_of_the_agents_stderr() {
    let world = World::demo();
    let out = run(codehands(&world, "no-result").args(["run", ".", "--agent", "fake"]));
    assert!(!out.status.success());
    let stdout = text(&out.stdout);
    let failed = stdout
        .lines()
        .position(|l| l.contains("task.failed"))
        .unwrap_or_else(|| panic!("{stdout}"));
    let after: Vec<&str> = stdout.lines().skip(failed + 1).collect();
    assert!(
        after.first().is_some_and(|l| l.trim() == "stderr:"),
        "{stdout}"
    );
    assert!(
        after
            .iter()
            .any(|l| l.contains("giving up without a result")),
        "{stdout}"
    );
}

#[test]
fn an_agent_that_cannot_start_is_refused_with_no_record_left() {
    let world = World::demo();
    let out = run(codehands(&world, "replay")
        .env("CLAUDE_BIN", "/nonexistent/claude")
        .args(["run", ".", "--agent", "claude-code"]));
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("/nonexistent/claude") && stderr.contains("not found"),
        "{stderr}"
    );
    assert!(sessions_json(&world).is_empty(), "no session record");
    assert!(world.worktree_dirs().is_empty());
}

#[test]
fn doctor_finds_the_pinned_agent_in_the_cache_or_says_where_to_put_it() {
    let world = World::demo();
    let cache = world.dir.path().join("cache");
    let doctor = |world: &World| {
        let out = ok(&run(codehands(world, "replay")
            .env("PATH", "/usr/bin:/bin")
            .env("CLAUDE_BIN", "")
            .env("CODEHANDS_CACHE", &cache)
            .args(["doctor", "--json"])));
        let findings: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
        findings
            .into_iter()
            .find(|f| f["name"] == "claude-code")
            .unwrap()
    };
    let missing = doctor(&world);
    let pinned = agent_claude::pinned::path_in(&cache);
    let location = missing["location"].as_str().unwrap().to_owned();
    assert!(
        location.contains("cargo xtask install")
            && location.contains(&pinned.display().to_string()),
        "{location}"
    );
    std::fs::create_dir_all(pinned.parent().unwrap()).unwrap();
    std::fs::write(
        &pinned,
        format!(
            "#!/bin/sh\necho '{} (Claude Code)'\n",
            agent_claude::pinned::VERSION
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &pinned,
        <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755),
    )
    .unwrap();
    let found = doctor(&world);
    assert_eq!(found["program"], pinned.display().to_string());
    assert_eq!(found["found"], true);
    assert!(
        found["location"].as_str().unwrap().contains("cache"),
        "{found}"
    );
}

#[test]
fn a_dirty_checkout_is_named_in_one_line_before_the_run() {
    let world = World::demo();
    std::fs::write(world.repo.join("README.md"), "changed\n").unwrap();
    std::fs::write(world.repo.join("new.txt"), "new\n").unwrap();
    let out = run(codehands(&world, "replay").args(["run", ".", "--agent", "fake", "--json"]));
    ok(&out);
    let stderr = text(&out.stderr);
    let notes: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("uncommitted"))
        .collect();
    assert_eq!(notes.len(), 1, "{stderr}");
    assert!(
        notes[0].contains("2 uncommitted files") && notes[0].contains("starts from HEAD"),
        "{stderr}"
    );
    let clean = World::demo();
    let out = run(codehands(&clean, "replay").args(["run", ".", "--agent", "fake", "--json"]));
    assert!(!text(&out.stderr).contains("uncommitted"));
}

#[test]
fn sessions_is_a_table_with_a_header_filters_and_unreadable_records() {
    let world = World::demo();
    kept(&world, ID);
    // A second repo whose folder has the same name: the table must tell them apart.
    let other = world.dir.path().join("other/repo");
    runner_fake::demo_repo::write(&other).unwrap();
    support::git(&other, &["init", "--quiet", "--initial-branch=main"]);
    support::git(&other, &["add", "--all"]);
    support::git(
        &other,
        &[
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@example.invalid",
            "commit",
            "--quiet",
            "-m",
            "base",
        ],
    );
    kept_in(&world, &other, OTHER);
    ok(&run(codehands(&world, "replay").args(["reject", OTHER])));
    // The cost another part of the runner records at the end of a run.
    let record = world.home.sessions_dir().join(format!("{ID}.json"));
    let mut value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    value["costUsd"] = 0.1234.into();
    std::fs::write(&record, serde_json::to_string(&value).unwrap()).unwrap();
    std::fs::write(
        world
            .home
            .sessions_dir()
            .join("00000000-0000-4000-8000-000000000000.json"),
        "{",
    )
    .unwrap();

    let table = ok(&run(codehands(&world, "replay")
        .env("COLUMNS", "72")
        .args(["sessions"])));
    let lines: Vec<&str> = table.lines().collect();
    for word in ["ID", "REPO", "AGENT", "STATE", "AGE", "COST", "BRANCH"] {
        assert!(lines[0].contains(word), "{table}");
    }
    assert!(lines.iter().all(|l| l.chars().count() <= 72), "{table}");
    let mine = lines.iter().find(|l| l.starts_with("3f2a9c1e")).unwrap();
    assert!(
        mine.contains("awaiting_approval") && mine.contains("$0.12"),
        "{table}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("unreadable: 00000000-0000-4000-8000-000000000000.json")),
        "{table}"
    );

    let whole = ok(&run(codehands(&world, "replay").args(["sessions"])));
    let row = |id: &str| {
        whole
            .lines()
            .find(|l| l.starts_with(&id[..8]))
            .unwrap()
            .to_owned()
    };
    assert!(
        row(ID).contains(&world.repo.display().to_string()),
        "{whole}"
    );
    assert!(row(OTHER).contains(&other.display().to_string()), "{whole}");

    let rejected = ok(&run(
        codehands(&world, "replay").args(["sessions", "--state", "rejected", "--json"])
    ));
    let rejected: Vec<serde_json::Value> = serde_json::from_str(&rejected).unwrap();
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0]["sessionId"], OTHER);
    let elsewhere = ok(&run(codehands(&world, "replay").args([
        "sessions",
        "--repo",
        world.dir.path().to_str().unwrap(),
        "--json",
    ])));
    assert_eq!(elsewhere.trim(), "[]");
    let here = ok(&run(
        codehands(&world, "replay").args(["sessions", "--repo", ".", "--json"])
    ));
    assert_eq!(
        serde_json::from_str::<Vec<serde_json::Value>>(&here)
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn ids_are_taken_by_a_unique_prefix_of_eight_or_more() {
    let world = World::demo();
    kept(&world, ID);
    let stat = ok(&run(
        codehands(&world, "replay").args(["diff", "3f2a9c1e", "--stat"])
    ));
    assert!(stat.contains("src/date.js"), "{stat}");
    ok(&run(codehands(&world, "replay").args(["reject", ID])));
    kept(&world, TWIN);
    let ambiguous = run(codehands(&world, "replay").args(["diff", "3f2a9c1e"]));
    assert!(!ambiguous.status.success());
    let stderr = text(&ambiguous.stderr);
    assert!(stderr.contains(ID) && stderr.contains(TWIN), "{stderr}");
    ok(&run(codehands(&world, "replay").args([
        "diff",
        "3F2A9C1E-0B7D",
        "--stat",
    ])));
    let short = run(codehands(&world, "replay").args(["diff", "3f2a9c1"]));
    assert_eq!(short.status.code(), Some(2));
    let none = run(codehands(&world, "replay").args(["reject", "aaaaaaaa"]));
    assert!(text(&none.stderr).contains("no session id starts with aaaaaaaa"));
}

#[test]
fn a_second_stop_is_not_an_error() {
    let world = World::demo();
    let runner = world.fake_runner("sleep", 0);
    let id = SessionId::parse(ID).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let options = StartOptions::new(
            id,
            &world.repo,
            "Fix it.",
            AgentName::parse("fake").unwrap(),
        );
        let mut events = runner.start(options).await.unwrap();
        events.next().await.unwrap();
        runner.stop(&id).await.unwrap();
        while events.next().await.is_some() {}
    });
    let again = ok(&run(codehands(&world, "replay").args(["stop", &ID[..8]])));
    assert!(again.starts_with("already stopped."), "{again}");
}

#[test]
fn diff_after_approve_points_at_the_branch() {
    let world = World::demo();
    kept(&world, ID);
    ok(&run(
        codehands(&world, "replay").args(["approve", ID, "-m", "Fix"])
    ));
    let out = run(codehands(&world, "replay").args(["diff", ID]));
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("is approved") && stderr.contains("git -C") && stderr.contains("-3f2a9c1e"),
        "{stderr}"
    );
}

#[test]
fn a_closed_stdout_ends_quietly() {
    let world = World::demo();
    kept(&world, ID);
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader); // `| head -0`: the reader is gone before anything is written
    let out = codehands(&world, "replay")
        .arg("sessions")
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "");
}

#[test]
fn logs_go_to_stderr_with_verbose_or_rust_log() {
    let world = World::demo();
    let quiet = run(codehands(&world, "replay").args(["sessions"]));
    assert_eq!(text(&quiet.stderr), "");
    let verbose = run(codehands(&world, "replay").args(["-vv", "sessions"]));
    assert!(
        text(&verbose.stderr).contains("DEBUG"),
        "{}",
        text(&verbose.stderr)
    );
    assert_eq!(
        text(&verbose.stdout),
        "no sessions\n",
        "logs stay off stdout"
    );
    let rust_log = run(codehands(&world, "replay")
        .env("RUST_LOG", "debug")
        .args(["sessions"]));
    assert!(text(&rust_log.stderr).contains("DEBUG"));

    // The runner's own log of the run, whatever stderr showed.
    ok(&run(codehands(&world, "replay").args([
        "run",
        ".",
        "--agent",
        "fake",
        "--then",
        "reject",
        "--session-id",
        ID,
    ])));
    let log = std::fs::read_to_string(
        world
            .home
            .run_dir(&SessionId::parse(ID).unwrap())
            .join("codehands.log"),
    )
    .expect("runs/<id>/codehands.log");
    for needle in ["started", "the run ended", "decided"] {
        assert!(log.contains(needle), "{needle}: {log}");
    }
}

#[test]
fn gc_removes_old_kept_sessions_and_dry_run_only_says_so() {
    let world = World::demo();
    kept(&world, ID);
    kept(&world, OTHER);
    let record = world.home.sessions_dir().join(format!("{ID}.json"));
    let mut value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    value["updatedAt"] = "2020-01-01T00:00:00.000Z".into();
    std::fs::write(&record, serde_json::to_string(&value).unwrap()).unwrap();

    let dry = ok(&run(codehands(&world, "replay").args(["gc", "--dry-run"])));
    assert!(dry.contains(&format!("would remove {ID}")), "{dry}");
    assert_eq!(world.worktree_dirs().len(), 2, "a dry run changes nothing");
    let done = ok(&run(codehands(&world, "replay").args([
        "gc",
        "--older-than",
        "14d",
    ])));
    assert!(
        done.contains(&format!("removed {ID}")) && !done.contains(OTHER),
        "{done}"
    );
    assert!(done.contains("worktrees"), "disk use per repo: {done}");
    let states: Vec<(String, String)> = sessions_json(&world)
        .iter()
        .map(|r| {
            (
                r["sessionId"].as_str().unwrap().to_owned(),
                r["state"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(
        states.contains(&(ID.to_owned(), "rejected".to_owned())),
        "{states:?}"
    );
    assert!(
        states.contains(&(OTHER.to_owned(), "awaiting_approval".to_owned())),
        "{states:?}"
    );
    assert_eq!(world.worktree_dirs().len(), 1);
}

#[test]
fn completions_and_the_man_page_come_from_the_commands() {
    let world = World::demo();
    for (shell, needle) in [
        ("bash", "complete -F _codehands"),
        ("zsh", "#compdef codehands"),
        ("fish", "complete -c codehands"),
    ] {
        let script = ok(&run(
            codehands(&world, "replay").args(["completions", shell])
        ));
        assert!(script.contains(needle), "{shell}");
        assert!(
            script.contains("sessions") && script.contains("gc"),
            "{shell}"
        );
    }
    let man = ok(&run(codehands(&world, "replay").arg("__man")));
    assert!(man.contains(".TH codehands"), "{man}");
}

#[test]
fn the_session_lock_is_private_whatever_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    let world = World::demo();
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "umask 022; exec \"$0\" run . --agent fake --then reject --session-id {ID}"
        ))
        .arg(env!("CARGO_BIN_EXE_codehands"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &world.agent_home)
        .env("CODEHANDS_HOME", world.home.root())
        .current_dir(&world.repo)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    ok(&out);
    let lock = world
        .home
        .run_dir(&SessionId::parse(ID).unwrap())
        .join("session.lock");
    let mode = std::fs::metadata(&lock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{}", lock.display());
}
