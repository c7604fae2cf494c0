//! Tool calls to events. ACP reports a tool call as `tool_call` and then any number of
//! `tool_call_update`s that change some of its fields; we keep each call merged, and map it by
//! its `kind` once its `status` says enough:
//!
//! | kind | when | events |
//! |---|---|---|
//! | `execute` | first seen | `command.started` (the command from `rawInput.command`, else the title) |
//! | `execute` | `completed` / `failed` | `command.finished`, plus `test.result` for a test run (passed: no exit code but the raw output's, so `completed` and an output without failures) |
//! | `read`, `search` | `completed` | `file.read` for each location (else the input's path or pattern) |
//! | `edit`, `delete`, `move` | `completed` | `file.changed` for each diff or location |
//! | any but `execute` | `failed` | `message` (system) with what the agent said |
//! | `think`, `fetch`, `switch_mode`, `other` | `completed` | nothing |

use runner_contract::EventBody;
use runner_contract::event::{
    CommandStarted, FileChangeKind, FileChanged, FileRead, Message, MessageRole,
};
use runner_contract::testrun::{self, RanCommand};
use serde_json::Value;

use crate::wire::{Location, ToolCall, ToolContent};

/// One tool call as the updates so far describe it.
#[derive(Debug, Default)]
pub(super) struct Tool {
    pub call: ToolCall,
    started: bool,
    finished: bool,
}

impl Tool {
    /// Takes in what an update says (absent fields keep their value).
    pub fn merge(&mut self, update: ToolCall) {
        let call = &mut self.call;
        if call.tool_call_id.is_empty() {
            call.tool_call_id = update.tool_call_id;
        }
        macro_rules! take {
            ($($field:ident),*) => { $( if update.$field.is_some() { call.$field = update.$field; } )* };
        }
        take!(
            title, kind, status, content, locations, raw_input, raw_output
        );
    }

    fn kind(&self) -> &str {
        self.call.kind.as_deref().unwrap_or("other")
    }

    /// A short name for the tool: its kind (`execute`, `edit` …).
    pub fn name(&self) -> String {
        self.kind().to_owned()
    }

    /// What a person reads for it: the title, else the kind.
    pub fn label(&self) -> String {
        self.call.title.clone().unwrap_or_else(|| self.name())
    }

    fn done(&self) -> Option<bool> {
        match self.call.status.as_deref() {
            Some("completed") => Some(true),
            Some("failed") => Some(false),
            _ => None,
        }
    }

    fn id(&self) -> Option<String> {
        Some(self.call.tool_call_id.clone()).filter(|id| !id.is_empty())
    }

    /// The events its state now owes (each once).
    pub fn events(&mut self) -> Vec<EventBody> {
        let mut events = Vec::new();
        if self.kind() == "execute" {
            if !self.started {
                self.started = true;
                events.push(EventBody::CommandStarted(CommandStarted {
                    command: self.command(),
                    tool_use_id: self.id(),
                }));
            }
            if let Some(ok) = self.done().filter(|_| !self.finished) {
                self.finished = true;
                events.extend(finished_command(self.ran(ok), ok));
            }
            return events;
        }
        let Some(ok) = self.done().filter(|_| !self.finished) else {
            return events;
        };
        self.finished = true;
        if !ok {
            events.push(EventBody::Message(Message {
                text: format!("{} failed: {}", self.label(), self.output()),
                role: MessageRole::System,
                denied: false,
                tool: Some(self.name()),
            }));
            return events;
        }
        match self.kind() {
            "read" | "search" => events.extend(self.read_paths().into_iter().map(|path| {
                EventBody::FileRead(FileRead {
                    path,
                    tool: self.name(),
                    tool_use_id: self.id(),
                })
            })),
            "edit" | "delete" | "move" => {
                events.extend(self.changes().into_iter().map(|(path, change)| {
                    EventBody::FileChanged(FileChanged {
                        path,
                        tool: self.name(),
                        change,
                        tool_use_id: self.id(),
                    })
                }))
            }
            _ => {}
        }
        events
    }

    /// The end of a command the agent never said finished (its process ended first).
    pub fn cut_short(&mut self) -> Vec<EventBody> {
        if self.kind() != "execute" || !self.started || self.finished {
            return Vec::new();
        }
        self.finished = true;
        vec![testrun::command_finished(RanCommand {
            command: self.command(),
            exit_code: None,
            is_error: true,
            output: "the agent ended before this command did".into(),
            tool_use_id: self.id(),
        })]
    }

    fn command(&self) -> String {
        let from_input = match self.call.raw_input.as_ref().and_then(|i| i.get("command")) {
            Some(Value::String(command)) => Some(command.clone()),
            Some(Value::Array(words)) => Some(
                words
                    .iter()
                    .map(|w| w.as_str().map_or_else(|| w.to_string(), str::to_owned))
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            _ => None,
        };
        from_input.unwrap_or_else(|| self.label())
    }

    /// A finished command. ACP carries no exit code (but in a terminal's content, which we do
    /// not serve): one in the raw output counts, else it is unknown.
    fn ran(&self, ok: bool) -> RanCommand {
        let raw = self.call.raw_output.as_ref();
        let code = ["exit_code", "exitCode", "returncode", "return_code"]
            .iter()
            .find_map(|key| raw?.get(key)?.as_i64())
            .and_then(|c| i32::try_from(c).ok());
        RanCommand {
            command: self.command(),
            exit_code: code,
            is_error: !ok,
            output: self.output(),
            tool_use_id: self.id(),
        }
    }

    /// The tool's output as text: its text content, else the raw output's streams, else the
    /// raw output whole.
    fn output(&self) -> String {
        let texts: Vec<String> = self
            .call
            .content
            .iter()
            .flatten()
            .filter(|c| c.kind == "content")
            .filter_map(|c| c.content.as_ref()?.get("text")?.as_str().map(str::to_owned))
            .collect();
        if !texts.is_empty() {
            return texts.join("\n");
        }
        let Some(raw) = &self.call.raw_output else {
            return String::new();
        };
        let streams: Vec<&str> = ["stdout", "stderr", "output", "error", "message"]
            .iter()
            .filter_map(|key| raw.get(key)?.as_str())
            .filter(|s| !s.is_empty())
            .collect();
        match (streams.is_empty(), raw) {
            (false, _) => streams.join("\n"),
            (true, Value::String(text)) => text.clone(),
            (true, other) => other.to_string(),
        }
    }

    fn locations(&self) -> Vec<String> {
        self.call
            .locations
            .iter()
            .flatten()
            .map(|Location { path }| path.clone())
            .filter(|p| !p.is_empty())
            .collect()
    }

    /// A path named by the input, for a tool call that gives no location.
    fn input_path(&self, keys: &[&str]) -> Option<String> {
        let input = self.call.raw_input.as_ref()?;
        keys.iter()
            .find_map(|key| input.get(key)?.as_str().map(str::to_owned))
    }

    fn read_paths(&self) -> Vec<String> {
        let paths = self.locations();
        if !paths.is_empty() {
            return paths;
        }
        let named = self.input_path(&[
            "path",
            "file_path",
            "filePath",
            "abs_path",
            "pattern",
            "query",
        ]);
        vec![named.unwrap_or_else(|| self.label())]
    }

    fn changes(&self) -> Vec<(String, Option<FileChangeKind>)> {
        if self.kind() == "edit" {
            let diffs: Vec<(String, Option<FileChangeKind>)> = self
                .call
                .content
                .iter()
                .flatten()
                .filter(|c| c.kind == "diff")
                .filter_map(|ToolContent { path, old_text, .. }| {
                    let change = if old_text.is_some() {
                        FileChangeKind::Modified
                    } else {
                        FileChangeKind::Added
                    };
                    Some((path.clone()?, Some(change)))
                })
                .collect();
            if !diffs.is_empty() {
                return dedup(diffs);
            }
        }
        let mut paths = self.locations();
        if paths.is_empty() {
            paths.extend(self.input_path(&["path", "file_path", "filePath", "abs_path"]));
        }
        match self.kind() {
            "delete" => paths
                .into_iter()
                .map(|p| (p, Some(FileChangeKind::Deleted)))
                .collect(),
            // A move names where from and where to: the file is where it went.
            "move" => paths
                .pop()
                .map(|p| (p, Some(FileChangeKind::Renamed)))
                .into_iter()
                .collect(),
            _ => dedup(paths.into_iter().map(|p| (p, None)).collect()),
        }
    }
}

/// `command.finished` and, for a test run, `test.result`. Without an exit code, a test run
/// passed when the agent says the command succeeded (`ok`) and its output shows no failure
/// (an agent may call a command that exited 1 `completed`: the output still tells).
fn finished_command(ran: RanCommand, ok: bool) -> Vec<EventBody> {
    let known = ran.exit_code.is_some();
    let verdict = testrun::read_output(&ran.output);
    let mut events = testrun::finished(ran);
    for event in &mut events {
        if let EventBody::TestResult(result) = event
            && !known
        {
            result.passed = ok && !verdict.failed;
        }
    }
    events
}

/// The first change of each path (a tool may show one file twice, as asked and as done).
fn dedup(changes: Vec<(String, Option<FileChangeKind>)>) -> Vec<(String, Option<FileChangeKind>)> {
    let mut seen = std::collections::HashSet::new();
    changes
        .into_iter()
        .filter(|(path, _)| seen.insert(path.clone()))
        .collect()
}
