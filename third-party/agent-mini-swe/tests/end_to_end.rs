//! The whole flow with this crate's agent registered on the facade's runner, as a
//! third party would: a real git repo in a temp folder, the real mini-swe-agent
//! talking to the scripted model server, then approve (one commit on the
//! session's branch) or reject (nothing left).

mod scenarios;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agent_mini_swe::{MiniSweAgent, NAME};
use codehands::{FakeAgentSetup, SandboxImages, Setup};
use runner_core::testkit::runner as suite;
use runner_core::{
    AgentName, Event, EventBody, Home, LocalRunner, Runner, RunnerSettings, SessionId, StartOptions,
};
use runner_fake::model_server::{Block, ModelServer, Script, Turn};
use scenarios::{FIX_MONTH, SUBMIT, bash};

/// The installed mini-swe-agent, or a skip (a failure under CI=true).
fn mini() -> Option<MiniSweAgent> {
    let found = scenarios::installed();
    if found.is_none() {
        runner_core::testkit::skip(&format!(
            "mini-swe-agent is not installed: run `cargo xtask agents` (or set {})",
            scenarios::DIR_VAR
        ));
    }
    found
}

/// The facade's runner over a temp home, with `agent` registered and a caller
/// environment of exactly PATH, a temp HOME, the server's URL and a dummy key.
fn runner(root: &Path, agent: MiniSweAgent, server: &ModelServer) -> LocalRunner {
    let agent_home = root.join("agent-home");
    std::fs::create_dir_all(&agent_home).unwrap();
    let settings = RunnerSettings {
        stop_grace: Duration::from_millis(500),
        caller_env: vec![
            ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
            ("HOME".into(), agent_home.display().to_string()),
            ("OPENAI_BASE_URL".into(), server.openai_base_url()),
            ("OPENAI_API_KEY".into(), scenarios::DUMMY_KEY.into()),
        ],
        ..RunnerSettings::default()
    };
    let setup = Setup {
        home: Home::new(root.join("codehands-home")),
        settings,
        claude_bin: "claude".into(),
        codex_bin: "codex".into(),
        vibe_bin: "vibe-acp".into(),
        fake: FakeAgentSetup::default(),
        sandbox_images: SandboxImages::Local,
        // The agent's box needs its helper program: codehands' own, built for the test.
        box_helper: Some(
            runner_core::testkit::cargo::build(env!("CARGO_MANIFEST_DIR"), &["codehands"])
                .join("codehands"),
        ),
    };
    codehands::build_runner(setup)
        .unwrap()
        .with_agent(Arc::new(agent))
}

fn options(id: SessionId, repo: &Path) -> StartOptions {
    let mut options = StartOptions::new(
        id,
        repo,
        runner_fake::demo_repo::PROMPT,
        AgentName::parse(NAME).unwrap(),
    );
    options.model = Some("openai/scripted-model".into());
    options
}

/// Runs the tests (they fail), fixes the month, runs them again (they pass), submits.
fn fix_script() -> Script {
    Script::new([
        Turn::blocks([bash("call_e1", "npm test")]),
        Turn::blocks([bash("call_e2", FIX_MONTH)]),
        Turn::blocks([bash("call_e3", "npm test")]),
        Turn::blocks([
            Block::text("Fixed: the month now starts at one."),
            bash("call_e4", SUBMIT),
        ]),
    ])
}

fn git(repo: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn types(events: &[Event]) -> Vec<&'static str> {
    events.iter().map(|e| e.body.type_name()).collect()
}

/// Starts a run of the fix script and returns its events.
async fn fix_run(runner: &LocalRunner, id: SessionId, repo: &Path) -> Vec<Event> {
    let events = suite::collect(runner.start(options(id, repo)).await.unwrap()).await;
    suite::assert_well_formed_run(&events, id, 1);
    events
}

#[tokio::test]
async fn a_fix_by_mini_swe_agent_is_approved_as_one_commit_on_its_branch() {
    let Some(agent) = mini() else { return };
    let dir = tempfile::tempdir().unwrap();
    let repo = agent_harness::make_repo(dir.path(), runner_fake::demo_repo::FILES).unwrap();
    let server = ModelServer::start(fix_script()).await.unwrap();
    let runner = runner(dir.path(), agent, &server);
    let id = SessionId::new_random();
    let events = fix_run(&runner, id, &repo).await;

    let seen = types(&events);
    assert_eq!(seen.first(), Some(&"task.started"), "{events:?}");
    assert_eq!(
        seen[seen.len() - 2..],
        ["task.finished", "approval.requested"],
        "{seen:?}"
    );
    let tests: Vec<bool> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::TestResult(t) => Some(t.passed),
            _ => None,
        })
        .collect();
    assert_eq!(tests, [false, true], "npm test failed, then passed");
    let EventBody::TaskFinished(finished) = &events[events.len() - 2].body else {
        unreachable!()
    };
    assert_eq!(
        finished.result.as_deref(),
        Some("Fixed: the month now starts at one.")
    );
    let diff = finished
        .diff_stat
        .as_ref()
        .expect("the runner adds the diff");
    assert_eq!(diff.files_changed, 1, "{diff:?}");
    let EventBody::ApprovalRequested(approval) = &events[events.len() - 1].body else {
        unreachable!()
    };
    assert_eq!(&approval.diff_stat, diff);

    let record = runner.session(&id).await.unwrap();
    assert_eq!(record.agent.as_str(), NAME);
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {}", scenarios::DUMMY_KEY).as_str()),
        "the key reached mini through the runner's environment"
    );

    let approved = runner.approve(&id, "Fix the month").await.unwrap();
    assert!(
        approved.branch.ends_with(&id.short()),
        "{}",
        approved.branch
    );
    let range = format!("{}..{}", record.base_commit, approved.branch);
    assert_eq!(
        git(&repo, &["rev-list", "--count", &range]).trim(),
        "1",
        "one commit"
    );
    assert_eq!(
        git(&repo, &["rev-parse", "main"]).trim(),
        record.base_commit,
        "main did not move"
    );
    let fixed = git(
        &repo,
        &["show", &format!("{}:src/date.js", approved.branch)],
    );
    assert!(fixed.contains("getMonth() + 1"), "{fixed}");
    assert!(!record.worktree_path.exists(), "the worktree is gone");
}

#[tokio::test]
async fn a_rejected_fix_leaves_nothing() {
    let Some(agent) = mini() else { return };
    let dir = tempfile::tempdir().unwrap();
    let repo = agent_harness::make_repo(dir.path(), runner_fake::demo_repo::FILES).unwrap();
    let server = ModelServer::start(fix_script()).await.unwrap();
    let runner = runner(dir.path(), agent, &server);
    let id = SessionId::new_random();
    let events = fix_run(&runner, id, &repo).await;
    assert_eq!(types(&events).last(), Some(&"approval.requested"));
    let record = runner.session(&id).await.unwrap();
    runner.reject(&id).await.unwrap();
    assert!(!record.worktree_path.exists(), "the worktree is gone");
    let branches = git(&repo, &["branch", "--format=%(refname:short)"]);
    assert_eq!(branches.trim(), "main", "the session's branch is gone");
}
