//! The mini-swe-agent parser: stdout lines in, events out.
//!
//! The adapter runs mini with `--output /dev/stdout`, so after every step mini
//! writes its whole trajectory (its own record of the run, `mini-swe-agent-1.1`:
//! the OpenAI-style messages plus what mini did with each) on stdout;
//! `document.rs` cuts those documents out, and each one's new messages become
//! events:
//!
//! | trajectory message | event |
//! |---|---|
//! | the first document | `task.started` with the model from mini's config |
//! | `system`, and the `user` message holding the task | skipped: they are our prompt in mini's template |
//! | `assistant` text | `message` |
//! | `assistant` `extra.actions` (the commands mini runs, by tool call id) | `command.started` each |
//! | `tool` (by `tool_call_id`) | `command.finished` with `extra.returncode` and `extra.raw_output`, plus `test.result` for a test run |
//! | `user` with `extra.interrupt_type` (`FormatError`: no usable command) | `message` (role system) with the `<error>` it holds |
//! | `exit` with `exit_status` `Submitted` | `task.finished`: the submission, else the last text; the cost when litellm priced the model; the tokens summed from every response's `usage`; the model calls as `numTurns` |
//! | `exit` with another status | `provider.status` when it names provider trouble, then `task.failed` (see `ending.rs`) |
//! | a line outside a document | skipped when it is mini's or litellm's known chatter or JSON, else `message` (role system) |
//!
//! mini runs commands as plain subprocesses and edits files only through them
//! (`sed -i`, `cat <<EOF > file`), so it reports no file edits: there is no
//! `file.changed` or `file.read`, and the change shows in `task.finished`'s
//! `diffStat`, which the runner takes from the worktree. Each event's `raw` is the
//! line that completed its document.
//!
//! The submit command (`echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`) ends the run
//! from inside the step, so mini records no `tool` message for it, nor for the
//! other commands of that step: they finish when the `exit` message comes.

mod document;
mod ending;
mod wire;

use runner_contract::event::{CommandStarted, Message, MessageRole, TaskFinished, TaskStarted};
use runner_contract::{AgentParser, EventBody, testrun};
use serde_json::Value;

use document::{Piece, Splitter};
use wire::Trajectory;

/// The first line of the output of the command that ends a run.
const SUBMIT_MARKER: &str = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT";

/// Lines mini and litellm print besides the trajectory, skipped.
const CHATTER: &[&str] = &[
    "Building agent config from specs:",
    "Saved trajectory to ",
    // litellm's hint when it cannot price a model (mini goes on at $0).
    "Provider List: https://docs.litellm.ai/docs/providers",
    // litellm's footer to an error, which the trajectory's exit message then holds.
    "Give Feedback / Get Help: https://github.com/BerriAI/litellm/issues/new",
    "LiteLLM.Info: If you need to debug this error, use `litellm.turn_on_debug()'.",
];

/// Token counts summed over the run's model responses.
#[derive(Debug, Default)]
struct Tokens {
    prompt: u64,
    completion: u64,
    total: u64,
    seen: bool,
}

/// The parser of one run.
#[derive(Debug, Default)]
pub(crate) struct MiniParser {
    splitter: Splitter,
    /// How many messages of the trajectory have become events.
    seen: usize,
    started: bool,
    /// Set by the `exit` message; nothing after it counts.
    ended: bool,
    /// Commands started and not yet finished: tool call id and command, in order.
    pending: Vec<(Option<String>, String)>,
    /// The model's last text, the run's result when it submits nothing.
    last_text: Option<String>,
    tokens: Tokens,
}

impl AgentParser for MiniParser {
    fn parse_line(&mut self, line: &str) -> Vec<EventBody> {
        let mut events = Vec::new();
        for piece in self.splitter.push(line) {
            events.extend(self.piece(piece));
        }
        events
    }

    /// Owes the commands still open and a trajectory cut short. It never ends the
    /// run itself: without an `exit` message mini stopped before it could say why,
    /// and the runner's `no_result` failure carries its stderr (the traceback).
    fn finish(&mut self, _exit_code: Option<i32>) -> Vec<EventBody> {
        let mut events = Vec::new();
        if let Some(piece) = self.splitter.finish() {
            events.extend(self.piece(piece));
        }
        for (id, command) in std::mem::take(&mut self.pending) {
            events.push(without_result(
                command,
                None,
                true,
                "(the command did not finish before the agent ended)".to_owned(),
                id,
            ));
        }
        events
    }
}

impl MiniParser {
    fn piece(&mut self, piece: Piece) -> Vec<EventBody> {
        match piece {
            Piece::Line(line) => text_line(&line).into_iter().collect(),
            Piece::Cut(lines) => vec![system(format!(
                "mini-swe-agent's trajectory was cut short after {lines} lines; the run's transcript has them"
            ))],
            Piece::Document(text) => self.document(&text),
        }
    }

    fn document(&mut self, text: &str) -> Vec<EventBody> {
        let trajectory: Trajectory = match serde_json::from_str(text) {
            Ok(t @ Trajectory { .. }) if t.trajectory_format.starts_with("mini-swe-agent") => t,
            Ok(_) => return Vec::new(),
            // JSON that is not a trajectory is skipped like any JSON we do not know.
            Err(_) if serde_json::from_str::<Value>(text).is_ok() => return Vec::new(),
            Err(_) => return vec![system(text.to_owned())],
        };
        let mut events = Vec::new();
        if !self.started {
            self.started = true;
            let config = &trajectory.info.config;
            events.push(EventBody::TaskStarted(TaskStarted {
                model: config["model"]["model_name"].as_str().map(str::to_owned),
                cwd: config["environment"]["cwd"]
                    .as_str()
                    .filter(|c| !c.is_empty())
                    .map(str::to_owned),
                ..TaskStarted::default()
            }));
        }
        let total = trajectory.messages.len();
        let new: Vec<wire::Message> = trajectory.messages.into_iter().skip(self.seen).collect();
        self.seen = self.seen.max(total);
        for message in new {
            if self.ended {
                break;
            }
            events.extend(self.message(message, &trajectory.info));
        }
        events
    }

    fn message(&mut self, message: wire::Message, info: &wire::Info) -> Vec<EventBody> {
        match message.role.as_str() {
            "assistant" => self.assistant(message),
            "tool" => self.tool(message),
            "user" => match &message.extra.interrupt_type {
                Some(kind) => vec![system(format!("{kind}: {}", interruption(&message.text())))],
                // The task, in mini's template.
                None => Vec::new(),
            },
            "exit" => self.exit(message, info),
            _ => Vec::new(),
        }
    }

    fn assistant(&mut self, message: wire::Message) -> Vec<EventBody> {
        let mut events = Vec::new();
        if let Some(usage) = message.extra.response.get("usage") {
            let count = |field: &str| usage.get(field).and_then(Value::as_u64).unwrap_or(0);
            self.tokens.prompt += count("prompt_tokens");
            self.tokens.completion += count("completion_tokens");
            self.tokens.total += count("total_tokens");
            self.tokens.seen = true;
        }
        let text = message.text();
        if !text.trim().is_empty() {
            self.last_text = Some(text.clone());
            events.push(EventBody::Message(Message {
                text,
                ..Message::default()
            }));
        }
        for action in message.extra.actions {
            self.pending
                .push((action.tool_call_id.clone(), action.command.clone()));
            events.push(EventBody::CommandStarted(CommandStarted {
                command: action.command,
                tool_use_id: action.tool_call_id,
            }));
        }
        events
    }

    fn tool(&mut self, message: wire::Message) -> Vec<EventBody> {
        let id = message.tool_call_id.clone();
        let at = match &id {
            Some(id) => self
                .pending
                .iter()
                .position(|(pending, _)| pending.as_deref() == Some(id)),
            None => (!self.pending.is_empty()).then_some(0),
        };
        let mut events = Vec::new();
        let command = match at {
            Some(at) => self.pending.remove(at).1,
            None => {
                // Never seen starting: start it now so every finish has its start.
                let command = "(a command mini-swe-agent did not announce)".to_owned();
                events.push(EventBody::CommandStarted(CommandStarted {
                    command: command.clone(),
                    tool_use_id: id.clone(),
                }));
                command
            }
        };
        let extra = message.extra;
        let mut output = extra
            .raw_output
            .unwrap_or_else(|| message_text(&message.content));
        let exception = extra.exception_info.filter(|e| !e.trim().is_empty());
        if let Some(exception) = &exception {
            if !output.is_empty() && !output.ends_with('\n') {
                output.push('\n');
            }
            output.push_str(exception);
        }
        let is_error = exception.is_some() || extra.returncode.is_some_and(|c| c != 0);
        events.extend(finished(command, extra.returncode, is_error, output, id));
        events
    }

    fn exit(&mut self, message: wire::Message, info: &wire::Info) -> Vec<EventBody> {
        self.ended = true;
        let status = message.extra.exit_status.clone().unwrap_or_default();
        let submitted = status == "Submitted";
        let mut events = Vec::new();
        let pending = std::mem::take(&mut self.pending);
        let submit_at = pending
            .iter()
            .position(|(_, command)| command.contains(SUBMIT_MARKER));
        let submission = message.extra.submission.clone().unwrap_or_default();
        for (i, (id, command)) in pending.into_iter().enumerate() {
            let (exit_code, is_error, output) = match submit_at {
                Some(at) if submitted && i == at => (Some(0), false, submission.clone()),
                Some(at) if submitted && i < at => (
                    None,
                    false,
                    "(mini-swe-agent keeps no output of a command run in the step that ended the run)"
                        .to_owned(),
                ),
                _ if submitted => (
                    None,
                    true,
                    "(not run: the run ended at the submit command before it)".to_owned(),
                ),
                _ => (
                    None,
                    true,
                    format!("(the run ended on {status} before this command's result)"),
                ),
            };
            // What these ran (if anything) is not known: no test result speaks of them.
            events.push(without_result(command, exit_code, is_error, output, id));
        }
        let spent = Some(info.model_stats.instance_cost).filter(|c| *c > 0.0);
        if submitted {
            let result = Some(submission)
                .filter(|s| !s.trim().is_empty())
                .or_else(|| self.last_text.clone());
            let usage = self.tokens.seen.then(|| {
                serde_json::json!({
                    "prompt_tokens": self.tokens.prompt,
                    "completion_tokens": self.tokens.completion,
                    "total_tokens": self.tokens.total,
                })
            });
            events.push(EventBody::TaskFinished(TaskFinished {
                result,
                cost_usd: spent,
                usage,
                num_turns: Some(info.model_stats.api_calls).filter(|n| *n > 0),
                ..TaskFinished::default()
            }));
        } else {
            let limit = info.config["agent"]["cost_limit"].as_f64();
            let ending = ending::ending(&status, &message.text(), spent, limit);
            events.extend(ending.provider.map(EventBody::ProviderStatus));
            events.push(EventBody::TaskFailed(ending.failed));
        }
        events
    }
}

/// A finished command, and its test result when it ran tests (the contract's one rule).
fn finished(
    command: String,
    exit_code: Option<i32>,
    is_error: bool,
    output: String,
    tool_use_id: Option<String>,
) -> Vec<EventBody> {
    testrun::finished(testrun::RanCommand {
        command,
        exit_code,
        is_error,
        output,
        tool_use_id,
    })
}

/// `command.finished` alone, for a command whose output mini did not keep.
fn without_result(
    command: String,
    exit_code: Option<i32>,
    is_error: bool,
    output: String,
    tool_use_id: Option<String>,
) -> EventBody {
    testrun::command_finished(testrun::RanCommand {
        command,
        exit_code,
        is_error,
        output,
        tool_use_id,
    })
}

/// What a message mini wrote to the model says, for a person: the part inside
/// `<error>…</error>` when there is one (the rest is guidance for the model).
fn interruption(text: &str) -> &str {
    text.split_once("<error>")
        .and_then(|(_, rest)| rest.split_once("</error>"))
        .map_or(text, |(error, _)| error)
        .trim()
}

fn message_text(content: &Value) -> String {
    content.as_str().unwrap_or_default().to_owned()
}

/// A line outside the trajectory: chatter and JSON are skipped, the rest is said.
fn text_line(line: &str) -> Option<EventBody> {
    let text = strip_ansi(line);
    let text = text.trim();
    if text.is_empty()
        || CHATTER.iter().any(|c| text.starts_with(c))
        || serde_json::from_str::<Value>(text).is_ok()
    {
        return None;
    }
    Some(system(text.to_owned()))
}

/// The text without terminal colour codes (`ESC [ … letter`), which litellm prints.
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if ('\u{40}'..='\u{7e}').contains(&c) {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn system(text: String) -> EventBody {
    EventBody::Message(Message {
        text,
        role: MessageRole::System,
        ..Message::default()
    })
}

#[cfg(test)]
mod tests;
