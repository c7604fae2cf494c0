//! The JSON that crosses the boundary: mirrors of runner-contract's agent types (which are
//! not serde), the answer envelope, and the conversions both ways.
//!
//! Paths, arguments and environment values cross as UTF-8 strings; a plugin whose
//! invocation holds anything else answers an error rather than a changed value.

use std::ffi::OsString;
use std::path::PathBuf;

use runner_contract::{
    AgentCapabilities, AgentName, AgentRequest, BoxNeeds, ErrorKind, Invocation, LoginFile,
    ResumeFrom, SessionId, StdinClose, VersionProbe,
};
use serde::{Deserialize, Serialize};

/// What a plugin says about one agent it exports (the `describe` answer holds a list).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentInfo {
    /// The agent's name, checked by the host as any other.
    pub name: AgentName,
    /// What it supports.
    pub capabilities: AgentCapabilities,
    /// The provider variables it may receive.
    #[serde(default)]
    pub provider_env: Vec<String>,
    /// How to ask its program for its version.
    #[serde(default)]
    pub version_probe: Option<VersionProbeWire>,
    /// The variables that hold its key whatever their names (`Agent::secret_envs`), written
    /// only when there are any, so a host of an older version still reads the rest.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secret_envs: Vec<String>,
    /// One line on what it is (`Agent::description`), written only when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// What it needs in a box, when that is more than its base URLs (written only then, so
    /// a host of an older version still reads what a plugin without such needs says).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub box_needs: Option<BoxNeedsWire>,
}

/// [`BoxNeeds`] as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BoxNeedsWire {
    /// Folders or files read-only at their own path.
    #[serde(default)]
    pub read_only: Vec<String>,
    /// Login files relative to the caller's home, and whether each is copied.
    #[serde(default)]
    pub login: Vec<LoginFileWire>,
    /// `host:port` reached through the proxy without a base URL.
    #[serde(default)]
    pub hosts: Vec<String>,
    /// The variables that may hold base URLs.
    #[serde(default)]
    pub base_url_envs: Vec<String>,
    /// The variables that name the agent's own state folder.
    #[serde(default)]
    pub state_envs: Vec<String>,
    /// The agent runs its own sandbox in the box (written only when it does, so a host of
    /// an older version still reads what other plugins say).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub nested_sandbox: bool,
}

/// [`LoginFile`] as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LoginFileWire {
    /// Relative to the caller's home.
    pub path: String,
    /// Copied once rather than bound read-only.
    #[serde(default)]
    pub copy: bool,
}

impl TryFrom<&BoxNeeds> for BoxNeedsWire {
    type Error = String;

    fn try_from(needs: &BoxNeeds) -> Result<Self, String> {
        let text = |p: &std::path::Path| {
            p.to_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("the path {p:?} is not UTF-8"))
        };
        Ok(Self {
            read_only: needs
                .read_only
                .iter()
                .map(|p| text(p))
                .collect::<Result<_, _>>()?,
            login: needs
                .login
                .iter()
                .map(|l| {
                    Ok(LoginFileWire {
                        path: text(&l.path)?,
                        copy: l.copy,
                    })
                })
                .collect::<Result<_, String>>()?,
            hosts: needs.hosts.clone(),
            base_url_envs: needs.base_url_envs.clone(),
            state_envs: needs.state_envs.clone(),
            nested_sandbox: needs.nested_sandbox,
        })
    }
}

impl From<BoxNeedsWire> for BoxNeeds {
    fn from(wire: BoxNeedsWire) -> Self {
        Self {
            read_only: wire.read_only.into_iter().map(PathBuf::from).collect(),
            login: wire
                .login
                .into_iter()
                .map(|l| LoginFile {
                    path: l.path.into(),
                    copy: l.copy,
                })
                .collect(),
            hosts: wire.hosts,
            base_url_envs: wire.base_url_envs,
            state_envs: wire.state_envs,
            nested_sandbox: wire.nested_sandbox,
        }
    }
}

/// [`VersionProbe`] as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VersionProbeWire {
    /// The program.
    pub program: String,
    /// The arguments that make it print its version.
    #[serde(default)]
    pub args: Vec<String>,
    /// The version the plugin's tests ran.
    #[serde(default)]
    pub tested: Option<String>,
}

/// [`AgentRequest`] as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RequestWire {
    /// Our session id.
    pub session_id: SessionId,
    /// The worktree.
    pub worktree: String,
    /// The prompt.
    pub prompt: String,
    /// The model.
    #[serde(default)]
    pub model: Option<String>,
    /// The budget, US dollars.
    pub budget_usd: f64,
    /// Repo notes.
    #[serde(default)]
    pub notes: Option<String>,
    /// The same notes in a private file.
    #[serde(default)]
    pub notes_file: Option<String>,
    /// The repo's test command.
    #[serde(default)]
    pub test_command: Option<String>,
    /// The agent's own conversation id, for a resume.
    #[serde(default)]
    pub resume: Option<String>,
    /// The provider variables the runner passes on, as name and value pairs.
    #[serde(default)]
    pub provider_env: Vec<(String, String)>,
    /// Deny or ask, for tools outside the allow list (absent from an older host: deny).
    #[serde(default)]
    pub permissions: runner_contract::PermissionMode,
    /// Read-only tools only (a workflow's plan or review phase; absent from an older host:
    /// false). The runner checks the worktree after the turn whatever the plugin does.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
}

/// [`StdinClose`] as JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StdinCloseWire {
    /// Right after the stdin lines are written.
    AfterWrite,
    /// Once a terminal event has been parsed.
    AfterResult,
}

/// [`Invocation`] as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InvocationWire {
    /// The program.
    pub program: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables to add to the scrubbed environment.
    #[serde(default)]
    pub env: Vec<(String, String)>,
    /// Lines for stdin.
    #[serde(default)]
    pub stdin: Vec<String>,
    /// When to close stdin.
    pub close_stdin: StdinCloseWire,
}

/// Every answer: `{"ok": value}` or `{"error": {"kind", "message"}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum Reply<T> {
    /// The call's value.
    Ok(T),
    /// Why there is none.
    Error(ErrorWire),
}

/// An error answered by a plugin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ErrorWire {
    /// What kind of failure.
    pub kind: ErrorKindWire,
    /// What was wrong and what to do.
    pub message: String,
}

/// The kinds of error a plugin can answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorKindWire {
    /// The agent refused the request (`ErrorKind::InvalidInput`).
    InvalidInput,
    /// The agent's program cannot run (`ErrorKind::AgentUnavailable`).
    AgentUnavailable,
    /// The agent does not do that (`ErrorKind::Unsupported`).
    Unsupported,
    /// The call panicked inside the plugin.
    Panicked,
    /// Anything else, including a bad call (an unknown agent index, text that is not UTF-8).
    Internal,
}

impl ErrorKindWire {
    /// The kind a runner-contract error travels as.
    pub fn of(kind: ErrorKind) -> Self {
        match kind {
            ErrorKind::InvalidInput => Self::InvalidInput,
            ErrorKind::AgentUnavailable => Self::AgentUnavailable,
            ErrorKind::Unsupported => Self::Unsupported,
            _ => Self::Internal,
        }
    }

    /// The runner-contract kind it comes back as.
    pub fn kind(self) -> ErrorKind {
        match self {
            Self::InvalidInput => ErrorKind::InvalidInput,
            Self::AgentUnavailable => ErrorKind::AgentUnavailable,
            Self::Unsupported => ErrorKind::Unsupported,
            Self::Panicked | Self::Internal => ErrorKind::Internal,
        }
    }
}

impl TryFrom<&AgentRequest> for RequestWire {
    type Error = String;
    fn try_from(request: &AgentRequest) -> Result<Self, String> {
        Ok(Self {
            session_id: request.session_id,
            worktree: utf8(
                request.worktree.clone().into_os_string(),
                "the worktree path",
            )?,
            prompt: request.prompt.clone(),
            model: request.model.clone(),
            budget_usd: request.budget_usd,
            notes: request.notes.clone(),
            notes_file: request
                .notes_file
                .clone()
                .map(|path| utf8(path.into_os_string(), "the notes file's path"))
                .transpose()?,
            test_command: request.test_command.clone(),
            resume: request.resume.as_ref().map(|r| r.agent_session_id.clone()),
            provider_env: request.provider_env.clone(),
            permissions: request.permissions,
            read_only: request.read_only,
        })
    }
}

impl From<RequestWire> for AgentRequest {
    fn from(wire: RequestWire) -> Self {
        Self {
            session_id: wire.session_id,
            worktree: PathBuf::from(wire.worktree),
            prompt: wire.prompt,
            model: wire.model,
            budget_usd: wire.budget_usd,
            notes: wire.notes,
            notes_file: wire.notes_file.map(PathBuf::from),
            test_command: wire.test_command,
            resume: wire
                .resume
                .map(|agent_session_id| ResumeFrom { agent_session_id }),
            provider_env: wire.provider_env,
            permissions: wire.permissions,
            read_only: wire.read_only,
            // The ABI carries no tool policy: only Claude Code's adapter reads it, and a
            // plugin's agent keeps its own (ARCHITECTURE.md, "agent-claude").
            tools: runner_contract::ToolPolicy::default(),
        }
    }
}

impl TryFrom<Invocation> for InvocationWire {
    type Error = String;
    fn try_from(invocation: Invocation) -> Result<Self, String> {
        Ok(Self {
            program: utf8(invocation.program.into_os_string(), "the program")?,
            args: invocation
                .args
                .into_iter()
                .map(|arg| utf8(arg, "an argument"))
                .collect::<Result<_, _>>()?,
            env: invocation.env,
            stdin: invocation.stdin,
            close_stdin: match invocation.close_stdin {
                StdinClose::AfterWrite => StdinCloseWire::AfterWrite,
                StdinClose::AfterResult => StdinCloseWire::AfterResult,
                // The ABI carries no input lines for a turn in flight (version 1).
                StdinClose::Conversation => {
                    return Err(
                        "a plugin agent cannot take input while it runs (ABI version 1): \
                         close its stdin after the write or after the result"
                            .into(),
                    );
                }
            },
        })
    }
}

impl From<InvocationWire> for Invocation {
    fn from(wire: InvocationWire) -> Self {
        Self {
            program: PathBuf::from(wire.program),
            args: wire.args.into_iter().map(OsString::from).collect(),
            env: wire.env,
            stdin: wire.stdin,
            close_stdin: match wire.close_stdin {
                StdinCloseWire::AfterWrite => StdinClose::AfterWrite,
                StdinCloseWire::AfterResult => StdinClose::AfterResult,
            },
        }
    }
}

impl TryFrom<VersionProbe> for VersionProbeWire {
    type Error = String;
    fn try_from(probe: VersionProbe) -> Result<Self, String> {
        Ok(Self {
            program: utf8(
                probe.program.into_os_string(),
                "the version probe's program",
            )?,
            args: probe
                .args
                .into_iter()
                .map(|arg| utf8(arg, "a version probe argument"))
                .collect::<Result<_, _>>()?,
            tested: probe.tested,
        })
    }
}

impl From<VersionProbeWire> for VersionProbe {
    fn from(wire: VersionProbeWire) -> Self {
        Self {
            program: PathBuf::from(wire.program),
            args: wire.args.into_iter().map(OsString::from).collect(),
            tested: wire.tested,
        }
    }
}

fn utf8(text: OsString, what: &str) -> Result<String, String> {
    text.into_string().map_err(|text| {
        format!("{what} ({text:?}) is not UTF-8, which the plugin ABI cannot carry")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> AgentRequest {
        AgentRequest {
            permissions: Default::default(),
            session_id: SessionId::parse("3f2a9c1e-0b7d-4c55-9a57-2f0d8e6b1a42").unwrap(),
            worktree: "/tmp/wt".into(),
            prompt: "--fix everything".into(),
            model: Some("m".into()),
            budget_usd: 2.5,
            notes: Some("notes".into()),
            notes_file: Some("/tmp/run/notes.md".into()),
            test_command: Some("cargo test".into()),
            resume: Some(ResumeFrom {
                agent_session_id: "thread-1".into(),
            }),
            provider_env: vec![("OPENAI_BASE_URL".into(), "http://127.0.0.1:1".into())],
            read_only: true,
            tools: Default::default(),
        }
    }

    #[test]
    fn read_only_is_false_unless_said() {
        let plain = AgentRequest {
            read_only: false,
            ..request()
        };
        let json = serde_json::to_string(&RequestWire::try_from(&plain).unwrap()).unwrap();
        assert!(
            !json.contains("readOnly"),
            "an older plugin reads it: {json}"
        );
        let back = AgentRequest::from(serde_json::from_str::<RequestWire>(&json).unwrap());
        assert!(!back.read_only);
        let json = serde_json::to_string(&RequestWire::try_from(&request()).unwrap()).unwrap();
        assert!(json.contains(r#""readOnly":true"#), "{json}");
    }

    #[test]
    fn a_request_crosses_whole() {
        let json = serde_json::to_string(&RequestWire::try_from(&request()).unwrap()).unwrap();
        let back = AgentRequest::from(serde_json::from_str::<RequestWire>(&json).unwrap());
        assert_eq!(format!("{back:?}"), format!("{:?}", request()));
    }

    #[test]
    fn an_invocation_crosses_whole() {
        let invocation = Invocation {
            program: "/usr/bin/tee".into(),
            args: vec!["a b".into(), "--x".into()],
            env: vec![("K".into(), "v".into())],
            stdin: vec!["line".into()],
            close_stdin: StdinClose::AfterResult,
        };
        let wire = InvocationWire::try_from(invocation.clone()).unwrap();
        let json = serde_json::to_string(&wire).unwrap();
        assert!(json.contains(r#""closeStdin":"after-result""#), "{json}");
        let back = Invocation::from(serde_json::from_str::<InvocationWire>(&json).unwrap());
        assert_eq!(format!("{back:?}"), format!("{invocation:?}"));
    }

    #[test]
    fn an_argument_that_is_not_utf8_is_refused_not_changed() {
        use std::os::unix::ffi::OsStringExt;
        let invocation = Invocation {
            program: "p".into(),
            args: vec![OsString::from_vec(vec![0xff, b'x'])],
            env: Vec::new(),
            stdin: Vec::new(),
            close_stdin: StdinClose::AfterWrite,
        };
        let err = InvocationWire::try_from(invocation).unwrap_err();
        assert!(err.contains("not UTF-8"), "{err}");
    }

    #[test]
    fn replies_are_ok_or_error() {
        let ok: Reply<Vec<u8>> = serde_json::from_str(r#"{"ok":[1]}"#).unwrap();
        assert_eq!(ok, Reply::Ok(vec![1]));
        let err: Reply<Vec<u8>> =
            serde_json::from_str(r#"{"error":{"kind":"panicked","message":"boom"}}"#).unwrap();
        assert_eq!(
            err,
            Reply::Error(ErrorWire {
                kind: ErrorKindWire::Panicked,
                message: "boom".into()
            })
        );
        assert!(serde_json::from_str::<Reply<Vec<u8>>>(r#"{"ok":[1],"x":2}"#).is_err());
        assert!(serde_json::from_str::<Reply<Vec<u8>>>(r#"[1]"#).is_err());
    }
}
