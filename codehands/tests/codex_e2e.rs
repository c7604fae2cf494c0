//! The real runner with the real Codex (0.163.0) talking to the scripted model
//! server (OpenAI Responses) on 127.0.0.1: approve, reject, stop and resume, and a
//! 401 that fails at the first sign.

mod support;

use std::path::Path;

use futures::StreamExt;
use runner_core::event::{FailureKind, ProviderState};
use runner_core::testkit::{expect_error, runner as suite};
use runner_core::{AgentName, ErrorKind, EventBody, Runner, SessionId, SessionState, StartOptions};
use runner_fake::model_server::{Block, HttpError, ModelServer, Script, Turn};
use serde_json::json;
use support::{World, codex, codex_runner, types};

fn options(world: &World, id: SessionId, prompt: &str) -> StartOptions {
    let mut options =
        StartOptions::new(id, &world.repo, prompt, AgentName::parse("codex").unwrap());
    // A name Codex has no metadata for: it then offers `exec_command` (see CRATES.md).
    options.model = Some("scripted-model".into());
    options
}

fn exec(id: &str, cmd: &str) -> Turn {
    Turn::blocks([Block::tool_use(id, "exec_command", json!({ "cmd": cmd }))])
}

/// The demo's fix as the model would send it: `apply_patch` through `exec_command`.
const FIX: &str = "apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: src/date.js\n@@\n-  return `${date.getFullYear()}-${date.getMonth()}-${date.getDate()}`;\n+  return `${date.getFullYear()}-${date.getMonth() + 1}-${date.getDate()}`;\n*** End Patch\nPATCH\n";

/// Runs the tests (they fail), fixes the month, runs them again (they pass).
fn fix_script() -> Script {
    Script::new([
        exec("call_e2e_1", "npm test"),
        exec("call_e2e_2", FIX),
        exec("call_e2e_3", "npm test"),
        Turn::text("Fixed: the month now starts at one. npm test passes."),
    ])
}

#[tokio::test]
async fn a_change_is_approved_as_one_commit_on_its_branch() {
    let Some(codex) = codex() else { return };
    let world = World::demo();
    let server = ModelServer::start(fix_script()).await.unwrap();
    let runner = codex_runner(&world, &codex, &server);
    let id = SessionId::new_random();
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
    assert!(
        events.iter().any(
            |e| matches!(&e.body, EventBody::FileChanged(f) if f.path.ends_with("src/date.js"))
        )
    );
    // The thread id Codex printed is kept for resume.
    let thread = events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::TaskStarted(s) => s.agent_session_id.clone(),
            _ => None,
        })
        .unwrap();
    let record = runner.session(&id).await.unwrap();
    assert_eq!(record.agent_session_id.as_deref(), Some(thread.as_str()));
    // Codex reached the server through the adapter's provider, with the key from the env.
    let request = server
        .requests()
        .into_iter()
        .find(|r| r.path == "/v1/responses")
        .unwrap();
    assert_eq!(
        request.header("authorization"),
        Some("Bearer sk-dummy-for-codex-tests")
    );
    let approved = runner.approve(&id, "Fix the month").await.unwrap();
    support::assert_approved_demo_fix(&world, &record, &approved);
}

#[tokio::test]
async fn a_rejected_change_leaves_nothing() {
    let Some(codex) = codex() else { return };
    let world = World::demo();
    let server = ModelServer::start(fix_script()).await.unwrap();
    let runner = codex_runner(&world, &codex, &server);
    let id = SessionId::new_random();
    let events = suite::collect(
        runner
            .start(options(&world, id, runner_fake::demo_repo::PROMPT))
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
    runner.reject(&id).await.unwrap();
    assert_eq!(world.branches(), vec!["main".to_owned()]);
    assert!(world.worktree_dirs().is_empty());
    assert_eq!(
        runner.session(&id).await.unwrap().state,
        SessionState::Rejected
    );
}

#[tokio::test]
async fn stopped_then_resumed_continues_the_thread_and_seq() {
    let Some(codex) = codex() else { return };
    let world = World::demo();
    // A sleep no other process on the machine runs (tests of other binaries and worktrees
    // may run at the same time), so the check below sees only this run's command.
    let slow = format!("sleep 30.{}", std::process::id());
    let server = ModelServer::start(Script::new([
        exec("call_slow_1", &slow),
        exec("call_after_1", FIX),
        Turn::text("Done after resuming."),
    ]))
    .await
    .unwrap();
    let runner = codex_runner(&world, &codex, &server);
    let id = SessionId::new_random();
    let mut stream = runner
        .start(options(&world, id, "Wait, then fix the month."))
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
    assert!(
        !support::process_running(&slow),
        "the command died with the run"
    );
    let thread = runner
        .session(&id)
        .await
        .unwrap()
        .agent_session_id
        .expect("the thread id is saved");

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
    assert_eq!(
        types(&resumed).last(),
        Some(&"approval.requested"),
        "{:?}",
        resumed
    );
    let again = resumed.iter().find_map(|e| match &e.body {
        EventBody::TaskStarted(s) => s.agent_session_id.clone(),
        _ => None,
    });
    assert_eq!(
        again.as_deref(),
        Some(thread.as_str()),
        "the resume continues the same thread"
    );
    let requests = server.requests();
    let resumed_request = &requests.last().unwrap().body;
    assert!(
        resumed_request.contains("Please finish."),
        "the resume prompt reached the model"
    );
    assert!(
        resumed_request.contains("Wait, then fix the month."),
        "with the first run's conversation"
    );
    runner
        .approve(&id, "Fix the month after a stop")
        .await
        .unwrap();
}

#[tokio::test]
async fn a_401_fails_at_the_first_retry_and_approve_is_refused() {
    let Some(codex) = codex() else { return };
    let world = World::demo();
    let server = ModelServer::start(Script::new([Turn::Error(HttpError::status(401))]))
        .await
        .unwrap();
    let runner = codex_runner(&world, &codex, &server);
    let id = SessionId::new_random();
    let events = suite::collect(runner.start(options(&world, id, "Fix it")).await.unwrap()).await;
    let statuses: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::ProviderStatus(p) => Some(p.status),
            _ => None,
        })
        .collect();
    assert_eq!(
        statuses,
        vec![ProviderState::AuthExpired],
        "one provider.status, then the run ends: {:?}",
        types(&events)
    );
    match &events.last().unwrap().body {
        EventBody::TaskFailed(f) => assert_eq!(f.reason, FailureKind::AuthFailed, "{}", f.message),
        other => panic!("expected task.failed, got {other:?}"),
    }
    let tries = server
        .requests()
        .iter()
        .filter(|r| r.path == "/v1/responses")
        .count();
    assert!(
        tries < 6,
        "ended before Codex used up its five retries ({tries} requests)"
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
async fn codehands_run_agent_codex_approves_from_the_command_line() {
    let Some(codex) = codex() else { return };
    let world = World::demo();
    let server = ModelServer::start(fix_script()).await.unwrap();
    // A person's HOME has a git identity; without one gix cannot write the worktree's reflog.
    std::fs::write(
        world.agent_home.join(".gitconfig"),
        "[user]\n\tname = Test\n\temail = test@example.invalid\n",
    )
    .unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_codehands"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &world.agent_home)
        .env("CODEHANDS_HOME", world.home.root())
        .env("CODEX_BIN", &codex)
        .env("OPENAI_BASE_URL", server.openai_base_url())
        .env("OPENAI_API_KEY", "sk-dummy-for-codex-tests")
        .env("NO_COLOR", "1")
        .current_dir(&world.repo)
        .args([
            "run",
            ".",
            runner_fake::demo_repo::PROMPT,
            "--agent",
            "codex",
            "--model",
            "scripted-model",
        ])
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
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (events, approval) = lines.split_at(lines.len() - 1);
    let schema_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../schemas/event.schema.json");
    let schema = serde_json::from_str(&std::fs::read_to_string(schema_path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for (i, event) in events.iter().enumerate() {
        let errors: Vec<String> = validator
            .iter_errors(event)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "line {}: {errors:?}", i + 1);
        assert_eq!(event["seq"], (i + 1) as u64);
        assert!(
            !event.to_string().contains("sk-dummy-for-codex-tests"),
            "the key never reaches an event"
        );
    }
    assert_eq!(events.last().unwrap()["type"], "approval.requested");
    let branch = approval[0]["branch"].as_str().unwrap();
    assert_eq!(
        world.git(&["log", "-1", "--format=%s", branch]).trim(),
        "Fix the month"
    );
    assert!(world.git(&["show", branch]).contains("getMonth() + 1"));
}

/// Codex's own sandbox cannot start its helper when its home is under the temp folder (with
/// Debian's bwrap 0.8 first on PATH): every command fails, and only Codex's stderr says so.
/// The run shows it as a warning in Codex's words instead of looking like a clean one.
#[tokio::test]
async fn codexs_own_sandbox_failing_is_a_warning_with_its_words() {
    let Some(codex) = codex() else { return };
    let world = World::demo();
    let server = ModelServer::start(Script::new([
        exec("call_warn_1", "echo hello > hello.txt"),
        Turn::text("Wrote hello.txt."),
    ]))
    .await
    .unwrap();
    let temp_home = tempfile::tempdir().unwrap();
    let mut settings = world.settings();
    settings.caller_env.retain(|(k, _)| k != "HOME");
    settings
        .caller_env
        .push(("HOME".into(), temp_home.path().display().to_string()));
    settings
        .caller_env
        .push(("OPENAI_BASE_URL".into(), server.openai_base_url()));
    settings
        .caller_env
        .push(("OPENAI_API_KEY".into(), "sk-dummy-for-codex-tests".into()));
    let runner = world.runner_with(settings, |s| s.codex_bin = codex.clone());
    let id = SessionId::new_random();
    let mut options = options(&world, id, "Write hello.txt.");
    // Unboxed, with the caller's HOME under /tmp: the setting Codex's helper fails in.
    options.isolation = runner_core::Isolation::None;
    let events = suite::collect(runner.start(options).await.unwrap()).await;
    let warnings: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Message(m) if m.text.starts_with("warning from the agent:") => {
                Some(m.text.as_str())
            }
            _ => None,
        })
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("could not create PATH aliases")),
        "{warnings:?} in {:?}",
        types(&events)
    );
    let finished = events
        .iter()
        .position(|e| e.body.type_name() == "task.finished")
        .unwrap();
    let warned = events
        .iter()
        .position(|e| matches!(&e.body, EventBody::Message(m) if m.text.starts_with("warning from the agent:")))
        .unwrap();
    assert!(warned < finished, "the warning comes before the turn's end");
}
