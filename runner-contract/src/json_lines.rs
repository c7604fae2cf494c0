//! A parser for programs that print JSON lines of their own: a [`JsonLinesMap`] says, by
//! field names, which lines are messages, commands (and whether a command ran tests), the
//! run's result with its cost and tokens, or its failure. A profile's `parser = "json-lines"`
//! with a `[json-lines]` table uses it (docs/adding-an-agent.md), so most CLIs
//! that print JSON need no crate of their own.
//!
//! Every line names what it is in one field (`kind`); each section of the map gives the
//! value of that field it takes (`when`) and the fields it reads, each a dotted path into
//! the line (`usage.cost_usd`). A line of another kind is skipped; a line that is not JSON
//! is kept as a message. A program that prints no result line ends the run at its exit:
//! code 0 finishes it (the last message as its result), any other fails it.

use serde::Deserialize;
use serde_json::Value;

use crate::event::{
    CommandStarted, EventBody, FailureKind, Message, MessageRole, TaskFailed, TaskFinished,
};
use crate::testrun::{self, RanCommand};
use crate::traits::agent::AgentParser;

/// Which lines mean what, by field names. Read strictly: an unknown key is refused.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct JsonLinesMap {
    /// The field that says what a line is (`type`, `event.kind`).
    pub kind: String,
    /// Lines that are the agent's messages.
    #[serde(default)]
    pub message: Option<MessageMap>,
    /// Lines that say a command started (optional: a finished command without one gets
    /// its `command.started` right before its end).
    #[serde(default)]
    pub command_started: Option<CommandStartedMap>,
    /// Lines that say a command finished.
    #[serde(default)]
    pub command: Option<CommandMap>,
    /// The line that ends the run with its result, cost and tokens.
    #[serde(default)]
    pub result: Option<ResultMap>,
    /// The line that ends the run as failed.
    #[serde(default)]
    pub error: Option<ErrorMap>,
}

/// A message: `when`, and the field holding its text.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct MessageMap {
    /// The value of the kind field.
    pub when: String,
    /// The field holding the text.
    pub text: String,
}

/// A command that started.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CommandStartedMap {
    /// The value of the kind field.
    pub when: String,
    /// The field holding the command line.
    pub command: String,
    /// The field holding the agent's id of the call, if it prints one.
    #[serde(default)]
    pub id: Option<String>,
}

/// A command that finished.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CommandMap {
    /// The value of the kind field.
    pub when: String,
    /// The field holding the command line.
    pub command: String,
    /// The field holding its exit code.
    #[serde(default)]
    pub exit_code: Option<String>,
    /// The field holding its output.
    #[serde(default)]
    pub output: Option<String>,
    /// The field holding the agent's id of the call.
    #[serde(default)]
    pub id: Option<String>,
    /// A true/false field that says whether the command ran tests; without it (or when a
    /// line lacks it) a command is a test run when it starts like a known test command.
    #[serde(default)]
    pub test: Option<String>,
}

/// The run's result.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ResultMap {
    /// The value of the kind field.
    pub when: String,
    /// The field holding the result's text.
    #[serde(default)]
    pub text: Option<String>,
    /// The field holding what the run cost, in US dollars.
    #[serde(default)]
    pub cost_usd: Option<String>,
    /// The field holding the input tokens used.
    #[serde(default)]
    pub input_tokens: Option<String>,
    /// The field holding the output tokens used.
    #[serde(default)]
    pub output_tokens: Option<String>,
}

/// The run's failure.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ErrorMap {
    /// The value of the kind field.
    pub when: String,
    /// The field holding why.
    pub message: String,
}

impl JsonLinesMap {
    /// Checks the map as a whole: every field a dotted path of non-empty names, at least
    /// one kind of line mapped, no `when` given to two kinds. The error names the key.
    pub fn check(&self) -> Result<(), String> {
        let mut paths: Vec<(&str, &str)> = vec![("kind", &self.kind)];
        let mut whens: Vec<(&str, &str)> = Vec::new();
        if let Some(m) = &self.message {
            whens.push(("message.when", &m.when));
            paths.push(("message.text", &m.text));
        }
        if let Some(m) = &self.command_started {
            whens.push(("command-started.when", &m.when));
            paths.push(("command-started.command", &m.command));
            paths.extend(m.id.as_deref().map(|p| ("command-started.id", p)));
        }
        if let Some(m) = &self.command {
            whens.push(("command.when", &m.when));
            paths.push(("command.command", &m.command));
            let optional = [
                ("command.exit-code", &m.exit_code),
                ("command.output", &m.output),
                ("command.id", &m.id),
                ("command.test", &m.test),
            ];
            paths.extend(
                optional
                    .iter()
                    .filter_map(|(k, p)| Some((*k, p.as_deref()?))),
            );
        }
        if let Some(m) = &self.result {
            whens.push(("result.when", &m.when));
            let optional = [
                ("result.text", &m.text),
                ("result.cost-usd", &m.cost_usd),
                ("result.input-tokens", &m.input_tokens),
                ("result.output-tokens", &m.output_tokens),
            ];
            paths.extend(
                optional
                    .iter()
                    .filter_map(|(k, p)| Some((*k, p.as_deref()?))),
            );
        }
        if let Some(m) = &self.error {
            whens.push(("error.when", &m.when));
            paths.push(("error.message", &m.message));
        }
        if whens.is_empty() {
            return Err(
                "maps no kind of line: add at least one of [json-lines.message], \
                 [json-lines.command], [json-lines.result]"
                    .into(),
            );
        }
        for (key, path) in paths {
            if path.split('.').any(|part| part.trim().is_empty()) {
                return Err(format!(
                    "key `{key}` is {path:?}, not a field name: give one such as \"text\" or \"usage.cost\""
                ));
            }
        }
        for (i, (key, when)) in whens.iter().enumerate() {
            if when.is_empty() {
                return Err(format!(
                    "key `{key}` is empty: give the value of `{}` that marks such a line",
                    self.kind
                ));
            }
            if let Some((other, _)) = whens[..i].iter().find(|(_, w)| w == when) {
                return Err(format!(
                    "keys `{other}` and `{key}` are both {when:?}: a kind of line means one thing"
                ));
            }
        }
        Ok(())
    }
}

/// The parser of one run over a [`JsonLinesMap`].
#[derive(Debug)]
pub struct JsonLinesParser {
    map: JsonLinesMap,
    /// The last message, the result of a run that ends at its exit.
    last_message: Option<String>,
    /// A result or error line was read: the run has ended.
    ended: bool,
}

impl JsonLinesParser {
    /// A parser for `map` (checked with [`JsonLinesMap::check`] when it was read).
    pub fn new(map: JsonLinesMap) -> Self {
        Self {
            map,
            last_message: None,
            ended: false,
        }
    }
}

/// A message of `text` (none for blank text), kept in `last` as the result of a run that
/// ends at its exit.
fn message(last: &mut Option<String>, text: String) -> Vec<EventBody> {
    if text.trim().is_empty() {
        return Vec::new();
    }
    *last = Some(text.clone());
    vec![EventBody::Message(Message {
        role: MessageRole::Assistant,
        text,
        denied: false,
        tool: None,
    })]
}

/// A finished command's events; with `with_start`, its `command.started` first (for a map
/// that has no `command-started` lines).
fn command(map: &CommandMap, line: &Value, with_start: bool) -> Vec<EventBody> {
    let Some(command) = text_at(line, &map.command) else {
        return Vec::new();
    };
    let tool_use_id = map.id.as_deref().and_then(|p| text_at(line, p));
    let exit_code = map
        .exit_code
        .as_deref()
        .and_then(|p| at(line, p)?.as_i64())
        .and_then(|c| i32::try_from(c).ok());
    let output = map
        .output
        .as_deref()
        .and_then(|p| text_at(line, p))
        .unwrap_or_default();
    let marked = map.test.as_deref().and_then(|p| at(line, p)?.as_bool());
    let mut events = Vec::new();
    if with_start {
        events.push(EventBody::CommandStarted(CommandStarted {
            command: command.clone(),
            tool_use_id: tool_use_id.clone(),
        }));
    }
    let ran = RanCommand {
        is_error: exit_code.is_some_and(|c| c != 0),
        command,
        exit_code,
        output,
        tool_use_id,
    };
    events.extend(match marked {
        Some(is_test) => testrun::finished_marked(ran, is_test),
        None => testrun::finished(ran),
    });
    events
}

/// The run's end from a result line; without a text field, `last` (the last message).
fn result(map: &ResultMap, line: &Value, last: &Option<String>) -> Vec<EventBody> {
    let number = |path: &Option<String>| path.as_deref().and_then(|p| at(line, p));
    let cost_usd = number(&map.cost_usd)
        .and_then(Value::as_f64)
        .filter(|c| c.is_finite() && *c >= 0.0);
    let input = number(&map.input_tokens).and_then(Value::as_u64);
    let output = number(&map.output_tokens).and_then(Value::as_u64);
    let usage = (input.is_some() || output.is_some()).then(|| {
        serde_json::json!({
            "input_tokens": input.unwrap_or(0),
            "output_tokens": output.unwrap_or(0),
        })
    });
    let result = map
        .text
        .as_deref()
        .and_then(|p| text_at(line, p))
        .or_else(|| last.clone());
    vec![EventBody::TaskFinished(TaskFinished {
        result,
        cost_usd,
        usage,
        ..TaskFinished::default()
    })]
}

impl AgentParser for JsonLinesParser {
    fn parse_line(&mut self, line: &str) -> Vec<EventBody> {
        let text = line.trim_end_matches('\r');
        let Ok(value) = serde_json::from_str::<Value>(text) else {
            // Not JSON: what the program said, kept as a message.
            return message(&mut self.last_message, text.to_owned());
        };
        let Some(kind) = text_at(&value, &self.map.kind) else {
            return Vec::new();
        };
        let map = &self.map;
        if let Some(m) = map.message.as_ref().filter(|m| m.when == kind) {
            return text_at(&value, &m.text)
                .map(|t| message(&mut self.last_message, t))
                .unwrap_or_default();
        }
        if let Some(m) = map.command_started.as_ref().filter(|m| m.when == kind) {
            return text_at(&value, &m.command)
                .map(|command| {
                    vec![EventBody::CommandStarted(CommandStarted {
                        command,
                        tool_use_id: m.id.as_deref().and_then(|p| text_at(&value, p)),
                    })]
                })
                .unwrap_or_default();
        }
        if let Some(m) = map.command.as_ref().filter(|m| m.when == kind) {
            return command(m, &value, map.command_started.is_none());
        }
        if let Some(m) = map.result.as_ref().filter(|m| m.when == kind) {
            self.ended = true;
            return result(m, &value, &self.last_message);
        }
        if let Some(m) = map.error.as_ref().filter(|m| m.when == kind) {
            self.ended = true;
            let message = text_at(&value, &m.message)
                .unwrap_or_else(|| "the agent reported an error without a message".into());
            return vec![EventBody::TaskFailed(TaskFailed {
                reason: FailureKind::AgentError,
                message,
                stderr: None,
                exit_code: None,
                cost_usd: None,
            })];
        }
        Vec::new()
    }

    fn finish(&mut self, exit_code: Option<i32>) -> Vec<EventBody> {
        if self.ended || (self.last_message.is_none() && exit_code == Some(0)) {
            // Ended by its own line; or a program that said nothing and exited cleanly,
            // which the runner ends as having no result.
            return Vec::new();
        }
        self.ended = true;
        vec![match exit_code {
            Some(0) => EventBody::TaskFinished(TaskFinished {
                result: self.last_message.take(),
                ..TaskFinished::default()
            }),
            code => EventBody::TaskFailed(TaskFailed {
                reason: FailureKind::AgentError,
                message: match code {
                    Some(code) => format!("the agent exited with code {code}: its output says why"),
                    None => "the agent was ended by a signal".to_owned(),
                },
                stderr: None,
                exit_code: code,
                cost_usd: None,
            }),
        }]
    }
}

/// The value at a dotted `path` in `line`.
fn at<'a>(line: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.')
        .try_fold(line, |value, part| value.get(part))
}

/// The text at `path`: a string as it is, a number or boolean written out.
fn text_at(line: &Value, path: &str) -> Option<String> {
    match at(line, path)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
