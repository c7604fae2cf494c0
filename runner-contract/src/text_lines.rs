//! A parser for agents that print plain text: each line is a message, and the exit code
//! says how the run ended (a formatter or codemod run as an agent, a profile's `text`
//! parser). Test commands still become `command.*` and `test.result` only when an agent
//! says it ran one, so plain text never claims a test result.

use crate::event::{EventBody, FailureKind, Message, MessageRole, TaskFailed, TaskFinished};
use crate::traits::agent::AgentParser;

/// How many of the last lines make the result text.
const RESULT_LINES: usize = 20;

/// Plain text lines as `message` events; the exit code ends the run at `finish`.
#[derive(Debug, Default)]
pub struct TextLinesParser {
    /// The last non-empty lines, for the result.
    tail: std::collections::VecDeque<String>,
}

impl AgentParser for TextLinesParser {
    fn parse_line(&mut self, line: &str) -> Vec<EventBody> {
        let text = line.trim_end_matches('\r');
        if text.trim().is_empty() {
            return Vec::new();
        }
        if self.tail.len() == RESULT_LINES {
            self.tail.pop_front();
        }
        self.tail.push_back(text.to_owned());
        vec![EventBody::Message(Message {
            role: MessageRole::Assistant,
            text: text.to_owned(),
            denied: false,
            tool: None,
        })]
    }

    fn finish(&mut self, exit_code: Option<i32>) -> Vec<EventBody> {
        let text = Vec::from(std::mem::take(&mut self.tail)).join("\n");
        let end = match exit_code {
            Some(0) => EventBody::TaskFinished(TaskFinished {
                result: (!text.is_empty()).then_some(text),
                ..TaskFinished::default()
            }),
            code => EventBody::TaskFailed(TaskFailed {
                reason: FailureKind::AgentError,
                message: match code {
                    Some(code) => format!("the agent exited with code {code}: its output says why"),
                    None => "the agent was ended by a signal".to_owned(),
                },
                // The runner fills in what the agent wrote on stderr; its stdout is in the
                // messages already.
                stderr: None,
                exit_code: code,
                cost_usd: None,
            }),
        };
        vec![end]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_become_messages_and_exit_zero_finishes() {
        let mut parser = TextLinesParser::default();
        assert_eq!(parser.parse_line("Found 2 errors (2 fixed).").len(), 1);
        assert!(parser.parse_line("   ").is_empty());
        let end = parser.finish(Some(0));
        match &end[..] {
            [EventBody::TaskFinished(done)] => {
                assert_eq!(done.result.as_deref(), Some("Found 2 errors (2 fixed)."))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_failing_exit_fails_with_its_code() {
        let mut parser = TextLinesParser::default();
        parser.parse_line("error: boom");
        match &parser.finish(Some(2))[..] {
            [EventBody::TaskFailed(failed)] => {
                assert_eq!(failed.exit_code, Some(2));
                assert_eq!(failed.reason, FailureKind::AgentError);
                assert_eq!(
                    failed.stderr, None,
                    "stdout is no stderr: the runner adds that"
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
