//! The real runner with the real Claude Code (2.1.332) talking to the scripted
//! model server on 127.0.0.1: the lifecycle suite (approve, reject, stop and resume, a 401,
//! the caller's secrets, a follow-up; runner-testkit's `lifecycle`), a hostile prompt,
//! repo memory across runs, and the command line.

use crate::support;

use std::path::PathBuf;
use std::sync::Arc;

use model_server::{Block, HttpError, ModelServer, Script, Turn};
use runner_contract::{AgentName, Runner, SessionId, SessionState, StartOptions};
use runner_testkit::lifecycle::{RealAgent, Scene, Stage};
use runner_testkit::runner as suite;
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

/// Claude Code under the lifecycle suite: each scene scripted in Anthropic's Messages API.
struct ClaudeCode {
    program: PathBuf,
}

fn bash(id: &str, command: &str) -> Turn {
    Turn::blocks([Block::tool_use(
        id,
        "Bash",
        json!({ "command": command, "description": "Run it" }),
    )])
}

fn write(id: &str, path: PathBuf, text: &str) -> Turn {
    Turn::blocks([Block::tool_use(
        id,
        "Write",
        json!({ "file_path": path.display().to_string(), "content": text }),
    )])
}

#[async_trait::async_trait]
impl RealAgent for ClaudeCode {
    fn name(&self) -> AgentName {
        AgentName::parse("claude-code").unwrap()
    }

    fn resumes(&self) -> bool {
        true
    }

    fn key(&self) -> &str {
        support::CLAUDE_TEST_KEY
    }

    async fn stage(&self, scene: Scene, id: SessionId, extra: &[(&str, &str)]) -> Stage {
        let world = if scene == Scene::PrintEnv {
            // `npm test` is a command Claude Code may run; this one prints the environment.
            World::new(&[
                (
                    "package.json",
                    "{ \"name\": \"env\", \"private\": true, \"scripts\": { \"test\": \"node -e \\\"console.log(JSON.stringify(process.env))\\\"\" } }\n",
                ),
                ("README.md", "prints its environment\n"),
            ])
        } else {
            World::demo()
        };
        let wt = worktree_for(&world, &id).await;
        let script = match scene {
            Scene::FixTheDemo => runner_fake::demo_repo::script(&wt),
            Scene::Slow { command } => Script::new([
                bash("toolu_slow_1", &command),
                Turn::text("Done after resuming."),
            ]),
            Scene::Unauthorized => Script::new([Turn::Error(HttpError::status(401))]),
            Scene::PrintEnv => {
                Script::new([bash("toolu_env_1", "npm test"), Turn::text("Printed.")])
            }
            Scene::FollowUp { marker } => Script::new([
                write("toolu_w1", wt.join("first.txt"), "one\n"),
                Turn::text("Wrote first.txt."),
            ])
            .follow_up(
                &marker,
                Script::new([
                    write("toolu_w2", wt.join("second.txt"), "two\n"),
                    Turn::text("Wrote second.txt as asked."),
                ]),
            ),
        };
        let server = Arc::new(ModelServer::start(script).await.unwrap());
        let runner = claude_runner(&world, &self.program, &server, extra);
        support::stage(world, runner, server)
    }
}

fn claude_code() -> Option<ClaudeCode> {
    Some(ClaudeCode {
        program: support::claude()?,
    })
}

runner_testkit::lifecycle_tests!(claude_code);

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
