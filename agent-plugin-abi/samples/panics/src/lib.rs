//! A sample codehands plugin whose agents panic, to prove the ABI's `catch_unwind`:
//! `panics-on-start` in `invocation`, `panics-in-parser` in `parse_line` (its program is
//! `tee`, as in the `tee` sample, so the run gets as far as a line of output).

use runner_contract::{
    Agent, AgentCapabilities, AgentName, AgentParser, AgentRequest, EventBody, Invocation, Result,
    StdinClose,
};

/// Which call panics.
struct Panics {
    in_parser: bool,
}

/// A parser that panics on the first line.
struct PanickingParser;

impl AgentParser for PanickingParser {
    fn parse_line(&mut self, line: &str) -> Vec<EventBody> {
        panic!("the sample parser panics on {line:?}");
    }
}

impl Agent for Panics {
    fn name(&self) -> AgentName {
        let name = if self.in_parser {
            "panics-in-parser"
        } else {
            "panics-on-start"
        };
        AgentName::parse(name).expect("a valid name")
    }

    fn capabilities(&self) -> AgentCapabilities {
        AgentCapabilities::default()
    }

    fn invocation(&self, request: &AgentRequest) -> Result<Invocation> {
        if !self.in_parser {
            panic!("the sample agent panics in invocation");
        }
        Ok(Invocation {
            program: "tee".into(),
            args: vec![request.worktree.join("NOTES.md").into()],
            env: Vec::new(),
            stdin: vec![request.prompt.clone()],
            close_stdin: StdinClose::AfterWrite,
        })
    }

    fn parser(&self) -> Box<dyn AgentParser> {
        Box::new(PanickingParser)
    }
}

agent_plugin_abi::export_agent!(|| Panics { in_parser: false }, || Panics {
    in_parser: true
},);
