//! The built-in `plan-code-review` workflow with the real agents, boxed: Claude Code
//! (2.1.332) plans read-only and implements, Codex (0.163.0), of another vendor, reviews
//! read-only; each talks to its own scripted model server on 127.0.0.1. The first review
//! returns one major finding, which goes back to Claude; the second returns none; the
//! session awaits approval, and approve commits the change on a new branch.

use crate::support;

use model_server::{Block, ModelServer, Script, Turn};
use runner_contract::workflow::Severity;
use runner_contract::{EventBody, Isolation, Runner, SessionId, SessionState, WorkflowOptions};
use runner_testkit::runner as suite;
use serde_json::json;
use support::{World, worktree_for};

/// What the first review finds, and the comment that answers it.
const FINDING: &str = "say why the month is shifted by one";
const COMMENT: &str = "months count from 0";

/// Claude's model: a plan (the plan phase's conversation), the demo's fix (the first
/// implement), and a comment added after the finding (the second implement).
fn claude_script(worktree: &std::path::Path) -> Script {
    let file = worktree.join("src/date.js").display().to_string();
    let after_finding = Script::new([
        Turn::blocks([Block::tool_use(
            "toolu_wf_read",
            "Read",
            json!({ "file_path": file }),
        )]),
        Turn::blocks([Block::tool_use(
            "toolu_wf_edit",
            "Edit",
            json!({
                "file_path": file,
                "old_string": "${date.getMonth() + 1}",
                "new_string": format!("${{date.getMonth() + 1 /* {COMMENT} */}}"),
            }),
        )]),
        Turn::text("Added the comment the review asked for."),
    ]);
    Script::new([Turn::text(
        "Plan: formatDate in src/date.js uses getMonth(), which counts from 0; add 1, then run npm test.",
    )])
    // Within one message the follow-up added first wins: the second implement prompt holds
    // both markers.
    .follow_up(FINDING, after_finding)
    .follow_up("Follow this plan:", runner_fake::demo_repo::script(worktree))
}

/// Codex's model: one major finding on the first diff, none once the comment is in it.
fn codex_script() -> Script {
    let finding = json!({ "findings": [{
        "file": "src/date.js", "line": 2, "severity": "major", "text": FINDING,
    }]});
    Script::new([Turn::text(finding.to_string())]).follow_up(
        COMMENT,
        Script::new([Turn::text("```json\n{\"findings\": []}\n```")]),
    )
}

#[tokio::test]
async fn claude_plans_and_implements_codex_reviews_and_the_finding_goes_back_once() {
    let (Some(claude), Some(codex)) = (support::claude(), support::codex()) else {
        return;
    };
    let world = World::demo();
    let id = SessionId::new_random();
    let anthropic = ModelServer::start(claude_script(&worktree_for(&world, &id).await))
        .await
        .unwrap();
    let openai = ModelServer::start(codex_script()).await.unwrap();
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
    let workflow = codehands::workflow::built_in("plan-code-review").unwrap();
    let events = runner
        .run_workflow(WorkflowOptions {
            session_id: id,
            repo_path: world.repo.clone(),
            prompt: runner_fake::demo_repo::PROMPT.into(),
            workflow,
            budget_usd: Some(2.5),
            isolation: Isolation::Box,
            timeout_ms: None,
        })
        .await
        .unwrap();
    let events = suite::collect(events).await;
    support::assert_contiguous(&events);
    let failed: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::TaskFailed(f) => Some(f),
            _ => None,
        })
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");

    // Each phase started and finished, with its agent; the review ran twice.
    let phases: Vec<(String, String, bool)> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::PhaseStarted(p) => Some((p.name.clone(), p.agent.to_string(), p.read_only)),
            _ => None,
        })
        .collect();
    let expected = [
        ("plan", "claude-code", true),
        ("implement", "claude-code", false),
        ("review", "codex", true),
        ("implement", "claude-code", false),
        ("review", "codex", true),
    ]
    .map(|(n, a, r)| (n.to_owned(), a.to_owned(), r));
    assert_eq!(phases, expected);
    let finished = events
        .iter()
        .filter(|e| matches!(e.body, EventBody::PhaseFinished(_)))
        .count();
    assert_eq!(finished, 5);
    let findings: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::ReviewFinding(f) => Some(f.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0].severity, Severity::Major);
    assert!(matches!(
        events.last().map(|e| &e.body),
        Some(EventBody::ApprovalRequested(_))
    ));

    // The finding went back to Claude.
    let requests: Vec<String> = anthropic
        .message_requests()
        .iter()
        .map(|r| r.to_string())
        .collect();
    assert!(
        requests.iter().any(|r| r.contains(FINDING)),
        "the finding reached Claude"
    );
    // The plan turn ran in Claude Code's plan mode (`--permission-mode plan`): the pinned
    // version tells its model so.
    assert!(
        requests[0].contains("Plan mode is active"),
        "the plan phase is read-only"
    );

    // Both reviews ran in Codex's read-only sandbox (the second one resumed): Codex tells
    // its model the mode.
    let reviews: Vec<String> = openai
        .requests()
        .iter()
        .filter_map(|r| r.json().map(|j| j.to_string()))
        .collect();
    assert!(reviews.len() >= 2, "two reviews: {}", reviews.len());
    for review in &reviews {
        assert!(
            review.contains("`sandbox_mode` is `read-only`"),
            "the review is read-only"
        );
    }
    // The session awaits approval; approve commits the fix and the comment on a new branch.
    let record = runner.session(&id).await.unwrap();
    assert_eq!(record.state, SessionState::AwaitingApproval);
    let approved = runner.approve(&id, "Fix the month").await.unwrap();
    assert!(approved.branch.starts_with("codehands/"));
    let fixed = support::git(
        &world.repo,
        &["show", &format!("{}:src/date.js", approved.commit)],
    );
    assert!(
        fixed.contains(&format!("date.getMonth() + 1 /* {COMMENT} */")),
        "{fixed}"
    );
    assert_eq!(
        runner.session(&id).await.unwrap().state,
        SessionState::Approved
    );
}
