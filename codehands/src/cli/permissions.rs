//! The agent's permission requests asked of the person at the terminal while a run is
//! watched (`run --ask`, and the follow-ups of a session that asks): one question at a
//! time, in the order the requests came, each answered with `Runner::answer`.

use std::collections::VecDeque;
use std::io::Write;

use runner_contract::event::{EventBody, PermissionRequested};
use runner_contract::{PermissionAnswer, PermissionMode, Result, Runner, SessionId};

use super::output;
use super::view;

/// What the agent is told when the person says no (or input ended).
pub const DENIED: &str = "the person at the terminal denied it";

/// Whether the run of session `id` asks its permission requests here: the session asks
/// (its record says so), a person is at the terminal and stdout is not contract JSON.
/// A session that asks where nobody can be asked gets a note on stderr saying how to
/// answer, unless the caller chose JSON (then another process answers, as it meant).
pub async fn asked_here(runner: &dyn Runner, id: &SessionId, json: bool) -> Result<bool> {
    let record = runner.session(id).await?;
    if record.permissions.mode != PermissionMode::Ask || json {
        return Ok(false);
    }
    if output::interactive() {
        return Ok(true);
    }
    eprintln!(
        "note: session {} asks before a tool outside the allow list runs, and nobody can be \
         asked here: answer with `codehands answer {} REQUEST allow|deny` (a request nobody \
         answers is denied after {}s)",
        id.short(),
        id.short(),
        record.permissions.timeout().as_secs()
    );
    Ok(false)
}

/// The permission requests waiting for the person's answer.
pub struct Questions {
    on: bool,
    waiting: VecDeque<PermissionRequested>,
    /// Whether the first one's question is on the screen.
    shown: bool,
    /// The request whose question was put last.
    asked: Option<String>,
}

impl Questions {
    /// Questions asked only when `on`.
    pub fn new(on: bool) -> Self {
        Self {
            on,
            waiting: VecDeque::new(),
            shown: false,
            asked: None,
        }
    }

    /// Whether a request waits for the person's answer.
    pub fn waiting(&self) -> bool {
        !self.waiting.is_empty()
    }

    /// Takes note of an event: a request to ask, or one that was resolved without us (the
    /// time limit, or `codehands answer` from another process), which is not asked any more.
    pub fn note(&mut self, body: &EventBody) {
        match body {
            EventBody::PermissionRequested(request) if self.on => {
                self.waiting.push_back(request.clone());
            }
            EventBody::PermissionResolved(resolved) => {
                if self
                    .waiting
                    .front()
                    .is_some_and(|r| r.request_id == resolved.request_id)
                {
                    self.shown = false;
                }
                self.waiting.retain(|r| r.request_id != resolved.request_id);
            }
            _ => {}
        }
    }

    /// Removes the question from the screen (before an event's line is printed).
    pub fn hide(&mut self) {
        if self.shown {
            eprint!("\r\x1b[2K");
            let _ = std::io::stderr().flush();
            self.shown = false;
        }
    }

    /// Puts the first waiting request's question on the screen, if it is not there.
    pub fn show(&mut self) {
        let Some(request) = self.waiting.front() else {
            return;
        };
        if !self.shown {
            if self.asked.as_ref() != Some(&request.request_id) {
                super::keyboard::discard_typed_ahead();
                self.asked = Some(request.request_id.clone());
            }
            eprint!("{}", question(request));
            let _ = std::io::stderr().flush();
            self.shown = true;
        }
    }

    /// Asks nothing more (the run is being stopped).
    pub fn stop(&mut self) {
        self.hide();
        self.on = false;
        self.waiting.clear();
    }

    /// The person's answer (`None`: input ended) to the question on the screen: the
    /// request it answers and how.
    pub fn answered(&mut self, line: Option<String>) -> Option<(String, PermissionAnswer)> {
        let request = self.waiting.pop_front()?;
        self.shown = false;
        let answer = match line {
            Some(line) if allows(&line) => PermissionAnswer::Allow {
                updated_input: None,
            },
            Some(_) => deny(),
            None => {
                eprintln!("(end of input: denied)");
                deny()
            }
        };
        Some((request.request_id, answer))
    }
}

/// Answers on behalf of the person; a failure (the turn ended, the request timed out
/// meanwhile) is said on stderr, and the run goes on.
pub async fn answer(
    runner: &dyn Runner,
    id: &SessionId,
    request_id: &str,
    answer: PermissionAnswer,
) {
    if let Err(e) = runner.answer(id, request_id, answer).await {
        eprintln!("codehands: {e}");
    }
}

fn deny() -> PermissionAnswer {
    PermissionAnswer::Deny {
        message: Some(DENIED.to_owned()),
    }
}

/// `allow Bash: python3 -c "print(42)"? [y/N] `: the tool and its input on one line, with
/// the agent's control characters shown, never sent to the terminal.
pub fn question(request: &PermissionRequested) -> String {
    let tool = runner_contract::present::visible(&request.tool, false);
    let input = view::tool_input(&request.input);
    format!(
        "allow {tool}: {}? [y/N] ",
        runner_contract::present::visible(&input, false)
    )
}

/// Only a yes allows.
fn allows(line: &str) -> bool {
    matches!(line.trim().to_lowercase().as_str(), "y" | "yes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(id: &str, input: serde_json::Value) -> PermissionRequested {
        PermissionRequested {
            request_id: id.into(),
            tool: "Bash".into(),
            input,
            suggestions: None,
            tool_use_id: None,
        }
    }

    #[test]
    fn the_question_names_the_tool_and_its_input_on_one_line() {
        let asked = question(&request(
            "r1",
            json!({"command": "python3 -c \"print(42)\"\n\x1b[2J"}),
        ));
        assert_eq!(
            asked,
            "allow Bash: python3 -c \"print(42)\" \\x1b[2J? [y/N] "
        );
    }

    #[test]
    fn only_yes_allows_and_a_resolved_request_is_not_asked() {
        let mut questions = Questions::new(true);
        for id in ["r1", "r2", "r3"] {
            questions.note(&EventBody::PermissionRequested(request(id, json!({}))));
        }
        let (id, answer) = questions.answered(Some(" Yes".into())).unwrap();
        assert_eq!(id, "r1");
        assert_eq!(
            answer,
            PermissionAnswer::Allow {
                updated_input: None
            }
        );
        questions.note(&EventBody::PermissionResolved(
            runner_contract::event::PermissionResolved {
                request_id: "r2".into(),
                outcome: runner_contract::event::PermissionOutcome::TimedOut,
                message: None,
                updated_input: None,
            },
        ));
        let (id, answer) = questions.answered(Some("sure".into())).unwrap();
        assert_eq!(id, "r3");
        assert_eq!(answer, deny());
        assert!(!questions.waiting());
        assert!(questions.answered(None).is_none());
    }

    #[test]
    fn nothing_is_asked_when_off() {
        let mut questions = Questions::new(false);
        questions.note(&EventBody::PermissionRequested(request("r1", json!({}))));
        assert!(!questions.waiting());
    }
}
