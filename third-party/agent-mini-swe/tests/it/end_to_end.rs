//! The whole flow with this crate's agent registered on the facade's runner, as a
//! third party would: a real git repo in a temp folder, the real mini-swe-agent
//! talking to the scripted model server, through runner-testkit's lifecycle suite
//! (`lifecycle`: approve, reject, a stop (and no resume: mini cannot), a 401, the
//! caller's secrets, and a follow-up refused).

use crate::scenarios;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agent_mini_swe::{MiniSweAgent, NAME};
use codehands::core::{LocalRunner, RunnerSettings};
use codehands::{FakeAgentSetup, SandboxImages, Setup};
use model_server::{Block, HttpError, ModelServer, Script, Turn};
use runner_contract::{AgentName, Event, EventBody, Home, SessionId, SessionRecord};
use runner_testkit::lifecycle::{RealAgent, Scene, SeenRequest, Stage};
use scenarios::{FIX_MONTH, SUBMIT, bash};

/// The installed mini-swe-agent, or a skip (a failure under CI=true).
fn mini() -> Option<MiniSweAgent> {
    let found = scenarios::installed();
    if found.is_none() {
        runner_testkit::skip(&format!(
            "mini-swe-agent is not installed: run `cargo xtask agents` (or set {})",
            scenarios::DIR_VAR
        ));
    }
    found
}

/// The facade's runner over a temp home, with `agent` registered and a caller
/// environment of exactly PATH, a temp HOME, the server's URL, a dummy key and `extra`.
fn runner(
    root: &Path,
    agent: MiniSweAgent,
    server: &ModelServer,
    extra: &[(&str, &str)],
) -> LocalRunner {
    let agent_home = root.join("agent-home");
    std::fs::create_dir_all(&agent_home).unwrap();
    let settings = RunnerSettings {
        stop_grace: Duration::from_millis(500),
        caller_env: vec![
            ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
            ("HOME".into(), agent_home.display().to_string()),
            ("OPENAI_BASE_URL".into(), server.openai_base_url()),
            ("OPENAI_API_KEY".into(), scenarios::DUMMY_KEY.into()),
        ]
        .into_iter()
        .chain(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())))
        .collect(),
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
            runner_testkit::cargo::build(env!("CARGO_MANIFEST_DIR"), &["codehands"])
                .join("codehands"),
        ),
    };
    codehands::build_runner(setup)
        .unwrap()
        .with_agent(Arc::new(agent))
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

/// mini-swe-agent under the lifecycle suite: each scene scripted in OpenAI's Chat
/// Completions, every step a call of its one tool, `bash`.
struct MiniOnStage {
    agent: MiniSweAgent,
}

#[async_trait::async_trait]
impl RealAgent for MiniOnStage {
    fn name(&self) -> AgentName {
        AgentName::parse(NAME).unwrap()
    }

    fn model(&self) -> Option<String> {
        Some("openai/scripted-model".into())
    }

    fn resumes(&self) -> bool {
        false
    }

    fn key(&self) -> &str {
        scenarios::DUMMY_KEY
    }

    async fn stage(&self, scene: Scene, _id: SessionId, extra: &[(&str, &str)]) -> Stage {
        let dir = tempfile::tempdir().unwrap();
        let repo = agent_harness::make_repo(dir.path(), runner_fake::demo_repo::FILES).unwrap();
        let script = match scene {
            Scene::FixTheDemo | Scene::FollowUp { .. } => fix_script(),
            Scene::Slow { command } => Script::new([
                Turn::blocks([bash("call_slow_1", &command)]),
                Turn::blocks([Block::text("Done."), bash("call_slow_2", SUBMIT)]),
            ]),
            Scene::Unauthorized => Script::new([Turn::Error(HttpError::status(401))]),
            Scene::PrintEnv => Script::new([
                Turn::blocks([bash("call_env_1", "env")]),
                Turn::blocks([Block::text("Printed."), bash("call_env_2", SUBMIT)]),
            ]),
        };
        let server = Arc::new(ModelServer::start(script).await.unwrap());
        let runner = runner(dir.path(), self.agent.clone(), &server, extra);
        let seen = server.clone();
        Stage {
            runner: Box::new(runner),
            repo,
            home: Home::new(dir.path().join("codehands-home")),
            requests: Box::new(move || {
                seen.requests()
                    .into_iter()
                    .map(|r| SeenRequest {
                        path: r.path,
                        headers: r.headers,
                        body: r.body,
                    })
                    .collect()
            }),
            keep: Box::new((dir, server)),
        }
    }

    /// mini's own: its result is its last message, one file changed, and the key reached
    /// its provider (through litellm) from the runner's environment.
    fn check_fix(&self, events: &[Event], _record: &SessionRecord, requests: &[SeenRequest]) {
        let finished = events
            .iter()
            .find_map(|e| match &e.body {
                EventBody::TaskFinished(f) => Some(f),
                _ => None,
            })
            .expect("task.finished");
        assert_eq!(
            finished.result.as_deref(),
            Some("Fixed: the month now starts at one.")
        );
        let diff = finished
            .diff_stat
            .as_ref()
            .expect("the runner adds the diff");
        assert_eq!(diff.files_changed, 1, "{diff:?}");
        let request = &requests[0];
        assert_eq!(request.path, "/v1/chat/completions");
        let bearer = format!("Bearer {}", scenarios::DUMMY_KEY);
        assert!(
            request
                .headers
                .iter()
                .any(|(name, value)| name == "authorization" && *value == bearer),
            "the key reached mini through the runner's environment"
        );
    }
}

fn mini_on_stage() -> Option<MiniOnStage> {
    Some(MiniOnStage { agent: mini()? })
}

runner_testkit::lifecycle_tests!(mini_on_stage);
