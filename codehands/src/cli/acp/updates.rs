//! Our events as ACP `session/update`s, for `codehands acp`: the client sees the inner
//! agent's messages, its tool calls with their status, the tests, the diff and the cost.
//!
//! | event | update |
//! |---|---|
//! | `message` (assistant / user / system) | `agent_message_chunk` / `user_message_chunk` (in a replay only: live, the client shows its own prompt) / `agent_thought_chunk` |
//! | `file.read`, `file.changed` | `tool_call`, `completed`, kind `read` / `edit` (`delete`, `move`) with the file |
//! | `command.started` | `tool_call`, `in_progress`, kind `execute` |
//! | `command.finished` | `tool_call_update`, `completed` or `failed`, the output |
//! | `test.result`, `provider.status` | `agent_thought_chunk` |
//! | `task.finished` | `agent_message_chunk` with the diff stat, `usage_update` with the session's cost so far and the context where the agent said it |
//! | the rest | nothing here (the turn's end and permission requests are the session's) |

use std::collections::HashMap;
use std::path::Path;

use runner_contract::event::{FileChangeKind, MessageRole};
use runner_contract::{DiffStat, Event, EventBody};
use serde_json::{Value, json};

/// The most of a command's output sent to the client (its end).
const OUTPUT_KEEP: usize = 8 * 1024;

/// Makes the updates of one ACP session's events; it pairs each command's end with its start
/// and adds up the session's cost.
#[derive(Debug, Default)]
pub(super) struct Updates {
    /// The tool call id of each command started and not finished, by command line.
    commands: HashMap<String, Vec<String>>,
    /// Whether the events are a session's history, sent for `session/load`.
    replay: bool,
    /// The cost of the session's turns so far, in US dollars (ACP's `cost` is the session's).
    spent: f64,
}

impl Updates {
    /// The updates of a session's history, replayed for `session/load`: the person's own
    /// messages are sent too.
    pub(super) fn replaying() -> Self {
        Self {
            replay: true,
            ..Self::default()
        }
    }

    /// The same session's updates from now on, live, its cost carried on.
    pub(super) fn live(&self) -> Self {
        Self {
            spent: self.spent,
            ..Self::default()
        }
    }

    /// The `update` objects of `event` (the `params.update` of `session/update`); file
    /// paths are made absolute under `worktree`.
    pub(super) fn of(&mut self, event: &Event, worktree: &Path) -> Vec<Value> {
        let tool_id = |id: &Option<String>| {
            id.clone()
                .map(|id| format!("{id}-{}", event.seq))
                .unwrap_or_else(|| format!("event-{}", event.seq))
        };
        match &event.body {
            EventBody::Message(message) => {
                let kind = match message.role {
                    MessageRole::Assistant => "agent_message_chunk",
                    MessageRole::User if self.replay => "user_message_chunk",
                    // Live, the client shows the prompt it sent itself.
                    MessageRole::User => return Vec::new(),
                    MessageRole::System => "agent_thought_chunk",
                };
                vec![chunk(kind, &message.text)]
            }
            EventBody::FileRead(read) => vec![json!({
                "sessionUpdate": "tool_call",
                "toolCallId": tool_id(&read.tool_use_id),
                "title": format!("Read {}", read.path),
                "kind": "read",
                "status": "completed",
                "locations": [{ "path": absolute(worktree, &read.path) }],
            })],
            EventBody::FileChanged(changed) => {
                let (kind, verb) = match changed.change {
                    Some(FileChangeKind::Deleted) => ("delete", "Deleted"),
                    Some(FileChangeKind::Renamed) => ("move", "Moved to"),
                    Some(FileChangeKind::Added) => ("edit", "Added"),
                    _ => ("edit", "Changed"),
                };
                vec![json!({
                    "sessionUpdate": "tool_call",
                    "toolCallId": tool_id(&changed.tool_use_id),
                    "title": format!("{verb} {}", changed.path),
                    "kind": kind,
                    "status": "completed",
                    "locations": [{ "path": absolute(worktree, &changed.path) }],
                })]
            }
            EventBody::CommandStarted(started) => {
                let id = started
                    .tool_use_id
                    .clone()
                    .unwrap_or_else(|| format!("command-{}", event.seq));
                self.commands
                    .entry(started.command.clone())
                    .or_default()
                    .push(id.clone());
                vec![json!({
                    "sessionUpdate": "tool_call",
                    "toolCallId": id,
                    "title": started.command,
                    "kind": "execute",
                    "status": "in_progress",
                    "rawInput": { "command": started.command },
                })]
            }
            EventBody::CommandFinished(finished) => {
                let started = self.commands.get_mut(&finished.command).and_then(|ids| {
                    let at = match &finished.tool_use_id {
                        Some(id) => ids.iter().position(|i| i == id)?,
                        None => 0,
                    };
                    (at < ids.len()).then(|| ids.remove(at))
                });
                let status = if finished.is_error || finished.exit_code.is_some_and(|c| c != 0) {
                    "failed"
                } else {
                    "completed"
                };
                let output = tail(&finished.output);
                let mut update = json!({
                    "sessionUpdate": "tool_call_update",
                    "status": status,
                    "content": [{ "type": "content", "content": { "type": "text", "text": output } }],
                    "rawOutput": { "exitCode": finished.exit_code },
                });
                match started {
                    Some(id) => update["toolCallId"] = json!(id),
                    // A command whose start was not seen: a whole tool call of its own.
                    None => {
                        update["sessionUpdate"] = json!("tool_call");
                        update["toolCallId"] = json!(tool_id(&finished.tool_use_id));
                        update["title"] = json!(finished.command);
                        update["kind"] = json!("execute");
                    }
                }
                vec![update]
            }
            EventBody::TestResult(test) => {
                let verdict = if test.passed { "passed" } else { "failed" };
                let summary = test
                    .summary
                    .as_deref()
                    .map(|s| format!(": {s}"))
                    .unwrap_or_default();
                let place = if test.sandboxed {
                    " in the sandbox"
                } else {
                    ""
                };
                vec![chunk(
                    "agent_thought_chunk",
                    &format!("Tests `{}` {verdict}{place}{summary}", test.command),
                )]
            }
            EventBody::ProviderStatus(status) => vec![chunk(
                "agent_thought_chunk",
                &format!("The model's provider: {}", status.message),
            )],
            EventBody::TaskFinished(finished) => {
                let mut updates = Vec::new();
                if let Some(diff) = &finished.diff_stat {
                    updates.push(chunk(
                        "agent_message_chunk",
                        &format!("\n\n{}", diff_words(diff)),
                    ));
                }
                updates.extend(self.usage(finished.cost_usd, finished.usage.as_ref()));
                updates
            }
            EventBody::TaskFailed(failed) => self.usage(failed.cost_usd, None),
            _ => Vec::new(),
        }
    }
}

impl Updates {
    /// The `usage_update` after a turn that cost `cost` (the session's cost so far, as ACP
    /// defines it) with `usage`: the context's tokens and size where the agent said them
    /// (`usage.context`), else 0 for both; none when neither is known.
    fn usage(&mut self, cost: Option<f64>, usage: Option<&Value>) -> Vec<Value> {
        let context = usage.map(|u| &u["context"]);
        let used = context.and_then(|c| c["used"].as_u64());
        let size = context.and_then(|c| c["size"].as_u64());
        if let Some(cost) = cost.filter(|c| c.is_finite() && *c >= 0.0) {
            self.spent += cost;
        } else if size.is_none() {
            return Vec::new();
        }
        let mut update = json!({
            "sessionUpdate": "usage_update",
            "used": used.unwrap_or(0),
            "size": size.unwrap_or(0),
        });
        if self.spent > 0.0 || cost.is_some() {
            update["cost"] = json!({ "amount": self.spent, "currency": "USD" });
        }
        vec![update]
    }
}

/// A text chunk update.
pub(super) fn chunk(kind: &str, text: &str) -> Value {
    json!({ "sessionUpdate": kind, "content": { "type": "text", "text": text } })
}

/// The change in words: "Changed 2 files (+3 −1): a.txt, b.txt", or "No change.".
pub(super) fn diff_words(diff: &DiffStat) -> String {
    if diff.is_empty() {
        return "No change.".to_owned();
    }
    let files: Vec<&str> = diff.files.iter().map(|f| f.path.as_str()).collect();
    let s = if diff.files_changed == 1 { "" } else { "s" };
    format!(
        "Changed {} file{s} (+{} −{}): {}",
        diff.files_changed,
        diff.insertions,
        diff.deletions,
        files.join(", ")
    )
}

fn absolute(worktree: &Path, path: &str) -> String {
    let path = Path::new(path);
    if path.is_absolute() {
        path.display().to_string()
    } else {
        worktree.join(path).display().to_string()
    }
}

/// The end of a long output, on a character boundary.
fn tail(output: &str) -> String {
    if output.len() <= OUTPUT_KEEP {
        return output.to_owned();
    }
    let mut start = output.len() - OUTPUT_KEEP;
    while !output.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &output[start..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use runner_contract::SessionId;
    use runner_contract::event::{CommandFinished, CommandStarted, FileChanged, Message};

    fn event(seq: u64, body: EventBody) -> Event {
        Event {
            session_id: SessionId::new_random(),
            seq,
            ts: "2026-01-01T00:00:00Z".into(),
            body,
            raw: None,
        }
    }

    #[test]
    fn a_command_is_one_tool_call_from_start_to_end() {
        let mut updates = Updates::default();
        let w = Path::new("/w");
        let started = updates.of(
            &event(
                1,
                EventBody::CommandStarted(CommandStarted {
                    command: "npm test".into(),
                    tool_use_id: None,
                }),
            ),
            w,
        );
        let finished = updates.of(
            &event(
                2,
                EventBody::CommandFinished(CommandFinished {
                    command: "npm test".into(),
                    exit_code: Some(1),
                    is_error: false,
                    output: "1 failing".into(),
                    tool_use_id: None,
                }),
            ),
            w,
        );
        assert_eq!(started[0]["toolCallId"], finished[0]["toolCallId"]);
        assert_eq!(finished[0]["sessionUpdate"], "tool_call_update");
        assert_eq!(finished[0]["status"], "failed");
        assert_eq!(finished[0]["content"][0]["content"]["text"], "1 failing");
    }

    #[test]
    fn files_are_absolute_and_messages_chunks() {
        let mut updates = Updates::default();
        let w = Path::new("/w");
        let changed = updates.of(
            &event(
                3,
                EventBody::FileChanged(FileChanged {
                    path: "src/a.js".into(),
                    tool: "Edit".into(),
                    change: Some(FileChangeKind::Deleted),
                    tool_use_id: Some("t1".into()),
                }),
            ),
            w,
        );
        assert_eq!(changed[0]["kind"], "delete");
        assert_eq!(changed[0]["locations"][0]["path"], "/w/src/a.js");
        let said = updates.of(
            &event(
                4,
                EventBody::Message(Message {
                    text: "hi".into(),
                    role: MessageRole::System,
                    ..Message::default()
                }),
            ),
            w,
        );
        assert_eq!(said[0], chunk("agent_thought_chunk", "hi"));
    }
}
