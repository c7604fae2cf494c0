//! An implementation of `runner_contract::Agent` for any agent that speaks the Agent Client
//! Protocol (ACP: JSON-RPC 2.0, one message per line on the agent's stdin and stdout).
//!
//! - [`AcpAgent`]: a program, its arguments and environment; the turn is a conversation whose
//!   first line is our `initialize`, and whose parser owes the agent the rest of the handshake
//!   (`session/new` or `session/load`, then `session/prompt`), so every line given to the agent
//!   goes through the turn's input file (docs/acp.md).
//! - The parser (`parse/`) maps `session/update`s, permission requests and the prompt's answer
//!   onto our events.

mod out;
mod parse;
mod wire;

use std::ffi::OsString;
use std::path::PathBuf;

use runner_contract::{
    Agent, AgentCapabilities, AgentInput, AgentName, AgentParser, AgentRequest, Error, Invocation,
    PermissionAnswer, Result, StdinClose, VersionProbe,
};

pub use parse::AcpParser;

/// The protocol's name in listings (`Agent::protocol`) and profiles (`protocol = "acp"`).
pub const PROTOCOL: &str = "acp";

/// An agent that speaks ACP.
#[derive(Debug, Clone)]
pub struct AcpAgent {
    name: AgentName,
    program: PathBuf,
    args: Vec<OsString>,
    env: Vec<(String, String)>,
    provider_env: Vec<String>,
    version: Option<VersionProbe>,
}

impl AcpAgent {
    /// `program`, registered as `name`, run with no arguments.
    pub fn new(name: AgentName, program: impl Into<PathBuf>) -> Self {
        Self {
            name,
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            provider_env: Vec::new(),
            version: None,
        }
    }

    /// The arguments of every run (the ones that make the program speak ACP, if it needs any).
    pub fn with_args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args = args.into_iter().map(Into::into).collect();
        self
    }

    /// Variables every run gets (for example the agent's configuration folder).
    pub fn with_env(mut self, env: Vec<(String, String)>) -> Self {
        self.env = env;
        self
    }

    /// The names of the caller's variables the agent may receive (its provider's key).
    pub fn with_provider_env(mut self, names: Vec<String>) -> Self {
        self.provider_env = names;
        self
    }

    /// How to ask the program for its version.
    pub fn with_version_probe(mut self, probe: VersionProbe) -> Self {
        self.version = Some(probe);
        self
    }

    /// The program this agent runs.
    pub fn program(&self) -> &std::path::Path {
        &self.program
    }

    /// The parser that drives one turn of `request`: it owes the agent the handshake's
    /// requests and the prompt.
    pub fn driving_parser(&self, request: &AgentRequest) -> AcpParser {
        let mut blocks: Vec<String> = request.notes.iter().cloned().collect();
        blocks.push(request.prompt.clone());
        AcpParser::driving(parse::TurnPlan {
            cwd: request.worktree.to_string_lossy().into_owned(),
            blocks,
            resume: request.resume.as_ref().map(|r| r.agent_session_id.clone()),
        })
    }
}

impl Agent for AcpAgent {
    fn name(&self) -> AgentName {
        self.name.clone()
    }

    /// A follow-up continues the agent's session (when its `initialize` offers
    /// `session/load` or `session/resume`; the turn fails saying so when it offers neither),
    /// `session/cancel` interrupts a turn, and `session/request_permission` asks the caller.
    /// ACP has no way to add to a prompt in flight, and no budget.
    fn capabilities(&self) -> AgentCapabilities {
        AgentCapabilities {
            resume: true,
            budget: false,
            steer: false,
            interrupt: true,
            ask_permission: true,
            read_only: false,
        }
    }

    fn protocol(&self) -> Option<&'static str> {
        Some(PROTOCOL)
    }

    fn provider_env(&self) -> Vec<String> {
        self.provider_env.clone()
    }

    fn version_probe(&self) -> Option<VersionProbe> {
        self.version.clone()
    }

    fn invocation(&self, request: &AgentRequest) -> Result<Invocation> {
        request.check()?;
        let mut env = self.env.clone();
        env.extend(request.provider_env.iter().cloned());
        Ok(Invocation {
            program: self.program.clone(),
            args: self.args.clone(),
            env,
            stdin: vec![out::initialize()],
            close_stdin: StdinClose::Conversation,
        })
    }

    /// A parser that only reads: it owes the program nothing (a recording's replay).
    fn parser(&self) -> Box<dyn AgentParser> {
        Box::new(AcpParser::reading())
    }

    /// The parser that drives the turn: it owes the program the handshake and the prompt.
    fn parser_for(&self, request: &AgentRequest) -> Box<dyn AgentParser> {
        Box::new(self.driving_parser(request))
    }

    fn input_line(&self, input: &AgentInput) -> Result<String> {
        match input {
            AgentInput::Permission { input, answer, .. } => permission_line(input, answer),
            AgentInput::Interrupt {
                agent_session_id, ..
            } => match agent_session_id {
                Some(session) => Ok(out::cancel(session)),
                None => Err(Error::new(
                    runner_contract::ErrorKind::IllegalMove,
                    format!(
                        "the {} agent has not opened its session yet, so its turn cannot be \
                         cancelled: try again in a moment, or stop the session",
                        self.name
                    ),
                )),
            },
            AgentInput::User { .. } => Err(Error::new(
                runner_contract::ErrorKind::Unsupported,
                format!(
                    "the {} agent speaks ACP, which takes no message while a turn runs: send it \
                     as a follow-up once the turn has ended",
                    self.name
                ),
            )),
        }
    }
}

/// The answer line for a permission request whose `input` the parser made (`rpcId`,
/// `options`).
fn permission_line(input: &serde_json::Value, answer: &PermissionAnswer) -> Result<String> {
    let id = input
        .get("rpcId")
        .filter(|id| id.is_number() || id.is_string())
        .ok_or_else(|| {
            Error::invalid_input(
                "this permission request names no JSON-RPC id: it did not come from an ACP agent",
            )
        })?;
    let options: Vec<wire::PermissionOption> = input
        .get("options")
        .cloned()
        .and_then(|o| serde_json::from_value(o).ok())
        .unwrap_or_default();
    let allow = match answer {
        PermissionAnswer::Allow {
            updated_input: Some(_),
        } => {
            return Err(Error::invalid_input(
                "an ACP agent runs a tool as it asked or not at all: allow or deny without a \
                 changed input",
            ));
        }
        PermissionAnswer::Allow { .. } => true,
        PermissionAnswer::Deny { .. } => false,
    };
    Ok(out::permission_answer(id, &options, allow))
}
