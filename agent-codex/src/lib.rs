//! An implementation of `runner_contract::Agent` for Codex (`codex exec --json`).
//!
//! - [`Codex`]: the program and its arguments: `exec --json`, the workspace-write
//!   sandbox with no approval prompts, `--model`, resume through `exec resume
//!   <thread id>`, and the prompt read from stdin (`-`), never from argv.
//! - When the run's provider variables hold `OPENAI_BASE_URL`, Codex is pointed at
//!   it through a model provider of its config (`-c model_provider=…` with
//!   `wire_api = "responses"` and `env_key = "OPENAI_API_KEY"`), because Codex
//!   0.163.0 ignores that variable; without it Codex keeps the user's own login
//!   and settings.
//! - The parser turns each `--json` line into events; see `parse/mod.rs` for the
//!   mapping.
//!
//! ## Safety
//! Every run uses Codex's `workspace-write` sandbox (writes only in the worktree and
//! temp folders, no network for commands) with `approval_policy = "never"`: a command
//! the sandbox refuses fails instead of waiting for an answer nobody gives. The
//! adapter never passes `--dangerously-bypass-approvals-and-sandbox`. The sandbox is
//! the `codex-resources/bwrap` shipped beside `bin/codex`; it needs user namespaces
//! (it works in this project's containers, run as root). Repo notes go in on stdin
//! ahead of the prompt (Codex takes developer instructions only as a `-c` argument, and
//! argv is readable by every local user), never written into the worktree. Unlike Claude Code's
//! `--strict-mcp-config`, Codex has no switch that keeps the user's own MCP servers
//! out while keeping the rest of their config (a `-c mcp_servers={}` override merges
//! instead of replacing), so servers in `~/.codex/config.toml` load in agent runs.
//!
//! ## Budget
//! Codex takes no budget. It reports token usage (never a cost) once per turn, in
//! `turn.completed`, after the tokens are spent, and `codex exec` runs a single turn,
//! so neither the adapter nor the runner can stop a run when a dollar budget is
//! reached. [`AgentCapabilities::budget`] is false to say so; the runner still
//! bounds a run with its idle and linger watchdogs and with `stop`, and the usage
//! reaches `task.finished` exactly as Codex reports it, so a caller can price it.

mod args;
mod parse;
mod prices;

use std::path::{Path, PathBuf};

use runner_contract::{
    Agent, AgentCapabilities, AgentName, AgentParser, AgentRequest, Invocation, Result,
    VersionProbe,
};

/// The name this agent is registered under.
pub const NAME: &str = "codex";

/// The version the project's tests run, and where `cargo xtask agents` puts it.
pub mod pinned {
    use std::path::{Path, PathBuf};

    /// The pinned version (from `openai-codex-cli-bin` 0.163.0).
    pub const VERSION: &str = "0.163.0";

    /// Where the pinned program is under the cache root (`$CODEHANDS_CACHE/`).
    pub fn path_in(cache_root: &Path) -> PathBuf {
        cache_root
            .join("agents")
            .join(format!("codex-{VERSION}/codex_cli_bin/bin/codex"))
    }
}

/// The provider variables Codex may receive from the caller's environment.
const PROVIDER_ENV: &[&str] = &[args::BASE_URL_VAR, args::API_KEY_VAR];

/// What Codex prints on stderr when its own sandbox (or the helper it runs commands with)
/// cannot start (seen with Debian's bwrap 0.8 and a CODEX_HOME under the temp folder).
const SANDBOX_FAILURES: &[&str] = &[
    "could not create PATH aliases",
    "codex-linux-sandbox",
    "bwrap:",
];

/// Codex as a codehands agent.
#[derive(Debug, Clone)]
pub struct Codex {
    program: PathBuf,
}

impl Codex {
    /// `codex`, looked up on the agent's PATH. The adapter reads no configuration: the
    /// facade (`codehands::Setup`) finds the program (`CODEX_BIN`, PATH, the pinned cache)
    /// and passes it to [`Codex::with_program`].
    pub fn new() -> Self {
        Self::with_program("codex")
    }

    /// This program (a path, or a name looked up on PATH). Keep the package's
    /// folder whole: Codex runs commands through the `codex-resources/bwrap` beside it.
    pub fn with_program(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
        }
    }

    /// The program this agent runs.
    pub fn program(&self) -> &Path {
        &self.program
    }
}

impl Default for Codex {
    fn default() -> Self {
        Self::new()
    }
}

/// The starts of other vendors' model names, which Codex cannot run.
const FOREIGN_MODELS: &[&str] = &[
    "claude", "sonnet", "opus", "haiku", "mistral", "devstral", "gemini",
];

impl Agent for Codex {
    fn name(&self) -> AgentName {
        AgentName::parse(NAME).expect("the built-in name is valid")
    }

    fn capabilities(&self) -> AgentCapabilities {
        AgentCapabilities {
            // `codex exec` reads its prompt and ends: a follow-up is `exec resume`, and it
            // neither takes input mid-turn nor asks before it runs a tool.
            resume: true,
            budget: false,
            steer: false,
            interrupt: false,
            ask_permission: false,
            // Its `read-only` sandbox (args.rs).
            read_only: true,
        }
    }

    fn provider_env(&self) -> Vec<String> {
        PROVIDER_ENV.iter().map(|name| (*name).to_owned()).collect()
    }

    /// Any model its provider serves (`gpt-…`, `o3`, a custom provider's own names), but
    /// not another vendor's that Codex cannot reach (`claude-…`, `sonnet` …).
    fn check_model(&self, model: &str) -> runner_contract::Result<()> {
        runner_contract::traits::agent::refuse_foreign_model(
            &self.name(),
            model,
            FOREIGN_MODELS,
            "OpenAI's models (`gpt-…`, `o3` …) or its provider's own names",
        )
    }

    fn token_price(&self, model: Option<&str>) -> Option<runner_contract::TokenPrice> {
        prices::price(model)
    }

    fn version_probe(&self) -> Option<VersionProbe> {
        Some(VersionProbe::dash_dash_version(
            &self.program,
            Some(pinned::VERSION),
        ))
    }

    /// In a box: its login (`auth.json` read-only, a copy of `config.toml`), and OpenAI's
    /// API and ChatGPT's backend (a ChatGPT login talks to it) when no base URL is set. Its
    /// install (`codex_cli_bin/`, with the bundled `bwrap` and `rg`) is above its `bin/`, which
    /// a box binds whole. Its own sandbox (that bundled `bwrap`) runs inside the box and
    /// needs new namespaces and mounts: without them every command it runs fails while the
    /// turn still ends `turn.completed`, so the box allows those for it alone.
    fn box_needs(&self) -> runner_contract::BoxNeeds {
        runner_contract::BoxNeeds {
            nested_sandbox: true,
            login: vec![
                runner_contract::LoginFile::read_only(".codex/auth.json"),
                runner_contract::LoginFile::copied(".codex/config.toml"),
            ],
            hosts: vec!["api.openai.com:443".into(), "chatgpt.com:443".into()],
            base_url_envs: vec![args::BASE_URL_VAR.into()],
            ..Default::default()
        }
    }

    /// Codex's own sandbox failing to start shows only on its stderr (every command then
    /// fails, yet the turn ends `turn.completed`): those lines, in its words.
    fn stderr_warnings(&self, stderr: &str) -> Vec<String> {
        stderr
            .lines()
            .map(str::trim)
            .filter(|line| SANDBOX_FAILURES.iter().any(|sign| line.contains(sign)))
            .take(5)
            .map(str::to_owned)
            .collect()
    }

    fn invocation(&self, request: &AgentRequest) -> Result<Invocation> {
        args::build(self.program.clone(), request)
    }

    fn parser(&self) -> Box<dyn AgentParser> {
        Box::new(parse::CodexParser::default())
    }
}

/// Codex's `exec --json` parser on its own (for an agent profile whose program prints the same lines).
pub fn jsonl_parser() -> Box<dyn AgentParser> {
    Box::new(parse::CodexParser::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sandbox_that_cannot_start_is_a_warning_in_codexs_words() {
        let stderr = "2026-01-01T00:00:00Z WARN could not create PATH aliases: refusing to create \
                      helper links under the temp dir\nreading prompt from stdin\n";
        let warnings = Codex::new().stderr_warnings(stderr);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("could not create PATH aliases"));
        assert!(
            Codex::new()
                .stderr_warnings("reading prompt from stdin\n")
                .is_empty()
        );
    }

    #[test]
    fn in_a_box_its_login_is_handed_in_file_by_file() {
        let needs = Codex::new().box_needs();
        assert!(
            needs
                .login
                .contains(&runner_contract::LoginFile::read_only(".codex/auth.json"))
        );
        assert!(
            needs
                .login
                .iter()
                .all(|l| l.path != std::path::Path::new(".codex"))
        );
        assert_eq!(needs.base_url_envs, vec!["OPENAI_BASE_URL".to_owned()]);
        assert!(needs.nested_sandbox, "its own bwrap runs in the box");
    }
}
