//! Best-of-N with limits, with the real agents: Claude Code (2.1.332) and Codex (0.163.0) as
//! two attempts of one task, each boxed against its own scripted model server on 127.0.0.1.
//! Claude fixes the demo's failing test; Codex's model loops forever (the same command, again
//! and again). The task's `timeout` ends Codex's attempt (`task.failed`, reason `timeout`,
//! its change kept for inspection), both changes are tested in the locked test box, the
//! ranking puts Claude's first, `codehands approve` picks it and removes Codex's, and the
//! task's record keeps both verdicts.

use crate::support;

use std::time::{Duration, Instant};

use model_server::{Block, ModelServer, Script, Turn};
use runner_contract::event::FailureKind;
use runner_contract::{
    AgentName, AttemptSpec, EventBody, Runner, SessionId, SessionState, TaskId, TaskOptions,
    VerifyVerdict,
};
use runner_testkit::runner as suite;
use serde_json::json;
use support::{World, json_lines, run, text, worktree_for};

/// Each attempt's wall-clock limit: long enough for Claude's fix, far shorter than forever.
const TIMEOUT_MS: u64 = 25_000;

/// Codex's model, looping: every answer runs one more command that changes a file and gets
/// nowhere, slowly enough that the repeat guard (25 in a row) is not what ends it.
fn looping_codex() -> Script {
    let again = Turn::blocks([Block::tool_use(
        "call_loop",
        "exec_command",
        json!({ "cmd": "echo tick >> notes.txt" }),
    )])
    .delayed(Duration::from_millis(1_500));
    Script {
        after_end: Some(again),
        ..Script::new([])
    }
}

/// Whether Docker and the local Debian image (node, npm) are there (else a skip; a failure
/// under CI).
fn sandbox_ready() -> bool {
    let image = sandbox_docker::LOCAL_DEBIAN_IMAGE;
    let ok = std::process::Command::new("docker")
        .args(["image", "inspect", image])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        runner_testkit::skip(&format!(
            "Docker or the image {image} is missing: run `cargo xtask images`"
        ));
    }
    ok
}

#[tokio::test]
async fn a_looping_attempt_ends_at_its_timeout_and_the_other_is_picked_with_both_verdicts() {
    let (Some(claude), Some(codex)) = (support::claude(), support::codex()) else {
        return;
    };
    if !sandbox_ready() {
        return;
    }
    let world = World::demo();
    let (claude_id, codex_id) = (SessionId::new_random(), SessionId::new_random());
    let anthropic = ModelServer::start(runner_fake::demo_repo::script(
        &worktree_for(&world, &claude_id).await,
    ))
    .await
    .unwrap();
    let openai = ModelServer::start(looping_codex()).await.unwrap();
    let mut settings = world.settings();
    settings.caller_env.extend([
        ("ANTHROPIC_BASE_URL".into(), anthropic.base_url()),
        ("ANTHROPIC_API_KEY".into(), support::CLAUDE_TEST_KEY.into()),
        ("OPENAI_BASE_URL".into(), openai.openai_base_url()),
        ("OPENAI_API_KEY".into(), support::CODEX_TEST_KEY.into()),
    ]);
    let runner = world.runner_with(settings, |s| {
        s.claude_bin = claude.clone();
        s.codex_bin = codex.clone();
    });
    let task_id = TaskId::new_random();
    let started_at = Instant::now();
    let started = runner
        .start_task(TaskOptions {
            task_id,
            repo_path: world.repo.clone(),
            prompt: runner_fake::demo_repo::PROMPT.into(),
            attempts: vec![
                AttemptSpec {
                    session_id: Some(claude_id),
                    ..AttemptSpec::new(AgentName::parse("claude-code").unwrap())
                },
                AttemptSpec {
                    // A name Codex has no metadata for: it then offers `exec_command`.
                    model: Some("scripted-model".into()),
                    session_id: Some(codex_id),
                    ..AttemptSpec::new(AgentName::parse("codex").unwrap())
                },
            ],
            budget_usd: None,
            verify: true,
            permissions: Default::default(),
            isolation: Default::default(),
            timeout_ms: Some(TIMEOUT_MS),
            engine: Default::default(),
        })
        .await
        .unwrap();
    let mut logs = Vec::new();
    for (_, events) in started.attempts {
        logs.push(suite::collect(events).await);
    }
    let took = started_at.elapsed();

    // Claude's attempt finished, tested in the box.
    let claude_record = runner.session(&claude_id).await.unwrap();
    assert_eq!(claude_record.state, SessionState::AwaitingApproval);
    assert_eq!(claude_record.task_id, Some(task_id));
    let boxed = |events: &[runner_contract::Event]| {
        events
            .iter()
            .filter_map(|e| match &e.body {
                EventBody::TestResult(t) if t.sandboxed => Some(t.passed),
                _ => None,
            })
            .collect::<Vec<bool>>()
    };
    assert_eq!(
        boxed(&logs[0]),
        vec![true],
        "Claude's fix passes in the test box"
    );

    // Codex's loop ran until its time limit ended it: failed for `timeout`, change kept.
    let codex_record = runner.session(&codex_id).await.unwrap();
    assert_eq!(codex_record.state, SessionState::Failed, "{codex_record:?}");
    assert!(
        codex_record.kept,
        "the timed-out change is kept: {codex_record:?}"
    );
    let failed = logs[1]
        .iter()
        .find_map(|e| match &e.body {
            EventBody::TaskFailed(f) => Some(f.clone()),
            _ => None,
        })
        .expect("Codex's attempt failed");
    assert_eq!(failed.reason, FailureKind::Timeout, "{failed:?}");
    assert!(failed.message.contains("time limit of 25s"), "{failed:?}");
    assert!(
        took >= Duration::from_millis(TIMEOUT_MS),
        "ended at its limit, not before: {took:?}"
    );
    let loops = openai
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path.contains("/responses"))
        .count();
    assert!(loops >= 4, "the model looped: {loops} requests");
    let notes = std::fs::read_to_string(codex_record.worktree_path.join("notes.txt")).unwrap();
    assert!(
        notes.lines().count() >= 3,
        "its change is in its worktree: {notes:?}"
    );
    assert_eq!(
        boxed(&logs[1]),
        vec![false],
        "its change is tested in the box too"
    );

    // `task --json` from another process: both verdicts, the ranking and why.
    let out = run(world
        .codehands()
        .args(["task", &task_id.to_string(), "--json"]));
    let report = json_lines(&out)[0].clone();
    let attempts = report["attempts"].as_array().unwrap();
    assert_eq!(attempts[0]["verdict"]["outcome"], "passed", "{report}");
    assert_eq!(attempts[0]["verdict"]["command"], "npm test", "{report}");
    assert_eq!(attempts[1]["verdict"]["outcome"], "failed", "{report}");
    assert_eq!(attempts[0]["rank"], 1, "{report}");
    assert_eq!(attempts[1]["rank"], 2, "{report}");
    assert_eq!(report["best"], claude_id.to_string(), "{report}");
    let why = attempts[1]["why"].as_str().unwrap();
    assert!(why.contains("fails in the test box"), "{why}");
    let out = run(world.codehands().args(["task", &task_id.to_string()]));
    let table = text(&out.stdout);
    assert!(
        table.contains("notes.txt") && table.contains("src/date.js"),
        "{table}"
    );
    assert!(table.contains("* best: attempt 1"), "{table}");
    // `diff TASK` shows each attempt against the base, the kept one too.
    let out = run(world
        .codehands()
        .args(["diff", &task_id.to_string(), "--stat"]));
    let diffs = text(&out.stdout);
    assert!(diffs.contains("== attempt 2 (codex"), "{diffs}");
    assert!(diffs.contains("notes.txt"), "{diffs}");

    // The pick approves Claude's and removes Codex's kept change.
    let out = run(world.codehands().args([
        "approve",
        &claude_id.to_string(),
        "-m",
        "Fix the month",
        "--json",
    ]));
    let picked = json_lines(&out)[0].clone();
    assert_eq!(
        picked["rejected"],
        json!([codex_id.to_string()]),
        "{picked}"
    );
    assert_eq!(
        runner.session(&codex_id).await.unwrap().state,
        SessionState::Rejected
    );
    assert!(
        !codex_record.worktree_path.exists(),
        "Codex's worktree is gone"
    );
    assert!(!world.branches().contains(&codex_record.branch));

    // The task's record keeps both verdicts from the test box.
    let record = runner.task(&task_id).await.unwrap();
    let verdicts: Vec<Option<VerifyVerdict>> = record
        .attempts
        .iter()
        .map(|a| a.verdict.as_ref().map(|v| v.outcome))
        .collect();
    assert_eq!(
        verdicts,
        vec![Some(VerifyVerdict::Passed), Some(VerifyVerdict::Failed)]
    );
}
