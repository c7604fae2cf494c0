//! An implementation of `runner_contract::Agent` for Claude Code (`claude -p`, the
//! prompt as text on stdin, stream-json out).
//!
//! - [`ClaudeCode`]: the program, its arguments (the safety rules of ARCHITECTURE.md, "Security") and the
//!   prompt on stdin.
//! - The parser turns each stream-json line into events (the mapping table in `parse/`);
//!   [`JsonlDecoder`] cuts raw output bytes into those lines.

mod args;
mod input;
mod parse;
mod rules;

use std::ffi::OsString;
use std::path::PathBuf;

use runner_contract::{
    Agent, AgentCapabilities, AgentName, AgentParser, AgentRequest, Invocation, Result,
    VersionProbe,
};

pub use runner_contract::framing::{DEFAULT_MAX_LINE, Frame, JsonlDecoder};

/// The name this agent is registered under.
pub const NAME: &str = "claude-code";

/// The version the project's tests run, and where `cargo xtask agents` puts it.
pub mod pinned {
    use std::path::{Path, PathBuf};

    /// The pinned version (from `claude-agent-sdk` 0.2.189).
    pub const VERSION: &str = "2.1.332";

    /// Where the pinned program is under the cache root (`$CODEHANDS_CACHE/`).
    pub fn path_in(cache_root: &Path) -> PathBuf {
        cache_root
            .join("agents")
            .join(format!("claude-code-{VERSION}/claude"))
    }
}

/// The provider variables Claude Code may receive from the caller's environment.
const PROVIDER_ENV: &[&str] = &[
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
];

/// Claude Code as a codehands agent.
#[derive(Debug, Clone)]
pub struct ClaudeCode {
    program: PathBuf,
    extra_args: Vec<OsString>,
}

impl ClaudeCode {
    /// `claude`, looked up on the agent's PATH. The adapter reads no configuration: the
    /// facade (`codehands::Setup`) finds the program (`CLAUDE_BIN`, PATH, the pinned cache)
    /// and passes it to [`ClaudeCode::with_program`].
    pub fn new() -> Self {
        Self::with_program("claude")
    }

    /// This program (a path, or a name looked up on PATH).
    pub fn with_program(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            extra_args: Vec::new(),
        }
    }

    /// Adds arguments to every run (for example `--effort high`). Refuses, as
    /// `InvalidInput`, arguments that conflict with the flags codehands owns:
    /// the stream formats, session and resume, permissions, budget, model and notes.
    pub fn with_args<I, S>(mut self, args: I) -> Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
        args::check_extra_args(&args)?;
        self.extra_args.extend(args);
        Ok(self)
    }

    /// The program this agent runs.
    pub fn program(&self) -> &std::path::Path {
        &self.program
    }
}

impl Default for ClaudeCode {
    fn default() -> Self {
        Self::new()
    }
}

/// The starts of other vendors' model names, which Claude Code cannot run.
const FOREIGN_MODELS: &[&str] = &[
    "gpt-", "o1", "o3", "o4", "codex", "mistral", "devstral", "gemini", "qwen",
];

impl Agent for ClaudeCode {
    fn name(&self) -> AgentName {
        AgentName::parse(NAME).expect("the built-in name is valid")
    }

    fn capabilities(&self) -> AgentCapabilities {
        AgentCapabilities {
            resume: true,
            budget: true,
            // Its stdin is a stream-json conversation (args.rs): input mid-turn steers it,
            // the interrupt control request ends a turn, and with the stdio permission
            // tool it asks before a tool outside the allow list.
            steer: true,
            interrupt: true,
            ask_permission: true,
            // Plan mode with the reading tools alone (args.rs).
            read_only: true,
        }
    }

    fn provider_env(&self) -> Vec<String> {
        PROVIDER_ENV.iter().map(|name| (*name).to_owned()).collect()
    }

    /// Anthropic's models only: an alias (`sonnet`, `opus`, `haiku`) or a `claude-…` name;
    /// another vendor's model is refused before anything is made.
    fn check_model(&self, model: &str) -> runner_contract::Result<()> {
        runner_contract::traits::agent::refuse_foreign_model(
            &self.name(),
            model,
            FOREIGN_MODELS,
            "Anthropic's models: `sonnet`, `opus`, `haiku` or a `claude-…` name",
        )
    }

    fn version_probe(&self) -> Option<VersionProbe> {
        Some(VersionProbe::dash_dash_version(
            &self.program,
            Some(pinned::VERSION),
        ))
    }

    /// In a box: its login (the credentials file read-only, a copy of `~/.claude.json`, which
    /// it rewrites), and Anthropic's API as the only host when no base URL is set.
    fn box_needs(&self) -> runner_contract::BoxNeeds {
        runner_contract::BoxNeeds {
            login: vec![
                runner_contract::LoginFile::read_only(".claude/.credentials.json"),
                runner_contract::LoginFile::copied(".claude.json"),
            ],
            hosts: vec!["api.anthropic.com:443".into()],
            base_url_envs: vec!["ANTHROPIC_BASE_URL".into()],
            ..Default::default()
        }
    }

    fn invocation(&self, request: &AgentRequest) -> Result<Invocation> {
        args::build(self.program.clone(), &self.extra_args, request)
    }

    fn parser(&self) -> Box<dyn AgentParser> {
        Box::new(parse::ClaudeParser::default())
    }

    /// Knows the turn's deny rules, to say which one refused a tool.
    fn parser_for(&self, request: &AgentRequest) -> Box<dyn AgentParser> {
        Box::new(parse::ClaudeParser::with_deny_rules(
            request.tools.deny.clone(),
        ))
    }

    fn input_line(&self, input: &runner_contract::AgentInput) -> Result<String> {
        if let runner_contract::AgentInput::Permission {
            answer:
                runner_contract::PermissionAnswer::Allow {
                    updated_input: Some(changed),
                },
            ..
        } = input
            && !changed.is_object()
        {
            return Err(runner_contract::Error::invalid_input(format!(
                "the changed input {changed} is not a JSON object: give the tool's input whole, \
                 for example {{\"command\": \"ls\"}}"
            )));
        }
        Ok(input::line_for(input))
    }
}

/// Claude Code's stream-json parser on its own (for an agent profile whose program prints the same lines).
pub fn stream_json_parser() -> Box<dyn AgentParser> {
    Box::new(parse::ClaudeParser::default())
}

#[cfg(test)]
mod box_tests {
    use super::*;

    #[test]
    fn in_a_box_its_login_is_handed_in_file_by_file() {
        let needs = ClaudeCode::new().box_needs();
        assert!(needs.login.contains(&runner_contract::LoginFile::read_only(
            ".claude/.credentials.json"
        )));
        assert!(
            needs
                .login
                .contains(&runner_contract::LoginFile::copied(".claude.json"))
        );
        assert!(
            needs
                .login
                .iter()
                .all(|l| l.path != std::path::Path::new(".claude"))
        );
        assert_eq!(needs.hosts, vec!["api.anthropic.com:443".to_owned()]);
    }
}
