//! Agent profiles: an agent described by a TOML file instead of a crate.
//!
//! A profile lives at `$CODEHANDS_HOME/agents/<name>.toml` (or is named for one command
//! with `--agent-file PATH`). It names the program, its arguments as a list in which
//! `{prompt}`, `{model}` and `{worktree}` are replaced only when they are a whole element,
//! how the prompt reaches the program, which built-in parser reads its output (or, with
//! `parser = "json-lines"`, how its own JSON lines map to events by field names), the
//! provider variables it may receive, and its capabilities. Everything is checked when the
//! file is read: an unknown key, a wrong type, a placeholder inside a larger string, a flag
//! that bypasses the agent's permission checks or a name taken by another agent is refused
//! with the file, the key and what to do. docs/adding-an-agent.md shows a file.
//!
//! A profile with `protocol = "acp"` names an agent that speaks the Agent Client Protocol on
//! stdio: it needs no parser and takes no `prompt` key (the prompt goes through the protocol);
//! `name`, `program` and `protocol` are a whole profile.

mod agent;
mod check;

use std::path::{Path, PathBuf};

use runner_contract::{AgentCapabilities, AgentName, Error, Result};
use serde::Deserialize;

pub use agent::ProfileAgent;

/// The largest profile file read, in bytes: a profile is a few lines.
const MAX_PROFILE_BYTES: u64 = 64 * 1024;

/// How the prompt reaches the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PromptVia {
    /// Written to stdin, then stdin is closed (the default: never on argv).
    #[default]
    Stdin,
    /// As the element `{prompt}` of `args`.
    Argument,
}

/// Which built-in parser reads the program's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ParserKind {
    /// Claude Code's stream-json lines.
    ClaudeStreamJson,
    /// Codex's `exec --json` lines.
    CodexJsonl,
    /// Plain text: each line a message; exit code 0 finishes the run, anything else fails it.
    Text,
    /// The program's own JSON lines, mapped by field names in the `[json-lines]` table.
    JsonLines,
    /// The Agent Client Protocol's client (`protocol = "acp"`, never named as `parser`).
    #[serde(skip)]
    Acp,
}

/// A protocol the program speaks on stdio, instead of printing lines for a parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum ProtocolKind {
    /// The Agent Client Protocol.
    Acp,
}

/// The provider variables a profile agent may receive from the caller's environment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ProviderVars {
    /// The variable holding the provider's base URL.
    #[serde(default)]
    pub base_url_env: Option<String>,
    /// The variable holding the provider's key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// The variable naming the agent's configuration folder.
    #[serde(default)]
    pub config_dir_env: Option<String>,
    /// The variable the agent reads its model from; set from `--model` when one is given.
    #[serde(default)]
    pub model_env: Option<String>,
    /// Further variable names to pass on, each by exact name.
    #[serde(default)]
    pub pass: Vec<String>,
}

/// Where a profile agent may connect from its box when no base URL is set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileNetwork {
    /// `host:port` the agent may reach through the box's allow-list proxy.
    #[serde(default)]
    pub allow: Vec<String>,
}

/// The capabilities a profile may claim.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileCapabilities {
    /// The program enforces a budget itself.
    #[serde(default)]
    pub budget: bool,
}

/// A profile file as written; [`Profile::read`] checks it whole.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct ProfileFile {
    name: Option<String>,
    description: Option<String>,
    program: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    prompt: Option<PromptVia>,
    #[serde(default)]
    parser: Option<ParserKind>,
    #[serde(default)]
    protocol: Option<ProtocolKind>,
    #[serde(default)]
    version_args: Option<Vec<String>>,
    #[serde(default)]
    provider: ProviderVars,
    #[serde(default)]
    capabilities: ProfileCapabilities,
    #[serde(default)]
    network: ProfileNetwork,
    #[serde(default)]
    json_lines: Option<runner_contract::json_lines::JsonLinesMap>,
}

/// A checked profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// The agent's name.
    pub name: AgentName,
    /// One line on what it is.
    pub description: Option<String>,
    /// The file it came from.
    pub path: PathBuf,
    /// The program: an absolute path or a bare name looked up on PATH.
    pub program: PathBuf,
    /// The argument template.
    pub args: Vec<String>,
    /// How the prompt reaches the program.
    pub prompt: PromptVia,
    /// Which parser reads its output ([`ParserKind::Acp`] for `protocol = "acp"`).
    pub parser: ParserKind,
    /// The arguments that make it print its version, if it can.
    pub version_args: Option<Vec<String>>,
    /// Its provider variables.
    pub provider: ProviderVars,
    /// What it claims to do beyond a plain run.
    pub capabilities: AgentCapabilities,
    /// Where it may connect from its box without a base URL.
    pub network: ProfileNetwork,
    /// How its JSON lines map to events, for [`ParserKind::JsonLines`].
    pub json_lines: Option<runner_contract::json_lines::JsonLinesMap>,
}

impl Profile {
    /// Reads and checks the profile at `path`. `expected_name` is the file's stem for a
    /// profile found in the home's `agents/` folder (the name inside must match it).
    pub fn read(path: &Path, expected_name: Option<&str>) -> Result<Self> {
        let text = read_small(path)?;
        Self::parse(&text, path, expected_name)
    }

    /// Parses and checks a profile's `text` as read from `path` (which errors name): what
    /// [`Profile::read`] does after reading the file. The fuzz targets (fuzz/) call it.
    pub fn parse(text: &str, path: &Path, expected_name: Option<&str>) -> Result<Self> {
        let file: ProfileFile = toml::from_str(text).map_err(|e| {
            refuse(
                path,
                &format!(
                    "{}: fix the file (the keys a profile takes are in docs/adding-an-agent.md)",
                    e.to_string().trim_end()
                ),
            )
        })?;
        check::profile(path, file, expected_name)
    }
}

fn read_small(path: &Path) -> Result<String> {
    let meta = std::fs::metadata(path).map_err(|e| {
        Error::invalid_input(format!(
            "cannot read the agent profile {}: {e}",
            path.display()
        ))
    })?;
    if !meta.is_file() {
        return Err(refuse(path, "is not a file: name a TOML file"));
    }
    if meta.len() > MAX_PROFILE_BYTES {
        return Err(refuse(
            path,
            &format!(
                "is {} bytes, over the {MAX_PROFILE_BYTES} a profile may have",
                meta.len()
            ),
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| {
        Error::invalid_input(format!(
            "cannot read the agent profile {}: {e}",
            path.display()
        ))
    })?;
    String::from_utf8(bytes).map_err(|_| refuse(path, "is not UTF-8 text: save it as UTF-8"))
}

/// An error about the profile at `path`.
fn refuse(path: &Path, what: &str) -> Error {
    Error::invalid_input(format!("agent profile {}: {what}", path.display()))
}
