//! An implementation of `runner_contract::Agent` for mini-swe-agent 2.4.6, the small
//! coding agent from the SWE-agent team (PyPI `mini-swe-agent`, models through litellm).
//!
//! This crate stands where a third party's would: outside codehands' adapter set,
//! depending on runner-contract alone, registered by whoever builds the runner
//! (`LocalRunner::with_agent`). It names its program and config folder as
//! constructor arguments and reads no configuration itself.
//!
//! - [`MiniSweAgent`]: the program and its arguments. mini takes its task only from
//!   argv or a config file, so the run's settings (task, model, cost limit) go on
//!   stdin as one YAML line, read through a config file that links to
//!   `/dev/stdin` (see `args.rs`); argv holds only fixed flags and paths.
//! - [`install`]: the pinned version, its packages, and where `cargo xtask agents`
//!   puts them.
//! - The parser reads the trajectory mini writes to stdout after every step; see
//!   `parse/mod.rs` for the mapping.
//!
//! ## Safety
//! mini-swe-agent has no permission system and no sandbox in its local mode: its
//! only headless mode runs every command the model asks for (its one tool is
//! called `bash`), each in a fresh `/bin/sh -c` in the worktree, as the user
//! running codehands (the plain
//! `default` agent class, which never asks; mini's interactive `confirm` mode
//! needs a person at a terminal). The adapter passes no flag that widens that: it
//! is what the CLI requires to run without a person. What confines a run is the
//! runner's: the environment built from scratch (the commands see the agent's
//! environment, so the provider key among it), the process group it ends, and the
//! review before anything is committed. Run it on repositories you would let a
//! script run in. Repo notes go into the task text, never into the worktree, and
//! mini's config files are named by absolute path: mini looks a relative `-c` up in
//! its working directory first, so a file in the worktree could otherwise become
//! its config (another model URL, another agent class).
//!
//! ## Budget
//! The budget becomes mini's `cost_limit`: mini stops once the cost litellm
//! computes from its price list passes it, and the run fails with
//! `budget_exhausted`. A model litellm cannot price (a custom OpenAI-compatible
//! server's, say) costs $0 to mini, so there the limit never trips; the runner's
//! watchdogs and `stop` still bound the run.
//!
//! ## Output
//! The trajectory is written with `--output /dev/stdout`, which mini opens anew
//! for every write; that works on the pipe the runner reads. If stdout were a
//! regular file, each write would truncate it.

mod args;
pub mod install;
mod parse;

use std::path::{Path, PathBuf};

use runner_contract::{
    Agent, AgentCapabilities, AgentName, AgentParser, AgentRequest, Invocation, Result,
    VersionProbe,
};

/// The name this agent is registered under.
pub const NAME: &str = "mini-swe-agent";

/// The provider variables mini may receive from the caller's environment: the
/// OpenAI-compatible and Anthropic base URLs and keys litellm reads, and mini's
/// default model.
pub const PROVIDER_ENV: &[&str] = &[
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_API_KEY",
    args::MODEL_VAR,
];

/// mini-swe-agent as a codehands agent.
#[derive(Debug, Clone)]
pub struct MiniSweAgent {
    program: PathBuf,
    config_dir: Option<PathBuf>,
}

impl MiniSweAgent {
    /// The `mini` program with the config folder it needs (holding mini's
    /// `mini.yaml` and `task.yaml`, a link to `/dev/stdin`; see [`install`]).
    pub fn new(program: impl Into<PathBuf>, config_dir: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            config_dir: Some(config_dir.into()),
        }
    }

    /// The program and config folder of an install made by `cargo xtask agents`
    /// (for example [`install::folder`] of the cache root).
    pub fn from_install(folder: &Path) -> Self {
        Self::new(install::program(folder), install::config_dir(folder))
    }

    /// A program without a config folder (`mini` from PATH): its runs are refused
    /// with a message saying how to make one, until [`MiniSweAgent::new`] names it.
    pub fn without_config(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            config_dir: None,
        }
    }

    /// The program this agent runs.
    pub fn program(&self) -> &Path {
        &self.program
    }
}

impl Agent for MiniSweAgent {
    fn name(&self) -> AgentName {
        AgentName::parse(NAME).expect("the crate's name is a valid agent name")
    }

    fn capabilities(&self) -> AgentCapabilities {
        AgentCapabilities {
            resume: false,
            // mini stops at its cost limit (see "Budget" above).
            budget: true,
            ..AgentCapabilities::default()
        }
    }

    fn provider_env(&self) -> Vec<String> {
        PROVIDER_ENV.iter().map(|name| (*name).to_owned()).collect()
    }

    /// mini has no `--version`. The Python of the venv the program lives in (links
    /// followed, as pipx makes them) reads the installed package's version without
    /// importing it; a `mini` found otherwise prints its version in the banner of `--help`.
    fn version_probe(&self) -> Option<VersionProbe> {
        let tested = Some(install::VERSION.to_owned());
        let python = std::fs::canonicalize(&self.program)
            .ok()
            .as_deref()
            .and_then(Path::parent)
            .filter(|dir| !dir.as_os_str().is_empty())
            .map(|dir| dir.join("python"))
            .filter(|python| python.is_file());
        Some(match python {
            Some(python) => VersionProbe {
                program: python,
                args: vec![
                    "-c".into(),
                    "import importlib.metadata as m; print(m.version('mini-swe-agent'))".into(),
                ],
                tested,
            },
            None => VersionProbe {
                program: self.program.clone(),
                args: vec!["--help".into()],
                tested,
            },
        })
    }

    fn invocation(&self, request: &AgentRequest) -> Result<Invocation> {
        args::build(&self.program, self.config_dir.as_deref(), request)
    }

    fn parser(&self) -> Box<dyn AgentParser> {
        Box::new(parse::MiniParser::default())
    }
}
