//! The `codex exec --json` parser: one line in, zero or more events out.
//!
//! | Codex line | Event |
//! |---|---|
//! | `thread.started` | `task.started`, the thread id as `agentSessionId` (resume uses it) |
//! | `item.started` of `command_execution` | `command.started` |
//! | `item.completed` of `command_execution` | `command.finished`, plus `test.result` for a test run |
//! | `item.completed` of `file_change` | `file.changed` per path (a failed patch: a `message`) |
//! | `item.completed` of `agent_message` | `message` |
//! | `item.started` / `item.updated` of `todo_list` | `message` with the plan as a checklist |
//! | `item.completed` of `mcp_tool_call` | `message` naming the tool and how it ended |
//! | `item.completed` of `web_search` | `message` with the query |
//! | `item.completed` of `error` | `message` (role system): Codex's warnings |
//! | top-level `error` | `provider.status` when it names provider trouble (every retry, live), else `message` |
//! | `turn.completed` | `task.finished` with `usage` exactly as Codex reports it |
//! | `turn.failed` | `task.failed` (`auth_failed` for 401/403) |
//! | a line that is not JSON | `message` with the raw text |
//! | `reasoning`, `turn.started`, unknown types | skipped |
//!
//! Reasoning is skipped as Claude Code's thinking is: it is the model's scratch
//! work, not something a person acts on, and stays in the transcript.
//!
//! Seen with 0.163.0: a command that fails inside Codex's own sandbox (a write
//! outside the worktree) shows up in no item at all; the model still sees its
//! output. And a run whose commands all failed still ends in `turn.completed` with
//! exit code 0, so the outcome comes from these events, never from the exit code.

mod provider;
use runner_contract::testrun;
mod wire;

use std::collections::HashMap;

use runner_contract::event::{
    CommandFinished, CommandStarted, FailureKind, FileChangeKind, FileChanged, Message,
    MessageRole, ProviderState, TaskFailed, TaskFinished, TaskStarted,
};
use runner_contract::{AgentParser, EventBody};

use wire::{Item, ItemDetails, Line};

/// The tool name `file.changed` reports: Codex edits files only through patches.
const PATCH_TOOL: &str = "apply_patch";

/// The parser of one run.
#[derive(Debug, Default)]
pub(crate) struct CodexParser {
    /// Commands started and not yet finished, by item id.
    running: HashMap<String, String>,
    /// The last thing the model said, which becomes the run's result.
    last_message: Option<String>,
}

impl AgentParser for CodexParser {
    fn parse_line(&mut self, line: &str) -> Vec<EventBody> {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            return Vec::new();
        }
        let value: serde_json::Value = match serde_json::from_str(trimmed) {
            Ok(value) => value,
            Err(_) => return vec![system(line.to_owned())],
        };
        // A JSON line that is not one of ours (a number, an unknown shape) is skipped.
        match serde_json::from_value::<Line>(value) {
            Ok(parsed) => self.line(parsed),
            Err(_) => Vec::new(),
        }
    }

    fn finish(&mut self, _exit_code: Option<i32>) -> Vec<EventBody> {
        // Commands that never finished (the process ended mid-command).
        let mut pending: Vec<(String, String)> = self.running.drain().collect();
        pending.sort();
        pending
            .into_iter()
            .map(|(id, command)| {
                EventBody::CommandFinished(CommandFinished {
                    command,
                    exit_code: None,
                    is_error: true,
                    output: "(the command did not finish before the agent ended)".to_owned(),
                    tool_use_id: Some(id),
                })
            })
            .collect()
    }
}

impl CodexParser {
    fn line(&mut self, line: Line) -> Vec<EventBody> {
        match line {
            Line::ThreadStarted { thread_id } => vec![EventBody::TaskStarted(TaskStarted {
                agent_session_id: thread_id,
                ..TaskStarted::default()
            })],
            Line::ItemStarted { item } => self.item_started(item),
            Line::ItemUpdated { item } => match item.details {
                ItemDetails::TodoList { items } => vec![plan(&items)],
                _ => Vec::new(),
            },
            Line::ItemCompleted { item } => self.item_completed(item),
            Line::Error { message } => match provider::status(&message) {
                Some(status) => vec![EventBody::ProviderStatus(status)],
                None => vec![system(message)],
            },
            Line::TurnCompleted { usage } => vec![EventBody::TaskFinished(TaskFinished {
                result: self.last_message.clone(),
                usage,
                ..TaskFinished::default()
            })],
            Line::TurnFailed { error } => {
                let message = error.map(|e| e.message).unwrap_or_default();
                let reason = match provider::read(&message).state {
                    Some(ProviderState::AuthExpired) => FailureKind::AuthFailed,
                    _ => FailureKind::AgentError,
                };
                let message = if message.is_empty() {
                    "Codex reported a failed turn without a message; its stderr may say more"
                        .to_owned()
                } else {
                    message
                };
                vec![EventBody::TaskFailed(TaskFailed {
                    reason,
                    message,
                    stderr: None,
                    exit_code: None,
                    cost_usd: None,
                })]
            }
            Line::TurnStarted | Line::Other => Vec::new(),
        }
    }

    fn item_started(&mut self, item: Item) -> Vec<EventBody> {
        match item.details {
            ItemDetails::CommandExecution { command, .. } => {
                let command = unwrap_shell(&command);
                if let Some(id) = &item.id {
                    self.running.insert(id.clone(), command.clone());
                }
                vec![EventBody::CommandStarted(CommandStarted {
                    command,
                    tool_use_id: item.id,
                })]
            }
            ItemDetails::TodoList { items } => vec![plan(&items)],
            _ => Vec::new(),
        }
    }

    fn item_completed(&mut self, item: Item) -> Vec<EventBody> {
        let id = item.id;
        match item.details {
            ItemDetails::CommandExecution {
                command,
                aggregated_output,
                exit_code,
                status,
            } => {
                let mut events = Vec::new();
                let started = id.as_ref().and_then(|id| self.running.remove(id));
                let command = match started {
                    Some(command) => command,
                    None => {
                        // Never seen starting: start it now so every finish has its start.
                        let command = unwrap_shell(&command);
                        events.push(EventBody::CommandStarted(CommandStarted {
                            command: command.clone(),
                            tool_use_id: id.clone(),
                        }));
                        command
                    }
                };
                let is_error = status.as_deref().is_some_and(|s| s != "completed")
                    || exit_code.is_some_and(|c| c != 0);
                events.extend(testrun::finished(testrun::RanCommand {
                    command,
                    exit_code,
                    is_error,
                    output: aggregated_output,
                    tool_use_id: id,
                }));
                events
            }
            ItemDetails::FileChange { changes, status } => {
                if status.as_deref().is_some_and(|s| s != "completed") {
                    let paths: Vec<&str> = changes.iter().map(|c| c.path.as_str()).collect();
                    return vec![EventBody::Message(Message {
                        text: format!("a patch was not applied to {}", paths.join(", ")),
                        role: MessageRole::System,
                        denied: false,
                        tool: Some(PATCH_TOOL.to_owned()),
                    })];
                }
                changes
                    .into_iter()
                    .map(|change| {
                        EventBody::FileChanged(FileChanged {
                            change: match change.kind.as_str() {
                                "add" => Some(FileChangeKind::Added),
                                "delete" => Some(FileChangeKind::Deleted),
                                "update" => Some(FileChangeKind::Modified),
                                _ => None,
                            },
                            path: change.path,
                            tool: PATCH_TOOL.to_owned(),
                            tool_use_id: id.clone(),
                        })
                    })
                    .collect()
            }
            ItemDetails::AgentMessage { text } => {
                self.last_message = Some(text.clone());
                vec![EventBody::Message(Message {
                    text,
                    ..Message::default()
                })]
            }
            ItemDetails::McpToolCall {
                server,
                tool,
                status,
                error,
            } => {
                let name = format!("{server}.{tool}");
                let how = status.unwrap_or_else(|| "ended".to_owned());
                let why = error
                    .as_ref()
                    .and_then(|e| e.get("message").and_then(|m| m.as_str()).map(str::to_owned))
                    .map_or_else(String::new, |m| format!(": {m}"));
                vec![EventBody::Message(Message {
                    text: format!("MCP tool {name} {how}{why}"),
                    role: MessageRole::System,
                    denied: false,
                    tool: Some(name),
                })]
            }
            ItemDetails::WebSearch { query } => vec![EventBody::Message(Message {
                text: format!("web search: {query}"),
                role: MessageRole::System,
                denied: false,
                tool: Some("web_search".to_owned()),
            })],
            ItemDetails::Error { message } => vec![system(message)],
            ItemDetails::TodoList { .. } | ItemDetails::Other => Vec::new(),
        }
    }
}

fn system(text: String) -> EventBody {
    EventBody::Message(Message {
        text,
        role: MessageRole::System,
        ..Message::default()
    })
}

/// The plan as a checklist, one entry a line.
fn plan(items: &[wire::Todo]) -> EventBody {
    let lines: Vec<String> = items
        .iter()
        .map(|t| format!("[{}] {}", if t.completed { "x" } else { " " }, t.text))
        .collect();
    EventBody::Message(Message {
        text: format!("Plan:\n{}", lines.join("\n")),
        ..Message::default()
    })
}

/// Codex reports each command wrapped in its shell (`/bin/bash -lc 'npm test'`):
/// the command the model asked for is the script inside. Anything that is not
/// exactly `<shell> -c|-lc <script>` is kept as it is.
fn unwrap_shell(command: &str) -> String {
    let Some(words) = split_words(command) else {
        return command.to_owned();
    };
    match words.as_slice() {
        [shell, flag, script]
            if matches!(
                shell.rsplit('/').next(),
                Some("bash" | "sh" | "zsh" | "dash")
            ) && matches!(flag.as_str(), "-c" | "-lc") =>
        {
            script.clone()
        }
        _ => command.to_owned(),
    }
}

/// POSIX shell word splitting for quoting only (no expansion); `None` when a quote is open.
fn split_words(text: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => word.push(c),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            c @ ('"' | '\\' | '$' | '`') => word.push(c),
                            '\n' => {}
                            c => {
                                word.push('\\');
                                word.push(c);
                            }
                        },
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                word.push(chars.next()?);
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Some(words)
}

#[cfg(test)]
mod tests;
