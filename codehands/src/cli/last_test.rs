//! The last test a session's agent ran, as part of the approval question: a run whose tests
//! failed, or never ran, never reads like a green one (README.md, "Your own repo, a real
//! agent").

use runner_contract::{Event, EventBody};

/// How a session's last test run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LastTest {
    /// It passed.
    Passed {
        /// The test command.
        command: String,
    },
    /// It failed (or could not run in the sandbox).
    Failed {
        /// The test command.
        command: String,
        /// What failed, when the output said.
        summary: Option<String>,
    },
    /// No test ran; `hidden` commands failed for want of a program the box hides, and the
    /// agent may have been refused the test command (`refused`).
    NeverRan {
        /// How many `box.hidden` warnings the run had.
        hidden: usize,
        /// The last test command the agent was refused, if it was refused one.
        refused: Option<String>,
    },
}

impl LastTest {
    /// From a session's events: the last `test.result` wins.
    pub fn of(events: &[Event]) -> Self {
        let hidden = events
            .iter()
            .filter(|e| matches!(e.body, EventBody::BoxHidden(_)))
            .count();
        let last = events.iter().rev().find_map(|e| match &e.body {
            EventBody::TestResult(t) => Some(t),
            _ => None,
        });
        match last {
            Some(t) if t.passed => Self::Passed {
                command: t.command.clone(),
            },
            Some(t) => Self::Failed {
                command: t.command.clone(),
                summary: t.summary.clone(),
            },
            None => Self::NeverRan {
                hidden,
                refused: refused_test(events),
            },
        }
    }

    /// Whether the last test run failed.
    pub fn failed(&self) -> bool {
        matches!(self, Self::Failed { .. })
    }

    /// One line for a person.
    pub fn line(&self) -> String {
        let flat = |text: &str| {
            runner_contract::present::visible(&text.replace(['\n', '\r'], " "), false).into_owned()
        };
        match self {
            Self::Passed { command } => format!("last test: passed ({})", flat(command)),
            Self::Failed { command, summary } => format!(
                "last test: FAILED ({}{})",
                flat(command),
                summary
                    .as_deref()
                    .map(|s| format!(": {}", flat(s)))
                    .unwrap_or_default()
            ),
            Self::NeverRan { hidden, refused } => {
                let mut why = Vec::new();
                if let Some(command) = refused {
                    why.push(format!(
                        "the agent was refused `{}`: the yellow line above names the setting \
                         that allows it",
                        flat(command)
                    ));
                }
                if *hidden > 0 {
                    why.push(format!(
                        "{hidden} command(s) did not find their program in the box: see the \
                         yellow lines above"
                    ));
                }
                if why.is_empty() {
                    "last test: tests never ran".to_owned()
                } else {
                    format!("last test: tests never ran ({})", why.join("; "))
                }
            }
        }
    }
}

/// The last test command the agent was refused: a refusal (`message` with `denied: true`)
/// belongs to the command started before it that has not finished yet, as every agent
/// that reports refused commands orders them (started, refused, finished).
fn refused_test(events: &[Event]) -> Option<String> {
    let mut open: Vec<&str> = Vec::new();
    let mut refused = None;
    for event in events {
        match &event.body {
            EventBody::CommandStarted(c) => open.push(&c.command),
            EventBody::CommandFinished(c) => {
                if let Some(at) = open.iter().rposition(|o| *o == c.command) {
                    open.remove(at);
                }
            }
            EventBody::Message(m) if m.denied => {
                if let Some(command) = open
                    .last()
                    .filter(|c| runner_contract::testrun::is_test_command(c))
                {
                    refused = Some((*command).to_owned());
                }
            }
            _ => {}
        }
    }
    refused
}

#[cfg(test)]
mod tests {
    use super::*;
    use runner_contract::event::{BoxHidden, TestResult};
    use runner_contract::{EventSequence, SessionId};

    fn events(bodies: Vec<EventBody>) -> Vec<Event> {
        let mut seq = EventSequence::new(SessionId::new_random());
        bodies.into_iter().map(|b| seq.next(b, None)).collect()
    }

    fn test(command: &str, passed: bool) -> EventBody {
        EventBody::TestResult(TestResult {
            command: command.into(),
            passed,
            exit_code: Some(if passed { 0 } else { 1 }),
            sandboxed: false,
            summary: (!passed).then(|| "2 failing".into()),
            tool_use_id: None,
            could_not_run: None,
        })
    }

    #[test]
    fn the_last_test_result_wins() {
        let failed_then_passed = events(vec![test("npm test", false), test("npm test", true)]);
        assert_eq!(
            LastTest::of(&failed_then_passed).line(),
            "last test: passed (npm test)"
        );
        let passed_then_failed = events(vec![test("npm test", true), test("npm test", false)]);
        let last = LastTest::of(&passed_then_failed);
        assert!(last.failed());
        assert_eq!(last.line(), "last test: FAILED (npm test: 2 failing)");
    }

    #[test]
    fn no_test_is_said_with_what_the_box_hid() {
        assert_eq!(LastTest::of(&[]).line(), "last test: tests never ran");
        let hidden = events(vec![EventBody::BoxHidden(BoxHidden {
            command: "cargo test".into(),
            program: "cargo".into(),
            found: "/home/me/.cargo/bin/cargo".into(),
            folder: "/home/me/.cargo".into(),
        })]);
        let last = LastTest::of(&hidden);
        assert!(!last.failed());
        assert!(
            last.line().contains("1 command(s) did not find"),
            "{}",
            last.line()
        );
    }

    #[test]
    fn a_refused_test_command_is_why_no_test_ran() {
        use runner_contract::event::{CommandFinished, CommandStarted, Message};
        let started = |command: &str| {
            EventBody::CommandStarted(CommandStarted {
                command: command.into(),
                tool_use_id: None,
            })
        };
        let finished = |command: &str| {
            EventBody::CommandFinished(CommandFinished {
                command: command.into(),
                exit_code: None,
                is_error: true,
                output: String::new(),
                tool_use_id: None,
            })
        };
        let refused = || {
            EventBody::Message(Message {
                text: "Claude Code was refused Bash: cargo test two".into(),
                denied: true,
                tool: Some("Bash".into()),
                ..Message::default()
            })
        };
        let run = events(vec![
            started("curl -s x"),
            refused(),
            finished("curl -s x"),
            started("cargo test two"),
            refused(),
            finished("cargo test two"),
        ]);
        let last = LastTest::of(&run);
        assert_eq!(
            last,
            LastTest::NeverRan {
                hidden: 0,
                refused: Some("cargo test two".into())
            }
        );
        assert!(
            last.line()
                .starts_with("last test: tests never ran (the agent was refused `cargo test two`"),
            "{}",
            last.line()
        );
        // A refused command that runs no tests is not a refused test.
        let curl_only = events(vec![started("curl -s x"), refused(), finished("curl -s x")]);
        assert_eq!(
            LastTest::of(&curl_only).line(),
            "last test: tests never ran"
        );
    }
}
