//! `Agent`: an agent is data plus a parser.
//!
//! An adapter says which program to run, with which arguments, environment
//! additions and stdin messages, and turns each output line into events. Spawning,
//! the environment scrub, watchdogs, killing and transcripts live once, in the runner.

use std::ffi::OsString;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::agent_name::AgentName;
use crate::error::Result;
use crate::event::EventBody;
use crate::ids::SessionId;

/// What an agent can do beyond a plain run; callers read it to refuse clearly. The
/// capabilities added after the first two are written only when true, so a plugin host of
/// an older version still reads what a newer plugin says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentCapabilities {
    /// The agent can continue an earlier conversation.
    #[serde(default)]
    pub resume: bool,
    /// The agent enforces a budget in dollars itself.
    #[serde(default)]
    pub budget: bool,
    /// The agent takes more input while a turn runs ([`Agent::input_line`]): a message
    /// that steers the turn in flight.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub steer: bool,
    /// The agent can be told to end its turn without ending its process (an interrupt).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupt: bool,
    /// The agent can ask the caller before it uses a tool outside its allow list
    /// (`permission.requested`), instead of refusing it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ask_permission: bool,
    /// The agent can be held to read-only tools by its own program when a request says
    /// [`AgentRequest::read_only`] (a workflow's plan or review phase). The runner checks
    /// the worktree after such a turn whatever this says.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
}

/// How to ask an agent's program for its version (`codehands agents`, `doctor`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionProbe {
    /// The program, as the agent would run it.
    pub program: PathBuf,
    /// The arguments that make it print its version (for example `--version`).
    pub args: Vec<OsString>,
    /// The version our tests ran, if the project pins one.
    pub tested: Option<String>,
}

impl VersionProbe {
    /// The first word of `text` that looks like a version (`2.1.332`, `v0.163.0,`).
    pub fn version_in(text: &str) -> Option<String> {
        text.split_whitespace()
            .map(|w| w.trim_start_matches('v').trim_end_matches(','))
            .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()) && w.contains('.'))
            .map(str::to_owned)
    }

    /// `program --version`, with the version our tests ran.
    pub fn dash_dash_version(program: impl Into<PathBuf>, tested: Option<&str>) -> Self {
        Self {
            program: program.into(),
            args: vec!["--version".into()],
            tested: tested.map(str::to_owned),
        }
    }
}

/// Everything an agent needs to build its invocation.
#[derive(Debug, Clone)]
pub struct AgentRequest {
    /// Our session id.
    pub session_id: SessionId,
    /// The private worktree the agent works in.
    pub worktree: PathBuf,
    /// The prompt, never blank (see [`AgentRequest::check`]); an adapter must never put it
    /// where it could be read as a flag.
    pub prompt: String,
    /// The model, in the agent's naming.
    pub model: Option<String>,
    /// The budget for this run, US dollars: positive and finite (see [`AgentRequest::check`]).
    pub budget_usd: f64,
    /// Repo notes to add to the system prompt (already capped, framed as data and fenced
    /// by the runner). They hold earlier prompts: an adapter never puts them on argv,
    /// where any local user can read them (`/proc/<pid>/cmdline`).
    pub notes: Option<String>,
    /// The same notes in a private file (0600, in the run's folder), written by the runner
    /// for agents that read a system-prompt addition from a file.
    pub notes_file: Option<PathBuf>,
    /// The repo's test command, which the agent may run.
    pub test_command: Option<String>,
    /// Set for a resume: the agent's own session or thread id from the first run.
    pub resume: Option<ResumeFrom>,
    /// Whether a tool outside the allow list is refused or asked of the caller (only
    /// [`PermissionMode::Ask`](crate::options::PermissionMode) for an agent whose
    /// capabilities say it can ask; the runner refuses it otherwise).
    pub permissions: crate::options::PermissionMode,
    /// Provider variables from the caller's environment that this agent may receive
    /// (for example its provider's base URL): only names the agent asked for in
    /// [`Agent::provider_env`], already filtered by the runner.
    pub provider_env: Vec<(String, String)>,
    /// Read-only tools only (a workflow's plan or review phase): an agent whose
    /// capabilities say [`AgentCapabilities::read_only`] asks its program for that mode.
    /// The runner fails the turn if the worktree changed anyway.
    pub read_only: bool,
    /// What the agent's program may run without asking: whether the turn runs in the box,
    /// and the settings' tool rules. An agent whose program keeps an allow list of its own
    /// builds it from this; the others ignore it.
    pub tools: ToolPolicy,
}

/// What an agent's program may run without asking, for an agent whose program keeps an
/// allow list of its own (ARCHITECTURE.md, "Adding an agent").
/// The default is an unboxed turn with no rules: the narrowest list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolPolicy {
    /// The turn runs in the box (the session's isolation is `box`): the box is the boundary,
    /// so the program may run any command there.
    pub boxed: bool,
    /// Tool rules allowed by the settings (`[agent] allow`), in the `Tool(specifier)` syntax
    /// (`Bash(cargo test:*)`), already checked: no rule smuggles in another.
    pub allow: Vec<String>,
    /// Tool rules refused by the settings (`[agent] deny`), in the same syntax; a refusal
    /// wins over an allow, boxed or not.
    pub deny: Vec<String>,
}

/// What a resume tells the agent when the caller gives no new prompt.
pub const DEFAULT_RESUME_PROMPT: &str = "Continue where you left off.";

impl AgentRequest {
    /// The guarantees every request from the runner keeps, checked in one place: the
    /// prompt is not blank (a resume without one carries [`DEFAULT_RESUME_PROMPT`]) and the
    /// budget is a positive number of dollars. The runner refuses options that break them
    /// before anything is made; an adapter calls this first, so one called directly
    /// (a benchmark, a test) refuses the same requests with the same words.
    pub fn check(&self) -> Result<()> {
        Self::check_prompt(&self.prompt)?;
        Self::check_budget(self.budget_usd)
    }

    /// A blank prompt is refused.
    pub fn check_prompt(prompt: &str) -> Result<()> {
        if prompt.trim().is_empty() {
            return Err(crate::Error::invalid_input(
                "the prompt is empty: say what the agent should do",
            ));
        }
        Ok(())
    }

    /// A budget that is not a positive, finite number of dollars is refused.
    pub fn check_budget(budget: f64) -> Result<()> {
        if !(budget.is_finite() && budget > 0.0) {
            return Err(crate::Error::invalid_input(format!(
                "the budget must be a positive number of US dollars, not {budget}: pass for example 0.5"
            )));
        }
        Ok(())
    }
}

/// Where a resume continues from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResumeFrom {
    /// The agent's id of the conversation (our session id, or a thread id the agent printed).
    pub agent_session_id: String,
}

/// When the runner closes the agent's stdin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StdinClose {
    /// Right after the stdin messages are written.
    AfterWrite,
    /// Once a terminal event (a result) has been parsed: agents that wait for more input.
    AfterResult,
    /// A conversation: stdin stays open while the turn runs, fed from the run's input file
    /// (so input reaches the agent from any process, and whoever supervises the run can
    /// change); the runner writes the caller's input there with [`Agent::input_line`] and
    /// closes stdin once a result has come and the agent has taken in every input sent
    /// (each comes back as a `message` with role `user`), or an interrupt ended the turn.
    Conversation,
}

/// Input for an agent while its turn runs (its capabilities say which kinds it takes).
#[derive(Debug, Clone, PartialEq)]
pub enum AgentInput {
    /// A message from the caller that steers the turn; `id` is a fresh UUID the line may
    /// carry.
    User {
        /// A fresh UUID.
        id: String,
        /// The caller's text.
        text: String,
    },
    /// The answer to one of the agent's permission requests.
    Permission {
        /// The agent's id of the request.
        request_id: String,
        /// The tool's input as the agent asked to run it (an allow without a change
        /// gives it back).
        input: serde_json::Value,
        /// Allow or deny.
        answer: crate::options::PermissionAnswer,
    },
    /// End the current turn without ending the process; `id` is a fresh UUID naming this
    /// request.
    Interrupt {
        /// A fresh UUID.
        id: String,
        /// The agent's id of the conversation, as the turn's `task.started` gave it (a
        /// protocol whose cancel names the session needs it); `None` before it came.
        agent_session_id: Option<String>,
    },
}

/// A program to run: no shell is ever involved.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// The program (a path or a name looked up on PATH).
    pub program: PathBuf,
    /// Its arguments, each one whole.
    pub args: Vec<OsString>,
    /// Variables to add to the scrubbed environment.
    pub env: Vec<(String, String)>,
    /// Lines written to stdin, each followed by a newline.
    pub stdin: Vec<String>,
    /// When to close stdin.
    pub close_stdin: StdinClose,
}

/// Turns one agent's output lines into events. One parser per run: it keeps state
/// such as tool uses waiting for their results.
pub trait AgentParser: Send {
    /// The events of one complete output line (without its newline). Never panics;
    /// a line it cannot read becomes a `message` with the text.
    fn parse_line(&mut self, line: &str) -> Vec<EventBody>;

    /// Events owed at the end of the stream (for example tool uses that never got a
    /// result), once the process has exited with `exit_code` (`None` when a signal ended
    /// it). An agent whose output has no result line of its own may end the run here
    /// with a terminal event (`task.finished` or `task.failed`); the runner uses it only
    /// when no output line already ended the run.
    fn finish(&mut self, exit_code: Option<i32>) -> Vec<EventBody> {
        let _ = exit_code;
        Vec::new()
    }

    /// The stdin lines the parser owes the agent after the lines it parsed so far, each
    /// given once: for a program that speaks a request/response protocol, the next request
    /// of its handshake or an answer to one of its requests. The runner appends them to the
    /// turn's input file (invoked with [`StdinClose::Conversation`]), unless the file holds
    /// them already: a parser replaying the same output owes the same lines, so a line is
    /// never given twice. They must follow from the output and the turn's request alone
    /// (see [`Agent::parser_for`]). None by default.
    fn owed_input(&mut self) -> Vec<String> {
        Vec::new()
    }
}

/// A coding agent that codehands can run.
pub trait Agent: Send + Sync {
    /// The agent's name, as saved in session records and given to `--agent`. Two agents
    /// of one runner never share a name.
    fn name(&self) -> AgentName;

    /// What this agent supports.
    fn capabilities(&self) -> AgentCapabilities;

    /// The standard protocol its program speaks on stdio (`"acp"`, the Agent Client
    /// Protocol), for listings; `None` for a program with output of its own.
    fn protocol(&self) -> Option<&'static str> {
        None
    }

    /// The names of the caller's environment variables this agent may receive
    /// (its provider's base URL and key). Everything else is scrubbed.
    fn provider_env(&self) -> Vec<String> {
        Vec::new()
    }

    /// The names of the variables that hold this agent's key or token, whatever they are
    /// called (a profile's `api-key-env`, say). The runner treats their values as secrets:
    /// they are cut out of every event, the transcript, stderr, the notes and the logs, as
    /// the values of variables whose names say KEY, TOKEN, SECRET, PASSWORD or CREDENTIAL
    /// always are. Naming a variable here does not pass it on: list it in
    /// [`Agent::provider_env`] too. None by default.
    fn secret_envs(&self) -> Vec<String> {
        Vec::new()
    }

    /// One line on what the agent is, for listings (`codehands agents`); `None` by default.
    fn description(&self) -> Option<String> {
        None
    }

    /// How to ask its program for its version; `None` when it cannot say.
    fn version_probe(&self) -> Option<VersionProbe> {
        None
    }

    /// Refuses, before anything is made, a repository this agent cannot work on (the fake
    /// agent takes only the demo's); every repository by default.
    fn preflight(&self, repo: &std::path::Path) -> Result<()> {
        let _ = repo;
        Ok(())
    }

    /// Refuses, before anything is made, a model this agent cannot take (`--model`, an
    /// attempt's `AGENT:MODEL`), saying which it takes. By default any name that is not
    /// blank, holds no control character and does not start with `-` (it would read as a
    /// flag); an adapter refuses more, such as another vendor's models.
    fn check_model(&self, model: &str) -> Result<()> {
        check_model_name(&self.name(), model)
    }

    /// What `model` (the agent's default when `None`) costs per million tokens, when the
    /// adapter knows: prices as data, for an agent that reports tokens but no cost, so its
    /// runs can be compared with others'. None by default.
    fn token_price(&self, model: Option<&str>) -> Option<TokenPrice> {
        let _ = model;
        None
    }

    /// The program, arguments, environment additions and stdin of one run.
    /// Refuses (as `InvalidInput` or `AgentUnavailable`) what it cannot run.
    fn invocation(&self, request: &AgentRequest) -> Result<Invocation>;

    /// A fresh parser for one run.
    fn parser(&self) -> Box<dyn AgentParser>;

    /// The parser of a run of `request`, for an agent whose parser owes the program lines
    /// made from the request ([`AgentParser::owed_input`]: the prompt in a protocol's
    /// request, the folder to work in). The runner makes it again from the same request when
    /// it takes a turn over. [`Agent::parser`] by default.
    fn parser_for(&self, request: &AgentRequest) -> Box<dyn AgentParser> {
        let _ = request;
        self.parser()
    }

    /// The stdin line that gives `input` to a running turn of this agent (invoked with
    /// [`StdinClose::Conversation`]). The same input always gives the same line: the
    /// runner finds what it already delivered by looking for it. Refuses
    /// ([`crate::ErrorKind::Unsupported`]) what the agent cannot take, by default everything.
    fn input_line(&self, input: &AgentInput) -> Result<String> {
        let _ = input;
        Err(crate::Error::new(
            crate::ErrorKind::Unsupported,
            format!("the {} agent takes no input while it runs", self.name()),
        ))
    }

    /// What the agent needs in a box besides its worktree: its install folder, its login
    /// files, the hosts it talks to without a base URL, the variables of its base URL. By
    /// default only base URLs: those of [`Agent::provider_env`] whose names end in
    /// `BASE_URL` or `API_BASE` (so an agent without a base URL set reaches no network).
    fn box_needs(&self) -> crate::traits::box_needs::BoxNeeds {
        crate::traits::box_needs::BoxNeeds::from_provider_env(&self.provider_env())
    }

    /// Warnings in what the agent wrote to stderr that say it could not do its work (a
    /// sandbox of its own that cannot start, say), in the agent's own words; the runner
    /// reports each as a note before the turn ends. None by default.
    fn stderr_warnings(&self, stderr: &str) -> Vec<String> {
        let _ = stderr;
        Vec::new()
    }
}

/// The check every model name passes ([`Agent::check_model`]'s default): not blank, no
/// control character, not starting with `-`.
pub fn check_model_name(agent: &AgentName, model: &str) -> Result<()> {
    if model.trim().is_empty() || model.chars().any(char::is_control) || model.starts_with('-') {
        return Err(crate::Error::invalid_input(format!(
            "the model name {model:?} for the {agent} agent is blank, holds a control character \
             or starts with `-`: pass a model name in the agent's own naming"
        )));
    }
    Ok(())
}

/// Refuses `model` for `agent` when it starts with one of `foreign` (another vendor's
/// models, lower-cased prefixes), naming the models the agent takes (`takes`).
pub fn refuse_foreign_model(
    agent: &AgentName,
    model: &str,
    foreign: &[&str],
    takes: &str,
) -> Result<()> {
    check_model_name(agent, model)?;
    let lower = model.to_ascii_lowercase();
    if let Some(prefix) = foreign.iter().find(|p| lower.starts_with(**p)) {
        return Err(crate::Error::invalid_input(format!(
            "the {agent} agent cannot take the model {model:?} (a `{prefix}…` model is another \
             vendor's): it takes {takes}"
        )));
    }
    Ok(())
}

/// A model's list price in US dollars per million tokens ([`Agent::token_price`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenPrice {
    /// Per million input tokens (cached ones counted alike: an upper bound).
    pub input_per_million: f64,
    /// Per million output tokens.
    pub output_per_million: f64,
}

impl TokenPrice {
    /// What `tokens` cost at this price.
    pub fn cost(&self, tokens: crate::session::TokenCounts) -> f64 {
        (tokens.input as f64 * self.input_per_million
            + tokens.output as f64 * self.output_per_million)
            / 1_000_000.0
    }
}
