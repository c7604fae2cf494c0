//! The codehands facade: the crate a daemon depends on.
//!
//! It picks adapters by cargo feature (`claude`, `codex`, `acp`, `vibe`, `git`, `docker`,
//! `memory-fs`, `fake`, `plugins`, `box`, `remote`, and the command line's `cli` and `ui`) and
//! builds a ready [`LocalRunner`]; [`RunnerBuilder`] registers any other `Agent`, profile file or
//! plugin. A build without a feature answers "… is not in this build of codehands" instead of
//! failing to compile. The contract (the `Runner` trait a daemon codes against, the events, the
//! options) is re-exported as [`contract`], the engine as [`core`].
//!
//! ```no_run
//! # async fn demo() -> codehands::contract::Result<()> {
//! use codehands::{Setup, build_runner};
//! use codehands::contract::{AgentName, Runner, SessionId, StartOptions};
//! let runner = build_runner(Setup::from_env()?)?;
//! runner.recover().await?; // once, at start-up
//! let id = SessionId::new_random();
//! let agent = AgentName::parse("claude-code")?;
//! let events = runner.start(StartOptions::new(id, "/path/to/repo", "Fix the failing test.", agent)).await?;
//! # Ok(()) }
//! ```

// A build without some adapter leaves the glue for it unused; the default build, which
// clippy and the tests see, uses all of it (`.ci/run` checks each feature alone).
#![cfg_attr(
    not(all(
        feature = "claude",
        feature = "codex",
        feature = "git",
        feature = "docker",
        feature = "memory-fs",
        feature = "fake",
        feature = "plugins",
        feature = "box"
    )),
    allow(unused)
)]

pub mod acp_wire;
mod agents;
mod builder;
pub mod client_lines;
#[cfg(feature = "remote")]
mod engines;
pub mod locate;
mod memory;
mod plugins;
pub mod profile;
pub mod settings;
// Only the command line installs the timing layer; the library's spans cost nothing without it.
#[cfg(feature = "cli")]
pub mod timing;
pub mod workflow;

pub use runner_contract as contract;
pub use runner_core as core;

use std::path::PathBuf;
use std::sync::Arc;

use runner_contract::{Error, Home, Result, Runner};
use runner_core::{AgentRegistry, LocalRunner, RunnerSettings};

pub use agents::{FAKE_AGENT, FAKE_AGENT_ARG, FakeAgentSetup};
pub use builder::{LoadProblem, RunnerBuilder, unknown_agent};

/// Everything needed to build a runner; [`Setup::from_env`] fills it the usual way.
#[derive(Debug, Clone)]
pub struct Setup {
    /// `$CODEHANDS_HOME`.
    pub home: Home,
    /// The runner's behaviour (watchdog, grace, extra variables …).
    pub settings: RunnerSettings,
    /// The Claude Code program (`CLAUDE_BIN`, `claude` on PATH, or the pinned one in the
    /// cache: [`locate`]).
    pub claude_bin: PathBuf,
    /// The Codex program (`CODEX_BIN`, `codex` on PATH, or the pinned one in the cache).
    pub codex_bin: PathBuf,
    /// Mistral Vibe's ACP server (`VIBE_ACP_BIN`, `vibe-acp` on PATH, or the pinned one in
    /// the cache).
    pub vibe_bin: PathBuf,
    /// How the fake agent runs, when it is in the build.
    pub fake: FakeAgentSetup,
    /// Which images the sandbox uses.
    pub sandbox_images: SandboxImages,
    /// The program that answers `__box` and `__box-init` for the agent's box: this
    /// `codehands` binary, or `codehands-box` (or `codehands`) on PATH for a program that
    /// links codehands ([`locate::box_helper`]); `None` leaves boxes unavailable.
    pub box_helper: Option<PathBuf>,
}

/// Which images the Docker sandbox runs tests in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SandboxImages {
    /// The images `cargo xtask images` builds locally (`codehands/sandbox-*`), needing no
    /// registry: the ones the test suite runs. The default.
    #[default]
    Local,
    /// The official images on Docker Hub (`node:<major>-bookworm-slim` …), pulled on first use.
    Hub,
}

impl SandboxImages {
    /// From `CODEHANDS_SANDBOX_IMAGES` (`local` or `hub`).
    pub fn from_env() -> Result<Self> {
        match std::env::var("CODEHANDS_SANDBOX_IMAGES")
            .unwrap_or_default()
            .as_str()
        {
            "" | "local" => Ok(Self::Local),
            "hub" => Ok(Self::Hub),
            other => Err(Error::invalid_input(format!(
                "CODEHANDS_SANDBOX_IMAGES is {other:?}: set it to `local` or `hub`"
            ))),
        }
    }

    #[cfg(feature = "docker")]
    fn map(self) -> sandbox_docker::ImageMap {
        match self {
            Self::Local => sandbox_docker::ImageMap::local(),
            Self::Hub => sandbox_docker::ImageMap::default(),
        }
    }
}

impl Setup {
    /// The home from `CODEHANDS_HOME` (or `~/.codehands`), the process's environment as the
    /// one the agent's is filtered from, the programs from
    /// `CLAUDE_BIN` and `CODEX_BIN`, PATH or the cache ([`locate`]), the fake agent from `CODEHANDS_FAKE_*`, default settings.
    pub fn from_env() -> Result<Self> {
        let home = home_from_env()?;
        let caller_env: Vec<(String, String)> = std::env::vars().collect();
        let settings_files = settings::SettingsFiles::new(home.root(), &caller_env);
        Ok(Self {
            home,
            settings: RunnerSettings {
                caller_env,
                allowances: Some(runner_contract::AllowancesSource(std::sync::Arc::new(
                    move |repo| settings_files.load(repo),
                ))),
                ..RunnerSettings::default()
            },
            claude_bin: locate::claude(&locate::process_env).program,
            codex_bin: locate::codex(&locate::process_env).program,
            vibe_bin: locate::vibe(&locate::process_env).program,
            fake: FakeAgentSetup::from_env(),
            sandbox_images: SandboxImages::from_env()?,
            box_helper: locate::box_helper(&locate::process_env),
        })
    }
}

/// `$CODEHANDS_HOME`, or `~/.codehands` (only the facade reads the environment).
fn home_from_env() -> Result<Home> {
    if let Some(root) = std::env::var_os("CODEHANDS_HOME").filter(|v| !v.is_empty()) {
        return Ok(Home::new(root));
    }
    let home = std::env::var_os("HOME").filter(|v| !v.is_empty()).ok_or_else(|| {
        Error::invalid_input(
            "neither CODEHANDS_HOME nor HOME is set: set CODEHANDS_HOME to a folder codehands may use",
        )
    })?;
    Ok(Home::new(PathBuf::from(home).join(".codehands")))
}

/// Builds the real runner with every agent of this build and of the home's `agents/` and
/// `plugins/` folders. [`RunnerBuilder`] adds the caller's own agents and files.
pub fn build_runner(setup: Setup) -> Result<LocalRunner> {
    RunnerBuilder::new(setup).build()
}

/// The real runner over `agents`, with every other adapter of this build.
fn runner_with(setup: Setup, agents: AgentRegistry) -> Result<LocalRunner> {
    #[cfg(feature = "git")]
    {
        let vcs = Arc::new(vcs_git::GitVcs::new());
        let memory = memory::store(&setup.home);
        let runner = LocalRunner::new(setup.home.clone(), vcs, memory, setup.settings.clone())
            .with_agents(agents);
        #[cfg(feature = "docker")]
        let runner = runner.with_sandbox(Arc::new(docker_sandbox(&setup)));
        let runner = match confinement(&setup) {
            Some(confinement) => runner.with_confinement(confinement),
            None => runner,
        };
        Ok(runner)
    }
    #[cfg(not(feature = "git"))]
    {
        let _ = (setup, agents);
        Err(Error::not_in_build(
            "the real runner (git worktrees)",
            "git",
        ))
    }
}

/// The Docker sandbox of this setup: its images, and the engine (`DOCKER_HOST`) and the
/// host's timezone (`TZ`) as the caller's environment names them (sandbox-docker reads none).
#[cfg(feature = "docker")]
fn docker_sandbox(setup: &Setup) -> sandbox_docker::DockerSandbox {
    let sandbox = sandbox_docker::DockerSandbox::new(setup.home.root())
        .with_images(setup.sandbox_images.map())
        .with_tz_variable(caller_var(setup, "TZ").map(str::to_owned));
    match caller_var(setup, "DOCKER_HOST").filter(|host| !host.is_empty()) {
        Some(host) => sandbox.with_docker_host(host),
        None => sandbox,
    }
}

/// A variable of the caller's environment (`RunnerSettings::caller_env`).
fn caller_var<'a>(setup: &'a Setup, name: &str) -> Option<&'a str> {
    setup
        .settings
        .caller_env
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// The box the runner of `setup` puts agents in: the local box, and with the `remote` feature
/// a box on a Docker engine or swarm as each session's engine says; `None` without `box`.
pub fn confinement(setup: &Setup) -> Option<Arc<dyn runner_contract::Confinement>> {
    #[cfg(feature = "remote")]
    {
        let boxes: Arc<dyn runner_contract::Confinement> = Arc::new(engines::Engines::new(
            agent_box(setup),
            engines::docker_engine(setup),
        ));
        Some(boxes)
    }
    #[cfg(all(feature = "box", not(feature = "remote")))]
    {
        let boxes: Arc<dyn runner_contract::Confinement> = Arc::new(agent_box(setup));
        Some(boxes)
    }
    #[cfg(not(feature = "box"))]
    {
        let _ = setup;
        None
    }
}

/// The agent's box of this setup: bubblewrap from the caller's PATH, and the helper.
#[cfg(feature = "box")]
pub fn agent_box(setup: &Setup) -> agent_box::BwrapBox {
    let path = caller_var(setup, "PATH");
    agent_box::BwrapBox::new(setup.box_helper.clone(), agent_box::probe::find_bwrap(path))
}

/// How many files of `repo`'s checkout have uncommitted changes (feature `git`; `None`
/// without it): the agent starts from HEAD, so a caller can tell the person that those
/// changes are not in the agent's worktree.
pub fn uncommitted_files(repo: &std::path::Path) -> Result<Option<usize>> {
    #[cfg(feature = "git")]
    {
        vcs_git::uncommitted_files(repo).map(Some)
    }
    #[cfg(not(feature = "git"))]
    {
        let _ = repo;
        Ok(None)
    }
}

/// The test command of the repo at `repo`, read from its files as the repo memory's
/// profile reads them (`cargo test` for Cargo.toml, `python -m pytest`, `go test ./...`,
/// `npm test` …); `None` when it has none, or the build has no repo memory (`memory-fs`).
pub fn repo_test_command(repo: &std::path::Path) -> Option<String> {
    #[cfg(feature = "memory-fs")]
    {
        memory_fs::detect_repo_profile(repo).test_command
    }
    #[cfg(not(feature = "memory-fs"))]
    {
        let _ = repo;
        None
    }
}

/// Writes the demo's files (a date formatter with a failing test) into `dir` and returns
/// the prompt the fake agent's recording answers (feature `fake`).
pub fn write_demo_repo(dir: &std::path::Path) -> Result<&'static str> {
    #[cfg(feature = "fake")]
    {
        runner_fake::demo_repo::write(dir).map_err(|e| {
            Error::io(
                format!("cannot write the demo repo at {}", dir.display()),
                &e,
            )
        })?;
        Ok(runner_fake::demo_repo::PROMPT)
    }
    #[cfg(not(feature = "fake"))]
    {
        let _ = dir;
        Err(Error::not_in_build("the demo (the fake agent)", "fake"))
    }
}

/// Builds the scripted fake runner (feature `fake`): 12 events `delay_ms` apart, then approval.
pub fn fake_runner(delay_ms: u64) -> Result<Box<dyn Runner>> {
    #[cfg(feature = "fake")]
    {
        let options = runner_fake::FakeRunnerOptions {
            delay: std::time::Duration::from_millis(delay_ms),
        };
        Ok(Box::new(runner_fake::FakeRunner::new(options)))
    }
    #[cfg(not(feature = "fake"))]
    {
        let _ = delay_ms;
        Err(Error::not_in_build("the fake runner", "fake"))
    }
}

/// Runs `repo`'s tests once in the locked Docker box (feature `docker`); the profile
/// (test command, Node version, install) is read from the repo's files.
pub async fn sandbox_repo(
    setup: &Setup,
    repo: &std::path::Path,
    timezone: Option<String>,
) -> Result<(runner_contract::SessionId, runner_contract::SandboxResult)> {
    #[cfg(feature = "docker")]
    {
        let profile = memory::store(&setup.home).detect_profile(repo);
        let sandbox = docker_sandbox(setup);
        Ok(sandbox_docker::run_repo(&sandbox, repo, profile, timezone).await)
    }
    #[cfg(not(feature = "docker"))]
    {
        let _ = (setup, repo, timezone);
        Err(Error::not_in_build("the Docker sandbox", "docker"))
    }
}
