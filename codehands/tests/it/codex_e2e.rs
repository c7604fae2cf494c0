//! The real runner with the real Codex (0.163.0) talking to the scripted model
//! server (OpenAI Responses) on 127.0.0.1: the lifecycle suite (approve, reject, stop and
//! resume, a 401, the caller's secrets, a follow-up; runner-testkit's `lifecycle`),
//! the command line, and Codex's own sandbox failing.

use crate::support;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use model_server::{Block, HttpError, ModelServer, Script, Turn};
use runner_contract::{
    AgentName, Event, EventBody, Runner, SessionId, SessionRecord, StartOptions,
};
use runner_testkit::lifecycle::{RealAgent, Scene, SeenRequest, Stage};
use runner_testkit::runner as suite;
use serde_json::json;
use support::{World, codex, types};

fn options(world: &World, id: SessionId, prompt: &str) -> StartOptions {
    let mut options =
        StartOptions::new(id, &world.repo, prompt, AgentName::parse("codex").unwrap());
    // A name Codex has no metadata for: it then offers `exec_command` (see CRATES.md).
    options.model = Some(MODEL.into());
    options
}

/// A model name Codex has no metadata for: it then offers `exec_command` (see CRATES.md).
const MODEL: &str = "scripted-model";

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

/// Codex under the lifecycle suite: each scene scripted in OpenAI's Responses API.
struct Codex {
    program: PathBuf,
}

#[async_trait::async_trait]
impl RealAgent for Codex {
    fn name(&self) -> AgentName {
        AgentName::parse("codex").unwrap()
    }

    fn model(&self) -> Option<String> {
        Some(MODEL.into())
    }

    fn resumes(&self) -> bool {
        true
    }

    fn key(&self) -> &str {
        support::CODEX_TEST_KEY
    }

    async fn stage(&self, scene: Scene, _id: SessionId, extra: &[(&str, &str)]) -> Stage {
        let world = World::demo();
        let script = match scene {
            Scene::FixTheDemo => fix_script(),
            Scene::Slow { command } => Script::new([
                exec("call_slow_1", &command),
                exec("call_after_1", FIX),
                Turn::text("Done after resuming."),
            ]),
            Scene::Unauthorized => Script::new([Turn::Error(HttpError::status(401))]),
            Scene::PrintEnv => Script::new([exec("call_env_1", "env"), Turn::text("Printed.")]),
            Scene::FollowUp { marker } => Script::new([
                exec("call_w1", "printf 'one\\n' > first.txt"),
                Turn::text("Wrote first.txt."),
            ])
            .follow_up(
                &marker,
                Script::new([
                    exec("call_w2", "printf 'two\\n' > second.txt"),
                    Turn::text("Wrote second.txt as asked."),
                ]),
            ),
        };
        let server = Arc::new(ModelServer::start(script).await.unwrap());
        let runner = support::codex_runner_with(&world, &self.program, &server, extra);
        support::stage(world, runner, server)
    }

    /// Codex's own: the file change it reports, its thread id kept for resume, and the key
    /// it sent its provider (the adapter's, through `-c` overrides) from the environment.
    fn check_fix(&self, events: &[Event], record: &SessionRecord, requests: &[SeenRequest]) {
        assert!(
            events.iter().any(
                |e| matches!(&e.body, EventBody::FileChanged(f) if f.path.ends_with("src/date.js"))
            ),
            "{:?}",
            types(events)
        );
        let thread = events
            .iter()
            .find_map(|e| match &e.body {
                EventBody::TaskStarted(s) => s.agent_session_id.clone(),
                _ => None,
            })
            .expect("Codex printed its thread id");
        assert_eq!(record.agent_session_id.as_deref(), Some(thread.as_str()));
        let request = requests
            .iter()
            .find(|r| r.path == "/v1/responses")
            .expect("a request to the Responses API");
        let bearer = format!("Bearer {}", support::CODEX_TEST_KEY);
        assert!(
            request
                .headers
                .iter()
                .any(|(name, value)| name == "authorization" && *value == bearer),
            "{:?}",
            request.headers
        );
    }
}

fn codex_agent() -> Option<Codex> {
    Some(Codex { program: codex()? })
}

runner_testkit::lifecycle_tests!(codex_agent);

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
    options.isolation = runner_contract::Isolation::None;
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
