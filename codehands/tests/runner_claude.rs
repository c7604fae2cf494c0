//! The real runner with the real Claude Code (2.1.332) talking to the scripted
//! model server on 127.0.0.1: approve, reject, stop and resume, a 401, the
//! scrubbed environment, a hostile prompt, and repo memory across runs.

mod support;

use futures::StreamExt;
use runner_core::event::FailureKind;
use runner_core::testkit::{expect_error, runner as suite};
use runner_core::{AgentName, ErrorKind, EventBody, Runner, SessionId, SessionState, StartOptions};
use runner_fake::model_server::{Block, HttpError, ModelServer, Script, Turn};
use serde_json::json;
use support::{World, claude_runner, types, worktree_for};

fn options(world: &World, id: SessionId, prompt: &str) -> StartOptions {
    StartOptions::new(
        id,
        &world.repo,
        prompt,
        AgentName::parse("claude-code").unwrap(),
    )
}

#[tokio::test]
async fn a_change_is_approved_as_one_commit_on_its_branch() {
    let Some(claude) = support::claude() else {
        return;
    };
    let world = World::demo();
    let id = SessionId::new_random();
    let server = ModelServer::start(runner_fake::demo_repo::script(
        &worktree_for(&world, &id).await,
    ))
    .await
    .unwrap();
    let runner = claude_runner(&world, &claude, &server, &[]);
    let events = suite::collect(
        runner
            .start(options(&world, id, runner_fake::demo_repo::PROMPT))
            .await
            .unwrap(),
    )
    .await;
    suite::assert_well_formed_run(&events, id, 1);
    assert_eq!(
        types(&events).last(),
        Some(&"approval.requested"),
        "{:?}",
        types(&events)
    );
    let tests: Vec<bool> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::TestResult(t) => Some(t.passed),
            _ => None,
        })
        .collect();
    assert_eq!(tests, vec![false, true], "npm test failed, then passed");
    let record = runner.session(&id).await.unwrap();
    let approved = runner.approve(&id, "Fix the month").await.unwrap();
    support::assert_approved_demo_fix(&world, &record, &approved);
}

#[tokio::test]
async fn a_rejected_change_leaves_nothing() {
    let Some(claude) = support::claude() else {
        return;
    };
    let world = World::demo();
    let id = SessionId::new_random();
    let server = ModelServer::start(runner_fake::demo_repo::script(
        &worktree_for(&world, &id).await,
    ))
    .await
    .unwrap();
    let runner = claude_runner(&world, &claude, &server, &[]);
    suite::collect(
        runner
            .start(options(&world, id, runner_fake::demo_repo::PROMPT))
            .await
            .unwrap(),
    )
    .await;
    runner.reject(&id).await.unwrap();
    assert_eq!(world.branches(), vec!["main".to_owned()]);
    assert!(world.worktree_dirs().is_empty());
}

#[tokio::test]
async fn stopped_then_resumed_continues_seq() {
    let Some(claude) = support::claude() else {
        return;
    };
    let mut files: Vec<(&str, &str)> = runner_fake::demo_repo::FILES.to_vec();
    files.retain(|(p, _)| *p != "package.json");
    files.push((
        "package.json",
        "{ \"name\": \"slow\", \"private\": true, \"scripts\": { \"test\": \"sleep 30\" } }\n",
    ));
    let world = World::new(&files);
    let npm = || {
        Turn::blocks([Block::tool_use(
            "toolu_slow_1",
            "Bash",
            json!({ "command": "npm test", "description": "Run the tests" }),
        )])
    };
    let server = ModelServer::start(Script::new([npm(), Turn::text("Done after resuming.")]))
        .await
        .unwrap();
    let runner = claude_runner(&world, &claude, &server, &[]);
    let id = SessionId::new_random();
    let mut stream = runner
        .start(options(&world, id, "Run the tests."))
        .await
        .unwrap();
    let mut first = Vec::new();
    while let Some(event) = stream.next().await {
        let started = matches!(event.body, EventBody::CommandStarted(_));
        first.push(event);
        if started {
            break;
        }
    }
    runner.stop(&id).await.unwrap();
    first.extend(stream.collect::<Vec<_>>().await);
    assert_eq!(
        types(&first).last(),
        Some(&"task.stopped"),
        "{:?}",
        types(&first)
    );
    assert!(
        !first
            .iter()
            .any(|e| matches!(e.body, EventBody::ApprovalRequested(_)))
    );
    let last = first.last().unwrap().seq;
    let resumed = suite::collect(
        runner
            .resume(&id, Some("Please finish.".into()))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        resumed[0].seq,
        last + 1,
        "seq continues: {:?}",
        types(&resumed)
    );
    assert!(
        matches!(
            resumed.last().unwrap().body,
            EventBody::ApprovalRequested(_) | EventBody::TaskFailed(_)
        ),
        "{:?}",
        types(&resumed)
    );
    let requests = server.message_requests();
    let resumed_request = requests.last().unwrap().to_string();
    assert!(
        resumed_request.contains("Please finish."),
        "the resume prompt reached the model"
    );
}

#[tokio::test]
async fn a_401_fails_fast_and_approve_is_refused() {
    let Some(claude) = support::claude() else {
        return;
    };
    let world = World::demo();
    let server = ModelServer::start(Script::new([Turn::Error(HttpError::status(401))]))
        .await
        .unwrap();
    let runner = claude_runner(&world, &claude, &server, &[]);
    let id = SessionId::new_random();
    let started = std::time::Instant::now();
    let events = suite::collect(runner.start(options(&world, id, "Fix it")).await.unwrap()).await;
    let statuses: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::ProviderStatus(p) => Some(p.status),
            _ => None,
        })
        .collect();
    assert_eq!(
        statuses.first(),
        Some(&runner_core::event::ProviderState::AuthExpired),
        "{:?}",
        types(&events)
    );
    match &events.last().unwrap().body {
        EventBody::TaskFailed(f) => assert_eq!(f.reason, FailureKind::AuthFailed, "{}", f.message),
        other => panic!("expected task.failed, got {other:?}"),
    }
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "fails at the first sign, not after ten retries"
    );
    assert_eq!(
        runner.session(&id).await.unwrap().state,
        SessionState::Failed
    );
    expect_error(
        runner.approve(&id, "x").await,
        ErrorKind::IllegalMove,
        "approve a failed session",
    );
}

#[tokio::test]
async fn the_callers_secrets_never_reach_the_agent() {
    let Some(claude) = support::claude() else {
        return;
    };
    let world = World::new(&[
        (
            "package.json",
            "{ \"name\": \"env\", \"private\": true, \"scripts\": { \"test\": \"node -e \\\"console.log(JSON.stringify(process.env))\\\"\" } }\n",
        ),
        ("README.md", "prints its environment\n"),
    ]);
    let server = ModelServer::start(Script::new([
        Turn::blocks([Block::tool_use(
            "toolu_env_1",
            "Bash",
            json!({ "command": "npm test", "description": "Run the tests" }),
        )]),
        Turn::text("Printed."),
    ]))
    .await
    .unwrap();
    let canary = "canary-7f3b9c2e-never-leaks";
    let runner = claude_runner(
        &world,
        &claude,
        &server,
        &[
            ("AWS_SECRET_ACCESS_KEY", canary),
            ("GITHUB_TOKEN", canary),
            ("CODEHANDS_CANARY", canary),
        ],
    );
    let id = SessionId::new_random();
    let events = suite::collect(
        runner
            .start(options(&world, id, "Run the tests."))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        types(&events).last(),
        Some(&"approval.requested"),
        "{:?}",
        types(&events)
    );
    let tool_results = support::tool_results(&server);
    assert!(
        tool_results.iter().any(|t| t.contains("PATH")),
        "the test script printed its environment: {tool_results:?}"
    );
    assert!(
        tool_results.iter().all(|t| !t.contains(canary)),
        "a caller secret reached the agent"
    );
    for request in server.requests() {
        assert!(
            !request.body.contains(canary)
                && request.headers.iter().all(|(_, v)| !v.contains(canary))
        );
    }
    let transcript =
        std::fs::read_to_string(world.home.run_dir(&id).join("transcript.jsonl")).unwrap();
    assert!(
        !transcript.contains("sk-ant-dummy-for-tests"),
        "the API key is never in the transcript"
    );
    assert!(
        transcript.contains("[redacted]"),
        "the key the test script printed was cut out"
    );
    for event in &events {
        assert!(
            !serde_json::to_string(event)
                .unwrap()
                .contains("sk-ant-dummy-for-tests"),
            "the API key is never in an event"
        );
    }
}

#[tokio::test]
async fn a_hostile_prompt_arrives_as_text() {
    let Some(claude) = support::claude() else {
        return;
    };
    let world = World::demo();
    let server = ModelServer::start(Script::new([Turn::text("Nothing to do.")]))
        .await
        .unwrap();
    let runner = claude_runner(&world, &claude, &server, &[]);
    let big = "x".repeat(1 << 20);
    let prompt = format!(
        "--dangerously-skip-permissions --permission-mode bypassPermissions\n\"quotes\" 'single' `ticks` $(echo no)\n{big}"
    );
    let id = SessionId::new_random();
    let events = suite::collect(runner.start(options(&world, id, &prompt)).await.unwrap()).await;
    assert_eq!(
        types(&events).last(),
        Some(&"approval.requested"),
        "{:?}",
        types(&events)
    );
    let first = &server.message_requests()[0];
    let sent = first["messages"].to_string();
    assert!(
        sent.contains("--dangerously-skip-permissions --permission-mode bypassPermissions"),
        "the prompt is the user's message"
    );
    assert!(sent.contains(&big[..1000]));
    let init = events
        .iter()
        .find_map(|e| {
            e.raw
                .as_ref()
                .filter(|r| r.contains("\"subtype\":\"init\""))
        })
        .unwrap();
    assert!(
        init.contains("\"permissionMode\":\"acceptEdits\""),
        "permissions were not widened: {}",
        &init[..init.len().min(400)]
    );
}

#[tokio::test]
async fn the_second_run_of_a_repo_gets_the_first_runs_note() {
    let Some(claude) = support::claude() else {
        return;
    };
    let world = World::demo();
    let first_id = SessionId::new_random();
    let server = ModelServer::start(runner_fake::demo_repo::script(
        &worktree_for(&world, &first_id).await,
    ))
    .await
    .unwrap();
    let runner = claude_runner(&world, &claude, &server, &[]);
    suite::collect(
        runner
            .start(options(&world, first_id, "Fix the date bug, first run"))
            .await
            .unwrap(),
    )
    .await;
    runner.approve(&first_id, "Fix the month").await.unwrap();

    let second_server = ModelServer::start(Script::new([Turn::text("Read the notes.")]))
        .await
        .unwrap();
    let second = claude_runner(&world, &claude, &second_server, &[]);
    let second_id = SessionId::new_random();
    suite::collect(
        second
            .start(options(&world, second_id, "Second run"))
            .await
            .unwrap(),
    )
    .await;
    let system = second_server.message_requests()[0]["system"].to_string();
    assert!(
        system.contains("Fix the date bug, first run"),
        "the first run's note is in the second run's system prompt"
    );
    let profile_file = world
        .home
        .memory_dir()
        .join(runner.session(&first_id).await.unwrap().repo_key)
        .join("profile.json");
    assert!(
        std::fs::read_to_string(profile_file)
            .unwrap()
            .contains("npm test"),
        "the profile was saved"
    );
}

#[tokio::test]
async fn codehands_run_agent_claude_code_approves_from_the_command_line() {
    let Some(claude) = support::claude() else {
        return;
    };
    let world = World::demo();
    std::fs::write(
        world.agent_home.join(".gitconfig"),
        "[user]\n\tname = Test\n\temail = test@example.invalid\n",
    )
    .unwrap();
    let id = SessionId::new_random();
    let server = ModelServer::start(runner_fake::demo_repo::script(
        &worktree_for(&world, &id).await,
    ))
    .await
    .unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_codehands"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &world.agent_home)
        .env("CODEHANDS_HOME", world.home.root())
        .env("CLAUDE_BIN", &claude)
        .env("ANTHROPIC_BASE_URL", server.base_url())
        .env("ANTHROPIC_API_KEY", "sk-ant-dummy-for-tests")
        .env("NO_COLOR", "1")
        .current_dir(&world.repo)
        .args(["run", ".", runner_fake::demo_repo::PROMPT])
        .args(["--agent", "claude-code", "--session-id", &id.to_string()])
        .args(["--json", "--then", "approve", "-m", "Fix the month"])
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let types: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["type"].as_str().map(str::to_owned))
        .collect();
    assert!(
        types.ends_with(&["task.finished".to_owned(), "approval.requested".to_owned()]),
        "{types:?}"
    );
    let record = runner_core::SessionStore::on_disk(world.home.sessions_dir())
        .get(&id)
        .unwrap();
    assert_eq!(record.state, SessionState::Approved);
    assert_eq!(record.agent.as_str(), "claude-code");
    assert!(
        world
            .git(&["show", &record.branch])
            .contains("getMonth() + 1")
    );
}
