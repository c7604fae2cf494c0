//! The stream-json parser: Claude Code's lines mapped to our events (the table below), line by line.
//!
//! | Claude Code line | Event |
//! |---|---|
//! | `system`/`init` | `task.started` |
//! | `system`/`permission_denied` | `message` with `denied: true`, naming the rule that would allow it |
//! | a tool result whose `tool_result_meta` says `reject`, not reported yet | the same |
//! | `system`/`api_retry` | `provider.status` (live, at every retry) |
//! | assistant text block | `message` |
//! | assistant tool use: Read, Glob, Grep | `file.read` |
//! | assistant tool use: Edit, Write, MultiEdit, NotebookEdit | `file.changed`, once its result says it worked (a failed edit is a `message`) |
//! | assistant tool use: Bash, PowerShell | `command.started` |
//! | user tool result for a command | `command.finished`, plus `test.result` for a test run |
//! | assistant line with `is_api_error_message` | `provider.status` |
//! | `result` | `task.finished`, or `task.failed` when `is_error` is true; before it, a refusal of its `permission_denials` not reported yet |
//! | a line that is not JSON | `message` with the raw text |
//! | `rate_limit_event`, thinking, other system lines, unknown types | skipped |
//!
//! The outcome comes from `is_error`, never from `subtype` alone: 2.1.332 prints
//! `subtype: "success"` with `is_error: true` when the API gave up.

mod outcome;
mod provider;
use runner_contract::testrun;
mod wire;

use std::collections::HashMap;

use runner_contract::event::{
    CommandFinished, CommandStarted, FileChangeKind, FileChanged, FileRead, Message, MessageRole,
    ProviderState, TaskStarted,
};
use runner_contract::{AgentParser, EventBody};
use serde_json::value::RawValue;

use wire::{Block, Content, Line, MessageField, Str, ToolInput, ToolUseResult};

use crate::rules;

/// What a tool use does, as far as events go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ToolKind {
    Read,
    Change,
    Command,
    Other,
}

fn tool_kind(name: &str) -> ToolKind {
    match name {
        "Read" | "Glob" | "Grep" | "LS" | "NotebookRead" => ToolKind::Read,
        "Edit" | "Write" | "MultiEdit" | "NotebookEdit" => ToolKind::Change,
        "Bash" | "PowerShell" => ToolKind::Command,
        _ => ToolKind::Other,
    }
}

/// A tool use waiting for its result.
#[derive(Debug)]
struct Pending {
    tool: String,
    kind: ToolKind,
    /// The path for file tools, the command line for commands.
    target: String,
}

/// Claude Code's stream-json lines to events. One per run.
#[derive(Debug, Default)]
pub(crate) struct ClaudeParser {
    /// The agent's working folder (from `init`), to make paths repo-relative.
    cwd: Option<String>,
    pending: HashMap<String, Pending>,
    /// Tool uses refused by permission, whose error result is already reported.
    denied: std::collections::HashSet<String>,
    /// Tool uses whose refusal has a `message` already: each is said once, whichever line
    /// says it first.
    refusals_said: std::collections::HashSet<String>,
    /// Tool uses Claude Code asked the caller about (`can_use_tool`): their answer is the
    /// caller's, reported by the runner, not a refusal of the settings.
    asked: std::collections::HashSet<String>,
    /// The settings' deny rules of the turn, to tell a refusal they made from one an allow
    /// rule would lift.
    deny: Vec<String>,
    /// The last provider trouble seen, which explains an error result.
    provider: Option<ProviderState>,
    /// Whether `init` was seen.
    started: bool,
    /// What the results of this process cost so far.
    spent: outcome::Spent,
}

impl AgentParser for ClaudeParser {
    fn parse_line(&mut self, line: &str) -> Vec<EventBody> {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            return Vec::new();
        }
        match serde_json::from_str::<Line<'_>>(trimmed) {
            Ok(parsed) => self.events_of(parsed),
            // Valid JSON that is not an object (a number, a list) is nothing we know: skip.
            Err(_) if serde_json::from_str::<serde::de::IgnoredAny>(trimmed).is_ok() => Vec::new(),
            Err(_) => vec![system_message(line.to_owned(), None)],
        }
    }

    fn finish(&mut self, _exit_code: Option<i32>) -> Vec<EventBody> {
        let mut pending: Vec<(String, Pending)> = self.pending.drain().collect();
        pending.sort_by(|a, b| a.0.cmp(&b.0));
        pending
            .into_iter()
            .filter_map(|(id, p)| match p.kind {
                ToolKind::Command => Some(EventBody::CommandFinished(CommandFinished {
                    command: p.target,
                    exit_code: None,
                    is_error: true,
                    output: "the run ended before this command reported a result".into(),
                    tool_use_id: Some(id),
                })),
                // The change may have happened; the diff says for sure.
                ToolKind::Change => Some(EventBody::FileChanged(FileChanged {
                    path: p.target,
                    tool: p.tool,
                    change: None,
                    tool_use_id: Some(id),
                })),
                ToolKind::Read | ToolKind::Other => None,
            })
            .collect()
    }
}

fn system_message(text: String, tool: Option<String>) -> EventBody {
    EventBody::Message(Message {
        text,
        role: MessageRole::System,
        denied: false,
        tool,
    })
}

/// A user message Claude Code took in (the prompt, a follow-up, or a message that steered
/// the turn), as `--replay-user-messages` prints it back.
fn user_text(text: String) -> Option<EventBody> {
    (!text.trim().is_empty()).then_some(EventBody::Message(Message {
        text,
        role: MessageRole::User,
        denied: false,
        tool: None,
    }))
}

/// `can_use_tool`: Claude Code asks before it uses a tool outside the allow list (only when
/// it was started with `--permission-prompt-tool stdio`); other control requests say
/// nothing about the run.
fn control_request(line: &Line<'_>) -> Option<EventBody> {
    let request: wire::ControlRequest<'_> =
        serde_json::from_str(line.request?.get()).unwrap_or_default();
    if !request.subtype.is("can_use_tool") {
        return None;
    }
    let json = |raw: Option<&RawValue>| raw.and_then(|r| serde_json::from_str(r.get()).ok());
    Some(EventBody::PermissionRequested(
        runner_contract::event::PermissionRequested {
            request_id: line.request_id.owned()?,
            tool: request.tool_name.owned().unwrap_or_default(),
            input: json(request.input).unwrap_or(serde_json::Value::Null),
            suggestions: json(request.permission_suggestions),
            tool_use_id: request.tool_use_id.owned(),
        },
    ))
}

impl ClaudeParser {
    /// A parser for a turn whose settings refuse `deny` (Claude Code's rule syntax): a
    /// refusal one of them made says so instead of suggesting an allow rule.
    pub(crate) fn with_deny_rules(deny: Vec<String>) -> Self {
        Self {
            deny,
            ..Self::default()
        }
    }

    fn events_of(&mut self, line: Line<'_>) -> Vec<EventBody> {
        match line.kind.get() {
            Some("system") => self.system(&line).into_iter().collect(),
            Some("assistant") => self.assistant(line),
            Some("user") => self.user(line),
            Some("result") => {
                let mut events = self.late_refusals(&line);
                let mut event = outcome::result(&line, self.provider);
                self.spent.add(&line, &mut event);
                events.push(event);
                events
            }
            Some("control_request") => {
                let event = control_request(&line);
                if let Some(EventBody::PermissionRequested(asked)) = &event
                    && let Some(id) = &asked.tool_use_id
                {
                    self.asked.insert(id.clone());
                }
                event.into_iter().collect()
            }
            _ => Vec::new(),
        }
    }

    fn system(&mut self, line: &Line<'_>) -> Option<EventBody> {
        match line.subtype.get()? {
            // Each turn of a conversation prints `init` again (a message taken in after a
            // result starts one): the run started once.
            "init" if self.started => None,
            "init" => {
                self.started = true;
                self.cwd = line.cwd.owned();
                let tools = line
                    .tools
                    .and_then(|raw| serde_json::from_str::<Vec<Str<'_>>>(raw.get()).ok())
                    .unwrap_or_default()
                    .iter()
                    .filter_map(Str::owned)
                    .collect();
                Some(EventBody::TaskStarted(TaskStarted {
                    model: line.model.owned(),
                    agent_session_id: line.session_id.owned(),
                    cwd: line.cwd.owned(),
                    tools,
                    resumed: false,
                    can_continue: None,
                }))
            }
            "permission_denied" => {
                let tool = line.tool_name.owned();
                let id = line.tool_use_id.owned();
                let target = id
                    .as_ref()
                    .and_then(|id| self.pending.get(id))
                    .map(|p| p.target.clone());
                if let Some(id) = id {
                    self.denied.insert(id.clone());
                    self.refusals_said.insert(id);
                }
                Some(self.refusal(tool, target, line.decision_reason.get()))
            }
            "api_retry" => provider::from_retry(
                line.error.get(),
                wire::u64_of(line.error_status).and_then(|s| u16::try_from(s).ok()),
                wire::u64_of(line.attempt),
                wire::u64_of(line.retry_delay_ms),
            )
            .map(|status| {
                self.provider = Some(status.status);
                EventBody::ProviderStatus(status)
            }),
            _ => None,
        }
    }

    fn assistant(&mut self, line: Line<'_>) -> Vec<EventBody> {
        let MessageField::Body(body) = line.message else {
            return Vec::new();
        };
        let Content::Blocks(blocks) = body.content else {
            return Vec::new();
        };
        if wire::bool_of(line.is_api_error_message) == Some(true) {
            let text = blocks
                .iter()
                .filter(|b| b.kind.is("text"))
                .filter_map(|b| b.text.get())
                .collect::<Vec<_>>()
                .join("\n");
            let status = wire::u64_of(line.api_error_status).and_then(|s| u16::try_from(s).ok());
            return vec![
                match provider::from_api_error(line.error.get(), status, text.clone()) {
                    Some(status) => {
                        self.provider = Some(status.status);
                        EventBody::ProviderStatus(status)
                    }
                    None => system_message(text, None),
                },
            ];
        }
        blocks
            .iter()
            .filter_map(|block| self.assistant_block(block))
            .collect()
    }

    fn assistant_block(&mut self, block: &Block<'_>) -> Option<EventBody> {
        match block.kind.get()? {
            "text" => {
                let text = block.text.owned()?;
                Some(EventBody::Message(Message {
                    text,
                    role: MessageRole::Assistant,
                    denied: false,
                    tool: None,
                }))
            }
            "tool_use" => self.tool_use(block),
            _ => None,
        }
    }

    fn tool_use(&mut self, block: &Block<'_>) -> Option<EventBody> {
        let id = block.id.owned()?;
        let name = block.name.owned()?;
        let kind = tool_kind(&name);
        let input = block
            .input
            .and_then(|raw| serde_json::from_str::<ToolInput<'_>>(raw.get()).ok())
            .unwrap_or_default();
        let target = match (kind, name.as_str()) {
            (ToolKind::Command, _) => input.command.owned().unwrap_or_default(),
            (_, "Glob") => match (input.path.get(), input.pattern.get()) {
                (Some(dir), Some(pattern)) => format!("{}/{pattern}", self.relative(dir)),
                (None, Some(pattern)) => pattern.to_owned(),
                (dir, None) => self.relative(dir.unwrap_or(".")),
            },
            (_, "Grep") => input
                .path
                .get()
                .map(|p| self.relative(p))
                .or_else(|| input.pattern.owned())
                .unwrap_or_default(),
            _ => input
                .file_path
                .get()
                .or(input.notebook_path.get())
                .or(input.path.get())
                .map(|p| self.relative(p))
                .unwrap_or_default(),
        };
        let event = match kind {
            ToolKind::Read => Some(EventBody::FileRead(FileRead {
                path: target.clone(),
                tool: name.clone(),
                tool_use_id: Some(id.clone()),
            })),
            ToolKind::Command => Some(EventBody::CommandStarted(CommandStarted {
                command: target.clone(),
                tool_use_id: Some(id.clone()),
            })),
            ToolKind::Change | ToolKind::Other => None,
        };
        self.pending.insert(
            id,
            Pending {
                tool: name,
                kind,
                target,
            },
        );
        event
    }

    fn user(&mut self, line: Line<'_>) -> Vec<EventBody> {
        let MessageField::Body(body) = line.message else {
            return Vec::new();
        };
        let replay = wire::bool_of(line.is_replay) == Some(true);
        let blocks = match body.content {
            Content::Blocks(blocks) => blocks,
            Content::Text(text) if replay => return user_text(text).into_iter().collect(),
            Content::Text(_) | Content::Other => return Vec::new(),
        };
        if replay && !blocks.iter().any(|b| b.kind.is("tool_result")) {
            let text: Vec<&str> = blocks
                .iter()
                .filter(|b| b.kind.is("text"))
                .filter_map(|b| b.text.get())
                .collect();
            return user_text(text.join("\n")).into_iter().collect();
        }
        let mut events = Vec::new();
        for block in blocks.iter().filter(|b| b.kind.is("tool_result")) {
            self.tool_result(
                block,
                line.tool_use_result,
                line.tool_result_meta,
                &mut events,
            );
        }
        events
    }

    fn tool_result(
        &mut self,
        block: &Block<'_>,
        structured: Option<&RawValue>,
        line_meta: Option<&RawValue>,
        events: &mut Vec<EventBody>,
    ) {
        let Some(id) = block.tool_use_id.owned() else {
            return;
        };
        let Some(pending) = self.pending.remove(&id) else {
            return;
        };
        let is_error = wire::bool_of(block.is_error) == Some(true);
        let mut was_denied = self.denied.remove(&id);
        if !was_denied && rejected(line_meta, &id) {
            // Refused without a `permission_denied` line: said here, before its result.
            was_denied = true;
            if self.refusals_said.insert(id.clone()) {
                events.push(self.refusal(
                    Some(pending.tool.clone()),
                    Some(pending.target.clone()),
                    None,
                ));
            }
        }
        match pending.kind {
            ToolKind::Command => {
                let output = wire::result_text(block.content);
                let exit_code = exit_code(&output, is_error);
                let ran = testrun::RanCommand {
                    command: pending.target,
                    exit_code,
                    is_error,
                    output,
                    tool_use_id: Some(id),
                };
                if was_denied {
                    // A refused command ran nothing: no test result.
                    events.push(testrun::command_finished(ran));
                } else {
                    events.extend(testrun::finished(ran));
                }
            }
            _ if was_denied => {}
            ToolKind::Change if !is_error => {
                let change = match structured
                    .and_then(|raw| serde_json::from_str::<ToolUseResult<'_>>(raw.get()).ok())
                    .as_ref()
                    .and_then(|r| r.kind.get())
                {
                    Some("create") => Some(FileChangeKind::Added),
                    Some("update") => Some(FileChangeKind::Modified),
                    _ if pending.tool != "Write" => Some(FileChangeKind::Modified),
                    _ => None,
                };
                events.push(EventBody::FileChanged(FileChanged {
                    path: pending.target,
                    tool: pending.tool,
                    change,
                    tool_use_id: Some(id),
                }));
            }
            ToolKind::Change | ToolKind::Read | ToolKind::Other if is_error => {
                let text = wire::result_text(block.content);
                let text = strip_tool_error(&text);
                events.push(system_message(
                    format!("{} failed: {text}", pending.tool),
                    Some(pending.tool),
                ));
            }
            ToolKind::Change | ToolKind::Read | ToolKind::Other => {}
        }
    }

    /// The `message` of a refused tool use: the tool, what it was for (the command, the
    /// path), Claude Code's reason, then the setting that would allow it (ARCHITECTURE.md,
    /// "agent-claude").
    fn refusal(
        &self,
        tool: Option<String>,
        target: Option<String>,
        why: Option<&str>,
    ) -> EventBody {
        let name = tool.as_deref().unwrap_or("a tool");
        let target = target.filter(|t| !t.trim().is_empty());
        // A long command is cut, so that the advice after it stays on the live view's line.
        let what = target.as_deref().map_or_else(String::new, |t| {
            format!(": {}", runner_contract::present::one_line(t, 120))
        });
        let command = target
            .as_deref()
            .filter(|_| tool_kind(name) == ToolKind::Command);
        let advice = rules::advice(&self.deny, name, command);
        let why = why.map_or_else(String::new, |r| {
            format!(" ({})", runner_contract::present::one_line(r, 160))
        });
        EventBody::Message(Message {
            text: format!("Claude Code was refused {name}{what}{why} — {advice}"),
            role: MessageRole::System,
            denied: true,
            tool,
        })
    }

    /// The refusals a result line lists that no earlier line said (nor the caller answered).
    fn late_refusals(&mut self, line: &Line<'_>) -> Vec<EventBody> {
        let denials: Vec<wire::Denial<'_>> = line
            .permission_denials
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
            .unwrap_or_default();
        let mut events = Vec::new();
        for denial in denials {
            let Some(id) = denial.tool_use_id.owned() else {
                continue;
            };
            if self.asked.contains(&id) || !self.refusals_said.insert(id) {
                continue;
            }
            let input: ToolInput<'_> = denial
                .tool_input
                .and_then(|raw| serde_json::from_str(raw.get()).ok())
                .unwrap_or_default();
            let target = input
                .command
                .get()
                .or(input.file_path.get())
                .or(input.path.get())
                .map(str::to_owned);
            events.push(self.refusal(denial.tool_name.owned(), target, None));
        }
        events
    }

    /// A path relative to the agent's folder when it lies inside it.
    fn relative(&self, path: &str) -> String {
        if let Some(cwd) = self.cwd.as_deref()
            && let Some(rest) = path.strip_prefix(cwd)
        {
            if rest.is_empty() {
                return ".".into();
            }
            if let Some(rest) = rest.strip_prefix('/') {
                return rest.to_owned();
            }
        }
        path.to_owned()
    }
}

/// Whether a user line's `tool_result_meta` says tool use `id` was refused.
fn rejected(meta: Option<&RawValue>, id: &str) -> bool {
    meta.and_then(|raw| serde_json::from_str::<Vec<wire::ResultMeta<'_>>>(raw.get()).ok())
        .is_some_and(|entries| {
            entries.iter().any(|e| {
                e.id.is(id)
                    && e.permission_decision
                        .as_ref()
                        .is_some_and(|d| d.decision.is("reject"))
            })
        })
}

/// Claude Code's Bash result starts with "Exit code N" when the command failed.
fn exit_code(output: &str, is_error: bool) -> Option<i32> {
    if let Some(rest) = output.strip_prefix("Exit code ") {
        return rest
            .split(|c: char| !c.is_ascii_digit() && c != '-')
            .next()
            .and_then(|n| n.parse().ok());
    }
    (!is_error).then_some(0)
}

/// "<tool_use_error>Error: No such tool</tool_use_error>" → "No such tool".
fn strip_tool_error(text: &str) -> &str {
    let text = text.trim();
    let text = text
        .strip_prefix("<tool_use_error>")
        .and_then(|t| t.strip_suffix("</tool_use_error>"))
        .unwrap_or(text);
    text.strip_prefix("Error: ").unwrap_or(text)
}

#[cfg(test)]
mod tests;
