//! The agents of this build, and the fake agent: Claude Code's adapter pointed
//! at a program that replays a recording instead of calling a model.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

use runner_contract::{
    Agent, AgentCapabilities, AgentName, AgentParser, AgentRequest, Invocation, Result,
    VersionProbe,
};

use crate::Setup;

/// The fake agent's name.
pub const FAKE_AGENT: &str = "fake";

/// The first argument that turns the `codehands` binary into the fake agent program.
pub const FAKE_AGENT_ARG: &str = "__fake-agent";

/// How the fake agent runs.
#[derive(Debug, Clone, Default)]
pub struct FakeAgentSetup {
    /// The program that plays the fake agent: the `codehands` binary (it does when
    /// its first argument is `__fake-agent`). Defaults to this process's executable.
    pub program: Option<PathBuf>,
    /// `CODEHANDS_FAKE_MODE` for the program (`replay` by default).
    pub mode: Option<String>,
    /// A recording to replay instead of the embedded one.
    pub script: Option<PathBuf>,
    /// A pause between lines, in milliseconds.
    pub delay_ms: Option<u64>,
}

impl FakeAgentSetup {
    /// From `CODEHANDS_FAKE_MODE`, `CODEHANDS_FAKE_SCRIPT` and `CODEHANDS_FAKE_DELAY_MS`
    /// (for tests and demos of the command line; the fake agent's own environment is
    /// still built from scratch and gets only these three, from here).
    pub fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        Self {
            program: None,
            mode: var("CODEHANDS_FAKE_MODE"),
            script: var("CODEHANDS_FAKE_SCRIPT").map(PathBuf::from),
            delay_ms: var("CODEHANDS_FAKE_DELAY_MS").and_then(|v| v.parse().ok()),
        }
    }
}

/// The built-in agents by name, with the cargo feature that brings each: the one list of
/// them, used to say "… is not in this build" for a name left out.
const BUILT_IN: &[(&str, &str)] = &[
    ("claude-code", "claude"),
    ("codex", "codex"),
    ("mistral-vibe", "vibe"),
    (FAKE_AGENT, "fake"),
];

/// The feature that brings the built-in agent `name`, if it is one.
pub fn feature_of(name: &str) -> Option<&'static str> {
    BUILT_IN.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// Every built-in agent of this build, ready for a registry.
#[allow(clippy::vec_init_then_push)] // which pushes happen depends on the features
pub fn built_in(setup: &Setup) -> Vec<Arc<dyn Agent>> {
    let mut agents: Vec<Arc<dyn Agent>> = Vec::new();
    #[cfg(feature = "claude")]
    agents.push(Arc::new(agent_claude::ClaudeCode::with_program(
        &setup.claude_bin,
    )));
    #[cfg(feature = "codex")]
    agents.push(Arc::new(agent_codex::Codex::with_program(&setup.codex_bin)));
    #[cfg(feature = "vibe")]
    agents.push(Arc::new(agent_vibe::MistralVibe::new(
        &setup.vibe_bin,
        Some(vibe_home(&setup.home)),
    )));
    #[cfg(feature = "fake")]
    agents.push(Arc::new(FakeAgent::new(setup.fake.clone())));
    let _ = setup;
    agents
}

/// Mistral Vibe's own home (`VIBE_HOME`: its sessions, which a follow-up loads, and its
/// logs), private to this codehands home: `agent-homes/mistral-vibe/`. Vibe makes it,
/// owner-only, at its first run; `agent-homes/` is made here, so that it is private too.
#[cfg(feature = "vibe")]
pub fn vibe_home(home: &runner_contract::Home) -> PathBuf {
    let folder = home.root().join("agent-homes");
    // A home that cannot be written fails the run later, with the store's own error.
    let _ = home.private().ensure_dir(&folder);
    folder.join(agent_vibe::NAME)
}

/// `--agent fake`: Claude Code's arguments and parser, run against the fake agent program.
#[cfg(feature = "fake")]
struct FakeAgent {
    inner: agent_claude::ClaudeCode,
    setup: FakeAgentSetup,
}

#[cfg(feature = "fake")]
impl FakeAgent {
    fn new(setup: FakeAgentSetup) -> Self {
        let program = setup
            .program
            .clone()
            .or_else(|| std::env::current_exe().ok())
            .unwrap_or_else(|| "codehands".into());
        Self {
            inner: agent_claude::ClaudeCode::with_program(program),
            setup,
        }
    }
}

#[cfg(feature = "fake")]
impl Agent for FakeAgent {
    fn name(&self) -> AgentName {
        AgentName::parse(FAKE_AGENT).expect("the built-in name is valid")
    }

    fn version_probe(&self) -> Option<VersionProbe> {
        // The fake agent is this very program.
        Some(VersionProbe {
            program: self.inner.program().to_path_buf(),
            args: vec!["--version".into()],
            tested: Some(env!("CARGO_PKG_VERSION").to_owned()),
        })
    }

    /// A replay takes no input while it runs: it resumes as Claude Code does, and no more.
    fn capabilities(&self) -> AgentCapabilities {
        AgentCapabilities {
            steer: false,
            interrupt: false,
            ask_permission: false,
            ..self.inner.capabilities()
        }
    }

    /// The embedded recording edits the demo's `src/date.js`: on another repo its replay
    /// would fail half way, so it is refused before anything is made.
    fn preflight(&self, repo: &std::path::Path) -> Result<()> {
        let replays_the_demo = self.setup.script.is_none()
            && matches!(self.setup.mode.as_deref(), None | Some("replay"));
        let is_the_demo = runner_fake::demo_repo::FILES
            .iter()
            .filter(|(path, _)| path.ends_with(".js"))
            .all(|(path, _)| repo.join(path).is_file());
        if replays_the_demo && !is_the_demo {
            return Err(runner_contract::Error::invalid_input(format!(
                "{} is not the demo's repo: the fake agent replays the demo's fix: run \
                 `codehands demo`, or use a real agent (`--agent claude-code`, `codehands agents` \
                 lists them)",
                repo.display()
            )));
        }
        Ok(())
    }

    /// The models Claude Code takes: the fake agent stands in for it.
    fn check_model(&self, model: &str) -> Result<()> {
        self.inner.check_model(model)
    }

    /// In a box: the recording it replays, when it is not the embedded one; no network.
    fn box_needs(&self) -> runner_contract::BoxNeeds {
        runner_contract::BoxNeeds {
            read_only: self.setup.script.iter().cloned().collect(),
            ..Default::default()
        }
    }

    fn invocation(&self, request: &AgentRequest) -> Result<Invocation> {
        let mut invocation = self.inner.invocation(request)?;
        invocation.args.insert(0, OsString::from(FAKE_AGENT_ARG));
        // The replay reads its stdin to the end before it plays: no conversation.
        invocation.close_stdin = runner_contract::StdinClose::AfterWrite;
        let mut set = |key: &str, value: Option<String>| {
            if let Some(value) = value {
                invocation.env.push((key.to_owned(), value));
            }
        };
        set("CODEHANDS_FAKE_MODE", self.setup.mode.clone());
        // Its real path: in a box only that is there (a `..` in the path given would go
        // through folders the box does not have).
        set(
            "CODEHANDS_FAKE_SCRIPT",
            self.setup
                .script
                .as_ref()
                .map(|p| p.canonicalize().unwrap_or_else(|_| p.clone()))
                .map(|p| p.display().to_string()),
        );
        set(
            "CODEHANDS_FAKE_DELAY_MS",
            self.setup.delay_ms.map(|d| d.to_string()),
        );
        Ok(invocation)
    }

    fn parser(&self) -> Box<dyn AgentParser> {
        self.inner.parser()
    }
}
