//! A sample codehands plugin: the agent `tee-notes` runs `tee NOTES.md` in the worktree
//! with the prompt on stdin, so the prompt becomes a new file (a change to approve) and
//! comes back on stdout, which runner-contract's text-lines parser turns into messages.

use runner_contract::text_lines::TextLinesParser;
use runner_contract::{
    Agent, AgentCapabilities, AgentName, AgentParser, AgentRequest, Error, ErrorKind, Invocation,
    Result, StdinClose, VersionProbe,
};

/// The file the agent writes, in the worktree.
const NOTES: &str = "NOTES.md";

/// `tee NOTES.md` as an agent.
struct TeeNotes;

impl Agent for TeeNotes {
    fn name(&self) -> AgentName {
        AgentName::parse("tee-notes").expect("a valid name")
    }

    fn capabilities(&self) -> AgentCapabilities {
        AgentCapabilities::default()
    }

    fn version_probe(&self) -> Option<VersionProbe> {
        Some(VersionProbe::dash_dash_version("tee", None))
    }

    fn invocation(&self, request: &AgentRequest) -> Result<Invocation> {
        request.check()?;
        if request.resume.is_some() {
            return Err(Error::new(
                ErrorKind::Unsupported,
                "the tee-notes agent cannot resume a session: start a new one",
            ));
        }
        Ok(Invocation {
            program: "tee".into(),
            args: vec![request.worktree.join(NOTES).into()],
            env: request.provider_env.clone(),
            // One stdin message per line: the runner ends each with a line break.
            stdin: request.prompt.split('\n').map(str::to_owned).collect(),
            close_stdin: StdinClose::AfterWrite,
        })
    }

    fn parser(&self) -> Box<dyn AgentParser> {
        Box::new(TextLinesParser::default())
    }
}

agent_plugin_abi::export_agent!(|| TeeNotes);
