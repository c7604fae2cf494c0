//! The host's side: [`load`] opens a plugin library and returns its agents as
//! `runner_contract::Agent`s, each call going through the checked table.
//!
//! A library that cannot be loaded (no file, a symbolic link, a file or folder any user may
//! write, not a library, no entry symbol, another ABI version, a panic or garbage while
//! listing its agents) is an error naming the file and what to do. After that, a failing call is the run's problem, not the process's: an
//! invocation error fails the start, and a parser that panics or answers garbage ends
//! its run with a `task.failed` naming the plugin.

mod library;
mod placement;

use std::path::Path;
use std::sync::Arc;

use runner_contract::event::{FailureKind, TaskFailed};
use runner_contract::{
    Agent, AgentCapabilities, AgentName, AgentParser, AgentRequest, Error, EventBody, Invocation,
    Result, VersionProbe,
};

use crate::wire::{AgentInfo, ErrorKindWire, InvocationWire, RequestWire};
use library::{CallError, Library, Parser};

/// Loads the plugin library at `path` for good and returns the agents it exports.
pub fn load(path: &Path) -> Result<Vec<Arc<dyn Agent>>> {
    let library = Library::open(path).map_err(Error::invalid_input)?;
    let infos: Vec<AgentInfo> = library.describe().map_err(|e| {
        Error::invalid_input(format!(
            "{} cannot be loaded: {}: fix the plugin or remove it",
            library.path().display(),
            explain(&e, "describe")
        ))
    })?;
    if infos.is_empty() {
        return Err(Error::invalid_input(format!(
            "{} exports no agent: give agent_plugin_abi::export_agent! at least one",
            library.path().display()
        )));
    }
    Ok(infos
        .into_iter()
        .zip(0u32..)
        .map(|(info, index)| {
            Arc::new(PluginAgent {
                library,
                index,
                info,
            }) as Arc<dyn Agent>
        })
        .collect())
}

/// One agent of a loaded plugin. What the plugin said about it at load time is kept:
/// only invocations and parsers call in again.
#[derive(Debug)]
struct PluginAgent {
    library: &'static Library,
    index: u32,
    info: AgentInfo,
}

impl PluginAgent {
    /// "the plugin /path (agent `name`)", for messages.
    fn who(&self) -> String {
        format!(
            "the plugin {} (agent `{}`)",
            self.library.path().display(),
            self.info.name
        )
    }
}

impl Agent for PluginAgent {
    fn name(&self) -> AgentName {
        self.info.name.clone()
    }

    fn capabilities(&self) -> AgentCapabilities {
        self.info.capabilities
    }

    fn provider_env(&self) -> Vec<String> {
        self.info.provider_env.clone()
    }

    fn secret_envs(&self) -> Vec<String> {
        self.info.secret_envs.clone()
    }

    fn description(&self) -> Option<String> {
        self.info.description.clone()
    }

    fn version_probe(&self) -> Option<VersionProbe> {
        self.info.version_probe.clone().map(VersionProbe::from)
    }

    fn box_needs(&self) -> runner_contract::BoxNeeds {
        match &self.info.box_needs {
            Some(needs) => needs.clone().into(),
            None => runner_contract::BoxNeeds::from_provider_env(&self.info.provider_env),
        }
    }

    fn invocation(&self, request: &AgentRequest) -> Result<Invocation> {
        let request = RequestWire::try_from(request)
            .map_err(|why| Error::invalid_input(format!("{}: {why}", self.who())))?;
        match self
            .library
            .invocation::<_, InvocationWire>(self.index, &request)
        {
            Ok(invocation) => Ok(Invocation::from(invocation)),
            // The agent's own refusal (a resume it cannot do, say) reads as any agent's.
            Err(CallError::Answered(error)) if error.kind != ErrorKindWire::Panicked => {
                Err(Error::new(error.kind.kind(), error.message))
            }
            Err(e) => Err(Error::internal(format!(
                "{}: {}: report it to the plugin's authors, or use another agent",
                self.who(),
                explain(&e, "invocation")
            ))),
        }
    }

    fn parser(&self) -> Box<dyn AgentParser> {
        Box::new(PluginParser {
            parser: self.library.parser_new(self.index),
            who: self.who(),
            failed: false,
        })
    }
}

/// A plugin's parser; once it fails, the run ends with a `task.failed` and it is not
/// called again.
struct PluginParser {
    parser: Option<Parser>,
    who: String,
    failed: bool,
}

impl PluginParser {
    fn fail(&mut self, why: String) -> Vec<EventBody> {
        self.failed = true;
        self.parser = None;
        vec![EventBody::TaskFailed(TaskFailed {
            reason: FailureKind::Internal,
            message: format!(
                "{}: {why}; the rest of its output is only in the transcript: fix the plugin \
                 or use another agent",
                self.who
            ),
            stderr: None,
            exit_code: None,
            cost_usd: None,
        })]
    }

    fn call(
        &mut self,
        what: &str,
        call: impl FnOnce(&mut Parser) -> std::result::Result<Vec<EventBody>, CallError>,
    ) -> Vec<EventBody> {
        if self.failed {
            return Vec::new();
        }
        let Some(parser) = self.parser.as_mut() else {
            return self.fail("it could not make a parser (it panicked, or lost the agent)".into());
        };
        match call(parser) {
            Ok(events) => events,
            Err(e) => self.fail(explain(&e, what)),
        }
    }
}

impl AgentParser for PluginParser {
    fn parse_line(&mut self, line: &str) -> Vec<EventBody> {
        self.call("parse_line", |parser| parser.parse_line(line))
    }

    fn finish(&mut self, exit_code: Option<i32>) -> Vec<EventBody> {
        self.call("parser_finish", |parser| parser.finish(exit_code))
    }
}

/// Reads `bytes` as each answer the host takes from a plugin (`describe`, `invocation`,
/// `parse_line`/`parser_finish`) and turns what decodes into the host's types, as [`load`],
/// an invocation and a plugin parser do; returns each answer's outcome in words. No library
/// is involved, so the fuzz targets (fuzz/) can feed it any bytes.
pub fn read_answers(bytes: &[u8]) -> Vec<std::result::Result<String, String>> {
    let describe = library::decode::<Vec<AgentInfo>>(bytes).map(|infos| {
        let probes = infos
            .into_iter()
            .map(|info| info.version_probe.map(VersionProbe::from));
        format!("{} agents", probes.count())
    });
    let invocation = library::decode::<InvocationWire>(bytes)
        .map(|wire| format!("{:?}", Invocation::from(wire).program));
    let events = library::decode::<Vec<EventBody>>(bytes).map(|events| format!("{events:?}"));
    [
        (describe, "describe"),
        (invocation, "invocation"),
        (events, "parse_line"),
    ]
    .into_iter()
    .map(|(outcome, what)| outcome.map_err(|e| explain(&e, what)))
    .collect()
}

/// A failed call in words: "it panicked in …", "answered … with garbage: …".
fn explain(error: &CallError, what: &str) -> String {
    match error {
        CallError::Answered(error) if error.kind == ErrorKindWire::Panicked => {
            error.message.clone()
        }
        CallError::Answered(error) => {
            format!("it answered {what} with an error: {}", error.message)
        }
        CallError::Garbage(why) => format!("it answered {what} with garbage: {why}"),
    }
}
