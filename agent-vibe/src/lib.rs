//! An implementation of `runner_contract::Agent` for Mistral Vibe, run as its Agent Client
//! Protocol server `vibe-acp` through `agent-acp`.
//!
//! What Vibe needs beyond any ACP agent is its settings, all given as its own `VIBE_*`
//! variables (its configuration's environment layer, above its config files), so each run
//! carries its own and nothing is written: a private `VIBE_HOME` (its sessions, which
//! `session/load` reads back for a follow-up, and its logs), telemetry, update checks and
//! notifications off, and, when `OPENAI_BASE_URL` is given, a provider of its generic
//! OpenAI-compatible kind at that address (Vibe calls `POST {base}/chat/completions`,
//! streamed) with `OPENAI_API_KEY`, running `--model` (`default` without one). Without it,
//! Vibe uses its Mistral provider with `MISTRAL_API_KEY`.

pub mod install;
mod refusal;

use std::path::{Path, PathBuf};

use agent_acp::AcpAgent;
use runner_contract::{
    Agent, AgentCapabilities, AgentInput, AgentName, AgentParser, AgentRequest, BoxNeeds,
    Invocation, Result, VersionProbe,
};
use serde_json::json;

/// The name this agent is registered under.
pub const NAME: &str = "mistral-vibe";

/// The variables that send Vibe to an OpenAI-compatible server instead of Mistral's.
pub const BASE_URL_VAR: &str = "OPENAI_BASE_URL";
/// The key for that server.
pub const API_KEY_VAR: &str = "OPENAI_API_KEY";
/// The key for Mistral's own API.
pub const MISTRAL_KEY_VAR: &str = "MISTRAL_API_KEY";

/// Where Vibe keeps its sessions and logs.
pub const HOME_VAR: &str = "VIBE_HOME";
/// Mistral's API, which Vibe reaches without a base URL.
pub const MISTRAL_API_HOST: &str = "api.mistral.ai:443";

/// The name of the provider codehands adds for `OPENAI_BASE_URL`.
const PROVIDER: &str = "codehands-openai";
/// The alias of the model codehands adds for it.
const MODEL_ALIAS: &str = "codehands";

/// Mistral Vibe as a codehands agent.
#[derive(Debug, Clone)]
pub struct MistralVibe {
    acp: AcpAgent,
    home: Option<PathBuf>,
}

impl MistralVibe {
    /// `vibe-acp` at `program`, keeping its sessions and logs in `vibe_home` (made by Vibe,
    /// owner-only, when missing), or, with `None`, in Vibe's own default `~/.vibe` under the
    /// agent's HOME. The adapter reads no configuration: the facade passes both.
    pub fn new(program: impl Into<PathBuf>, vibe_home: Option<PathBuf>) -> Self {
        let program = program.into();
        let acp = AcpAgent::new(
            AgentName::parse(NAME).expect("the built-in name is valid"),
            program.clone(),
        )
        .with_provider_env(
            [MISTRAL_KEY_VAR, BASE_URL_VAR, API_KEY_VAR]
                .map(str::to_owned)
                .to_vec(),
        )
        .with_version_probe(VersionProbe::dash_dash_version(
            program,
            Some(install::VERSION),
        ));
        Self {
            acp,
            home: vibe_home,
        }
    }

    /// The pinned install of `cargo xtask agents` in `folder`.
    pub fn from_install(folder: &Path, vibe_home: Option<PathBuf>) -> Self {
        Self::new(install::program(folder), vibe_home)
    }

    /// The program this agent runs.
    pub fn program(&self) -> &Path {
        self.acp.program()
    }

    /// The `VIBE_*` settings of a run of `request`.
    fn settings(&self, request: &AgentRequest) -> Vec<(String, String)> {
        let mut env: Vec<(&str, String)> = self
            .home
            .iter()
            .map(|home| (HOME_VAR, home.to_string_lossy().into_owned()))
            .collect();
        env.extend([
            ("VIBE_ENABLE_TELEMETRY", "false".to_owned()),
            ("VIBE_ENABLE_UPDATE_CHECKS", "false".to_owned()),
            ("VIBE_ENABLE_AUTO_UPDATE", "false".to_owned()),
            ("VIBE_ENABLE_NOTIFICATIONS", "false".to_owned()),
        ]);
        let base_url = request
            .provider_env
            .iter()
            .find(|(k, _)| k == BASE_URL_VAR)
            .map(|(_, v)| v.clone());
        match base_url {
            Some(base_url) => {
                let model = request.model.as_deref().unwrap_or("default");
                env.push((
                    "VIBE_PROVIDERS",
                    json!([{
                        "name": PROVIDER,
                        "api_base": base_url,
                        "api_key_env_var": API_KEY_VAR,
                        "api_style": "openai",
                        "backend": "generic",
                    }])
                    .to_string(),
                ));
                env.push((
                    "VIBE_MODELS",
                    json!([{ "name": model, "provider": PROVIDER, "alias": MODEL_ALIAS }])
                        .to_string(),
                ));
                env.push(("VIBE_ACTIVE_MODEL", MODEL_ALIAS.to_owned()));
            }
            None => {
                if let Some(model) = &request.model {
                    env.push(("VIBE_ACTIVE_MODEL", model.clone()));
                }
            }
        }
        env.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
    }
}

impl Agent for MistralVibe {
    fn name(&self) -> AgentName {
        self.acp.name()
    }

    fn capabilities(&self) -> AgentCapabilities {
        self.acp.capabilities()
    }

    fn protocol(&self) -> Option<&'static str> {
        self.acp.protocol()
    }

    fn provider_env(&self) -> Vec<String> {
        self.acp.provider_env()
    }

    fn version_probe(&self) -> Option<VersionProbe> {
        self.acp.version_probe()
    }

    fn invocation(&self, request: &AgentRequest) -> Result<Invocation> {
        let mut invocation = self.acp.invocation(request)?;
        invocation.env.extend(self.settings(request));
        Ok(invocation)
    }

    /// ACP's parser, reading Vibe's refused key as one (`refusal.rs`).
    fn parser(&self) -> Box<dyn AgentParser> {
        Box::new(refusal::VibeParser {
            acp: self.acp.parser(),
        })
    }

    fn parser_for(&self, request: &AgentRequest) -> Box<dyn AgentParser> {
        Box::new(refusal::VibeParser {
            acp: self.acp.parser_for(request),
        })
    }

    fn input_line(&self, input: &AgentInput) -> Result<String> {
        self.acp.input_line(input)
    }

    /// In a box: Mistral's API when no base URL is set, and its `VIBE_HOME` in the box's
    /// private home (kept across the session's turns, so a follow-up loads its session).
    fn box_needs(&self) -> BoxNeeds {
        BoxNeeds {
            hosts: vec![MISTRAL_API_HOST.to_owned()],
            base_url_envs: vec![BASE_URL_VAR.to_owned()],
            state_envs: vec![HOME_VAR.to_owned()],
            ..BoxNeeds::default()
        }
    }
}
