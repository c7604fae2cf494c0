//! A two-attempt task with the real agents: Claude Code (2.1.332) and Codex (0.163.0), each
//! boxed, each against its own scripted model server on 127.0.0.1, both fixing the demo's
//! failing test from one base commit. Both end awaiting approval; `codehands task --json`
//! compares them; `codehands approve` of Claude's attempt commits it and removes Codex's.

use crate::support;

use model_server::{Block, ModelServer, Script, Turn};
use runner_contract::{
    AgentName, AttemptSpec, Runner, SessionId, SessionState, TaskId, TaskOptions,
};
use runner_testkit::runner as suite;
use serde_json::json;
use support::{World, json_lines, ok, run, text, worktree_for};

fn exec(id: &str, cmd: &str) -> Turn {
    Turn::blocks([Block::tool_use(id, "exec_command", json!({ "cmd": cmd }))])
}

/// The demo's fix as Codex's model would send it: `apply_patch` through `exec_command`
/// (as in codex_e2e.rs).
const FIX: &str = "apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: src/date.js\n@@\n-  return `${date.getFullYear()}-${date.getMonth()}-${date.getDate()}`;\n+  return `${date.getFullYear()}-${date.getMonth() + 1}-${date.getDate()}`;\n*** End Patch\nPATCH\n";

fn codex_script() -> Script {
    Script::new([
        exec("call_task_1", "npm test"),
        exec("call_task_2", FIX),
        exec("call_task_3", "npm test"),
        Turn::text("Fixed: the month now starts at one. npm test passes."),
    ])
}

#[tokio::test]
async fn claude_and_codex_attempt_one_task_and_the_pick_keeps_one() {
    let (Some(claude), Some(codex)) = (support::claude(), support::codex()) else {
        return;
    };
    let world = World::demo();
    let (claude_id, codex_id) = (SessionId::new_random(), SessionId::new_random());
    let anthropic = ModelServer::start(runner_fake::demo_repo::script(
        &worktree_for(&world, &claude_id).await,
    ))
    .await
    .unwrap();
    let openai = ModelServer::start(codex_script()).await.unwrap();
    let mut settings = world.settings();
    settings.caller_env.extend([
        ("ANTHROPIC_BASE_URL".into(), anthropic.base_url()),
        ("ANTHROPIC_API_KEY".into(), "sk-ant-dummy-for-tests".into()),
        ("OPENAI_BASE_URL".into(), openai.openai_base_url()),
        ("OPENAI_API_KEY".into(), "sk-dummy-for-codex-tests".into()),
    ]);
    let runner = world.runner_with(settings, |s| {
        s.claude_bin = claude.clone();
        s.codex_bin = codex.clone();
    });
    let attempts = vec![
        AttemptSpec {
            session_id: Some(claude_id),
            ..AttemptSpec::new(AgentName::parse("claude-code").unwrap())
        },
        AttemptSpec {
            // A name Codex has no metadata for: it then offers `exec_command` (CRATES.md).
            model: Some("scripted-model".into()),
            session_id: Some(codex_id),
            ..AttemptSpec::new(AgentName::parse("codex").unwrap())
        },
    ];
    let task_id = TaskId::new_random();
    let started = runner
        .start_task(TaskOptions {
            task_id,
            repo_path: world.repo.clone(),
            prompt: runner_fake::demo_repo::PROMPT.into(),
            attempts,
            budget_usd: None,
            verify: false,
            permissions: Default::default(),
            isolation: Default::default(),
            timeout_ms: None,
            engine: Default::default(),
        })
        .await
        .unwrap();
    for (id, events) in started.attempts {
        let events = suite::collect(events).await;
        suite::assert_well_formed_run(&events, id, 1);
    }
    for id in [claude_id, codex_id] {
        let record = runner.session(&id).await.unwrap();
        assert_eq!(record.state, SessionState::AwaitingApproval, "{record:?}");
        assert_eq!(record.isolation, runner_contract::Isolation::Box);
    }

    // `task --json` compares them, from another process.
    let out = run(world
        .codehands()
        .args(["task", &task_id.to_string(), "--json"]));
    let report = json_lines(&out)[0].clone();
    let attempts = report["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2, "{report}");
    assert_eq!(attempts[0]["agent"], "claude-code");
    assert_eq!(attempts[1]["agent"], "codex");
    assert_eq!(attempts[1]["model"], "scripted-model");
    for attempt in attempts {
        assert_eq!(attempt["state"], "awaiting_approval", "{attempt}");
        assert_eq!(attempt["filesChanged"], json!(["src/date.js"]), "{attempt}");
        let tests: Vec<bool> = attempt["tests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["passed"].as_bool().unwrap())
            .collect();
        assert_eq!(
            tests,
            vec![false, true],
            "npm test failed, then passed: {attempt}"
        );
        assert_eq!(attempt["passing"], true, "{attempt}");
    }
    assert_eq!(
        attempts
            .iter()
            .filter(|a| a["cheapestPassing"] == true)
            .count(),
        1,
        "{report}"
    );

    // Approve Claude's attempt: it is committed, Codex's is removed.
    let claude_record = runner.session(&claude_id).await.unwrap();
    let codex_record = runner.session(&codex_id).await.unwrap();
    let out = run(world.codehands().args([
        "approve",
        &claude_id.to_string(),
        "-m",
        "Fix the month",
        "--json",
    ]));
    let picked = json_lines(&out)[0].clone();
    assert!(
        text(&out.stderr).contains("rejects the other attempts"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        picked["rejected"],
        json!([codex_id.to_string()]),
        "{picked}"
    );
    let approved = runner_contract::ApproveResult {
        branch: picked["branch"].as_str().unwrap().to_owned(),
        commit: picked["commit"].as_str().unwrap().to_owned(),
    };
    support::assert_approved_demo_fix(&world, &claude_record, &approved);
    assert_eq!(
        runner.session(&codex_id).await.unwrap().state,
        SessionState::Rejected
    );
    assert!(
        !codex_record.worktree_path.exists(),
        "Codex's worktree is gone"
    );
    assert!(
        !world.branches().contains(&codex_record.branch),
        "Codex's branch is gone"
    );
    ok(&run(world.codehands().args(["task", &task_id.to_string()])));
}
