//! The last test a session's agent ran, as part of the approval question: a run whose tests
//! failed, or never ran, never reads like a green one (README.md, "Your own repo, a real
//! agent").

use runner_core::{Event, EventBody};

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
    /// No test ran; `hidden` commands failed for want of a program the box hides.
    NeverRan {
        /// How many `box.hidden` warnings the run had.
        hidden: usize,
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
            None => Self::NeverRan { hidden },
        }
    }

    /// Whether the last test run failed.
    pub fn failed(&self) -> bool {
        matches!(self, Self::Failed { .. })
    }

    /// One line for a person.
    pub fn line(&self) -> String {
        let flat = |text: &str| {
            runner_core::present::visible(&text.replace(['\n', '\r'], " "), false).into_owned()
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
            Self::NeverRan { hidden: 0 } => "last test: tests never ran".to_owned(),
            Self::NeverRan { hidden } => format!(
                "last test: tests never ran ({hidden} command(s) did not find their program in \
                 the box: see the yellow lines above)"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runner_core::event::{BoxHidden, TestResult};
    use runner_core::{EventSequence, SessionId};

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
}
