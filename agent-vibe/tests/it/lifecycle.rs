//! Mistral Vibe under runner-testkit's lifecycle suite: the real `vibe-acp` (pinned by
//! `cargo xtask agents`) on the facade's runner, boxed, talking to the scripted model server
//! (OpenAI Chat Completions, streamed) on 127.0.0.1. Vibe asks before every command, so the
//! scenes run asking and the suite, as the caller, allows each request (`Runner::answer`).
//!
//! The same program also plays any ACP agent (`acp_lifecycle.rs`): agent-acp's `AcpAgent`
//! with the settings a profile would give it, instead of this crate's adapter.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_acp::AcpAgent;
use agent_vibe::MistralVibe;
use codehands::core::RunnerSettings;
use codehands::{FakeAgentSetup, SandboxImages, Setup};
use model_server::{Block, HttpError, ModelServer, Script, Turn};
use runner_contract::{Agent, AgentName, Event, EventBody, Home, SessionId, SessionRecord};
use runner_testkit::lifecycle::{RealAgent, Scene, SeenRequest, Stage};

use crate::scenarios::{bash, edit, write};

/// The key the runner gives Vibe (the server takes any).
const KEY: &str = "sk-dummy-for-the-vibe-lifecycle";

/// The name `vibe-acp` is registered under when it plays any ACP agent.
pub const AS_ACP: &str = "vibe-over-acp";

/// `vibe-acp` as any ACP agent: agent-acp's adapter with the settings a profile would give
/// it (Vibe's own variables, naming the scripted server), none of this crate's.
fn plain_acp(program: &Path, server: &ModelServer) -> AcpAgent {
    let provider = serde_json::json!([{
        "name": "scripted", "api_base": server.openai_base_url(), "api_key_env_var": "OPENAI_API_KEY",
        "api_style": "openai", "backend": "generic",
    }]);
    let model = serde_json::json!([{ "name": "scripted-model", "provider": "scripted", "alias": "scripted" }]);
    AcpAgent::new(AgentName::parse(AS_ACP).unwrap(), program)
        .with_provider_env(vec!["OPENAI_BASE_URL".into(), "OPENAI_API_KEY".into()])
        .with_env(
            [
                ("VIBE_ENABLE_TELEMETRY", "false".to_owned()),
                ("VIBE_ENABLE_UPDATE_CHECKS", "false".to_owned()),
                ("VIBE_ENABLE_AUTO_UPDATE", "false".to_owned()),
                ("VIBE_PROVIDERS", provider.to_string()),
                ("VIBE_MODELS", model.to_string()),
                ("VIBE_ACTIVE_MODEL", "scripted".to_owned()),
            ]
            .map(|(k, v)| (k.to_owned(), v))
            .to_vec(),
        )
}

/// The facade's runner over a temp home with this Vibe, and a caller environment of exactly
/// PATH, a temp HOME, the server's URL, the key and `extra`.
fn runner(
    root: &Path,
    vibe: &Path,
    server: &ModelServer,
    extra: &[(&str, &str)],
) -> codehands::core::LocalRunner {
    let agent_home = root.join("agent-home");
    std::fs::create_dir_all(&agent_home).unwrap();
    let settings = RunnerSettings {
        stop_grace: Duration::from_millis(500),
        caller_env: vec![
            ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
            ("HOME".into(), agent_home.display().to_string()),
            ("OPENAI_BASE_URL".into(), server.openai_base_url()),
            ("OPENAI_API_KEY".into(), KEY.into()),
        ]
        .into_iter()
        .chain(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())))
        .collect(),
        ..RunnerSettings::default()
    };
    codehands::build_runner(Setup {
        home: Home::new(root.join("codehands-home")),
        settings,
        claude_bin: "claude".into(),
        codex_bin: "codex".into(),
        vibe_bin: vibe.to_path_buf(),
        fake: FakeAgentSetup::default(),
        sandbox_images: SandboxImages::Local,
        // The agent's box needs its helper program: codehands' own, built for the test.
        box_helper: Some(
            runner_testkit::cargo::build(env!("CARGO_MANIFEST_DIR"), &["codehands"])
                .join("codehands"),
        ),
    })
    .unwrap()
}

/// The demo's fix in Vibe's tools: the tests (they fail), the edit, the tests (they pass).
fn fix_the_demo() -> Script {
    Script::new([
        Turn::blocks([
            Block::text("Running the tests."),
            bash("call_d1", "npm test"),
        ]),
        Turn::blocks([edit(
            "call_d2",
            "src/date.js",
            "${date.getMonth()}",
            "${date.getMonth() + 1}",
        )]),
        Turn::blocks([bash("call_d3", "npm test")]),
        Turn::text("Fixed: the month now starts at one."),
    ])
}

/// Mistral Vibe on the suite's stage, through this crate's adapter or as any ACP agent.
pub struct VibeOnStage {
    program: PathBuf,
    as_plain_acp: bool,
}

impl VibeOnStage {
    fn agent(&self) -> MistralVibe {
        MistralVibe::new(&self.program, None)
    }
}

#[async_trait::async_trait]
impl RealAgent for VibeOnStage {
    fn name(&self) -> AgentName {
        AgentName::parse(if self.as_plain_acp {
            AS_ACP
        } else {
            agent_vibe::NAME
        })
        .unwrap()
    }

    fn model(&self) -> Option<String> {
        Some("scripted-model".into())
    }

    fn resumes(&self) -> bool {
        self.agent().capabilities().resume
    }

    fn key(&self) -> &str {
        KEY
    }

    /// Vibe asks before every `bash` call (its default mode), and says it can.
    fn asks_permission(&self) -> bool {
        self.agent().capabilities().ask_permission
    }

    async fn stage(&self, scene: Scene, _id: SessionId, extra: &[(&str, &str)]) -> Stage {
        let dir = tempfile::tempdir().unwrap();
        let repo = agent_harness::make_repo(dir.path(), runner_fake::demo_repo::FILES).unwrap();
        let script = match scene {
            Scene::FixTheDemo => fix_the_demo(),
            Scene::Slow { command } => Script::new([
                Turn::blocks([bash("call_s1", &command)]),
                Turn::text("Done after resuming."),
            ]),
            Scene::Unauthorized => Script::new([Turn::Error(HttpError::status(401))]),
            Scene::PrintEnv => Script::new([
                Turn::blocks([bash("call_p1", "env")]),
                Turn::text("Printed."),
            ]),
            Scene::FollowUp { marker } => Script::new([
                Turn::blocks([write("call_f1", "first.txt", "one\n")]),
                Turn::text("Wrote first.txt."),
            ])
            .follow_up(
                &marker,
                Script::new([
                    Turn::blocks([write("call_f2", "second.txt", "two\n")]),
                    Turn::text("Wrote second.txt as asked."),
                ]),
            ),
        };
        let server = Arc::new(ModelServer::start(script).await.unwrap());
        let mut runner = runner(dir.path(), &self.program, &server, extra);
        if self.as_plain_acp {
            runner = runner.with_agent(Arc::new(plain_acp(&self.program, &server)));
        }
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

    /// Vibe's own: both commands were asked about and allowed, the edit is a change of
    /// `src/date.js` relative to the worktree, and Vibe called the scripted server only,
    /// with the key the runner gave it.
    fn check_fix(&self, events: &[Event], _record: &SessionRecord, requests: &[SeenRequest]) {
        let asked = events
            .iter()
            .filter(|e| matches!(e.body, EventBody::PermissionRequested(_)))
            .count();
        assert_eq!(asked, 2, "one request per `npm test`");
        let changed: Vec<&str> = events
            .iter()
            .filter_map(|e| match &e.body {
                EventBody::FileChanged(f) => Some(f.path.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(changed, ["src/date.js"]);
        let bearer = format!("Bearer {KEY}");
        for request in requests {
            assert_eq!(request.path, "/v1/chat/completions");
            assert!(
                request
                    .headers
                    .iter()
                    .any(|(name, value)| name == "authorization" && *value == bearer),
                "the key reached Vibe from the runner's environment"
            );
        }
    }
}

/// The pinned Vibe, through this crate's adapter (`as_plain_acp`: as any ACP agent), or a
/// skip (a failure under CI=true).
pub fn vibe_on_stage_as(as_plain_acp: bool) -> Option<VibeOnStage> {
    let Some(vibe) = crate::scenarios::installed() else {
        runner_testkit::skip("Mistral Vibe is not installed: run `cargo xtask agents`");
        return None;
    };
    Some(VibeOnStage {
        program: vibe.program().to_path_buf(),
        as_plain_acp,
    })
}

fn vibe_on_stage() -> Option<VibeOnStage> {
    vibe_on_stage_as(false)
}

runner_testkit::lifecycle_tests!(vibe_on_stage);
