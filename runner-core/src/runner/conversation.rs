//! A turn that takes input while it runs (an agent invoked with `StdinClose::Conversation`):
//! the supervisor's side of steering, permission requests and interrupts. It reads the
//! turn's inbox (`inbox.rs`), gives each request to the agent through its input file, keeps
//! the permission requests waiting for an answer with their deadlines, and says when the
//! agent has taken in everything it was sent, so that a result may end the turn.
//!
//! What it adds to the log (`permission.resolved`) depends on callers, not on the agent's
//! output: a supervisor that takes the turn over does not get it again from a replay, so
//! it is left out of the events a replay skips (`run.rs`), and recomputed here from the
//! log, the inbox and the input file instead.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::control::RunFiles;
use super::inbox::{self, InboxReader, Request};
use runner_contract::event::{EventBody, MessageRole, PermissionOutcome, PermissionResolved};
use runner_contract::options::{PermissionAnswer, PermissionMode, Permissions};
use runner_contract::traits::agent::{Agent, AgentInput};

/// What a turn's agent is told when nobody answered its permission request in time.
pub(super) fn timeout_message(limit: Duration) -> String {
    format!(
        "nobody answered this permission request within {}: it is denied",
        super::watched::human(limit)
    )
}

/// What an agent is told when it asks in a run that does not ask the caller.
const NOT_ASKING: &str = "this run does not ask for permission: the tool is denied";

/// Why a request still waiting when the turn ended was denied.
const WITHDRAWN: &str = "the turn ended before an answer came: the tool did not run";

/// The conversation side of one turn.
pub(super) struct Conversation {
    agent: Arc<dyn Agent>,
    files: RunFiles,
    turn: u64,
    inbox: InboxReader,
    /// Permission requests waiting for an answer: the time they are denied at, and the
    /// tool's input as asked.
    waiting: BTreeMap<String, (Instant, serde_json::Value)>,
    /// Requests the log already says are resolved.
    resolved: HashSet<String>,
    /// When the log says requests were made (RFC 3339), for a supervisor taking over: a
    /// deadline runs from the request, not from the takeover.
    asked_at: HashMap<String, String>,
    /// Texts given to the agent that it has not yet said it took in.
    untaken: Vec<String>,
    /// Texts the agent said it took in that were not (yet) known as given: the prompt, or,
    /// for a supervisor taking over, inputs given before it read the inbox.
    taken: Vec<String>,
    /// Whether an interrupt was given to the agent.
    pub(super) interrupted: bool,
    /// Whether stdin was closed: nothing more can be given.
    closed: bool,
    limit: Duration,
    asks: bool,
}

impl Conversation {
    /// The conversation of `turn`; `resolved` are the permission requests whose
    /// `permission.resolved` the log already holds.
    pub(super) fn new(
        agent: Arc<dyn Agent>,
        files: RunFiles,
        turn: u64,
        permissions: Permissions,
        resolved: HashSet<String>,
        asked_at: HashMap<String, String>,
    ) -> Self {
        Self {
            agent,
            inbox: InboxReader::new(&files),
            files,
            turn,
            waiting: BTreeMap::new(),
            resolved,
            asked_at,
            untaken: Vec::new(),
            taken: Vec::new(),
            interrupted: false,
            closed: false,
            limit: permissions.timeout(),
            asks: permissions.mode == PermissionMode::Ask,
        }
    }

    /// Looks at an event the agent's output gave: a permission request starts waiting
    /// (or, taken over, is found answered already), and an input the agent took in is
    /// no longer owed. Returns the events to add.
    pub(super) fn see(&mut self, body: &EventBody) -> Vec<EventBody> {
        match body {
            EventBody::PermissionRequested(asked) => {
                if self.resolved.contains(&asked.request_id) {
                    return Vec::new();
                }
                let limit = if self.asks {
                    self.limit
                } else {
                    Duration::ZERO
                };
                // Denied for want of an answer by a supervisor that went away before it
                // could say so.
                let denial = self.denial(&asked.request_id, &asked.input);
                if denial
                    .as_deref()
                    .is_some_and(|line| inbox::delivered(&self.files, self.turn, line))
                {
                    return vec![self.resolve(&asked.request_id, None)];
                }
                let waited = self
                    .asked_at
                    .get(&asked.request_id)
                    .and_then(|ts| humantime::parse_rfc3339(ts).ok())
                    .and_then(|at| std::time::SystemTime::now().duration_since(at).ok())
                    .unwrap_or_default();
                self.waiting.insert(
                    asked.request_id.clone(),
                    (
                        Instant::now() + limit.saturating_sub(waited),
                        asked.input.clone(),
                    ),
                );
                Vec::new()
            }
            EventBody::Message(message) if message.role == MessageRole::User => {
                match self.untaken.iter().position(|t| *t == message.text) {
                    Some(i) => drop(self.untaken.remove(i)),
                    None => self.taken.push(message.text.clone()),
                }
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    /// Whether a result now ends the turn: every input was taken in, or an interrupt
    /// ended it.
    pub(super) fn settled(&self) -> bool {
        self.interrupted || self.untaken.is_empty()
    }

    /// Whether a permission request is waiting (the agent prints nothing meanwhile).
    pub(super) fn waiting(&self) -> bool {
        !self.waiting.is_empty()
    }

    /// Nothing more is given to the agent: its stdin is closed. A request still waiting
    /// was withdrawn by the turn's end (an interrupt): it is denied, and the log says so.
    pub(super) fn close(&mut self) -> Vec<EventBody> {
        self.closed = true;
        let waiting: Vec<String> = self.waiting.keys().cloned().collect();
        waiting
            .into_iter()
            .map(|request_id| {
                self.waiting.remove(&request_id);
                self.resolved.insert(request_id.clone());
                EventBody::PermissionResolved(PermissionResolved {
                    request_id,
                    outcome: PermissionOutcome::Denied,
                    message: Some(WITHDRAWN.to_owned()),
                    updated_input: None,
                })
            })
            .collect()
    }

    /// Gives the agent what the inbox holds for this turn, and denies the requests whose
    /// time is up; returns the events to add and notes about requests that could not be
    /// given.
    pub(super) fn poll(&mut self) -> (Vec<EventBody>, Vec<String>) {
        let mut events = Vec::new();
        let mut notes = Vec::new();
        if self.closed {
            return (events, notes);
        }
        for request in self.inbox.read_new() {
            if request.turn() != self.turn {
                continue;
            }
            if let Err(e) = self.give(&request, &mut events) {
                notes.push(format!(
                    "cannot give the agent request {}: {e}",
                    request.id()
                ));
            }
        }
        let now = Instant::now();
        let due: Vec<(String, serde_json::Value)> = self
            .waiting
            .iter()
            .filter(|(_, (at, _))| *at <= now)
            .map(|(id, (_, input))| (id.clone(), input.clone()))
            .collect();
        for (request_id, input) in due {
            let Some(line) = self.denial(&request_id, &input) else {
                self.waiting.remove(&request_id);
                continue;
            };
            match inbox::deliver(&self.files, self.turn, &line) {
                Ok(_) => events.push(self.resolve(&request_id, None)),
                Err(e) => notes.push(format!("cannot deny permission request {request_id}: {e}")),
            }
        }
        (events, notes)
    }

    fn give(
        &mut self,
        request: &Request,
        events: &mut Vec<EventBody>,
    ) -> runner_contract::Result<()> {
        match request {
            Request::Send { id, text, .. } => {
                let line = self.agent.input_line(&AgentInput::User {
                    id: id.clone(),
                    text: text.clone(),
                })?;
                inbox::deliver(&self.files, self.turn, &line)?;
                // Taken over, the replay of the output may have shown it taken in already.
                match self.taken.iter().position(|t| t == text) {
                    Some(i) => drop(self.taken.remove(i)),
                    None => self.untaken.push(text.clone()),
                }
            }
            Request::Answer {
                request_id, answer, ..
            } => {
                let Some((_, input)) = self.waiting.get(request_id) else {
                    // Unknown, or resolved already (the caller is told by the log).
                    return Ok(());
                };
                let line = self.agent.input_line(&AgentInput::Permission {
                    request_id: request_id.clone(),
                    input: input.clone(),
                    answer: answer.clone(),
                })?;
                inbox::deliver(&self.files, self.turn, &line)?;
                events.push(self.resolve(request_id, Some(answer)));
            }
            Request::Interrupt {
                id,
                agent_session_id,
                ..
            } => {
                let line = self.agent.input_line(&AgentInput::Interrupt {
                    id: id.clone(),
                    agent_session_id: agent_session_id.clone(),
                })?;
                inbox::deliver(&self.files, self.turn, &line)?;
                self.interrupted = true;
            }
        }
        Ok(())
    }

    /// The line that denies `request_id` for want of an answer (the same every time).
    fn denial(&self, request_id: &str, input: &serde_json::Value) -> Option<String> {
        let message = if self.asks {
            timeout_message(self.limit)
        } else {
            NOT_ASKING.to_owned()
        };
        self.agent
            .input_line(&AgentInput::Permission {
                request_id: request_id.to_owned(),
                input: input.clone(),
                answer: PermissionAnswer::Deny {
                    message: Some(message),
                },
            })
            .ok()
    }

    /// `permission.resolved` for `request_id`: by `answer`, or (`None`) for want of one.
    fn resolve(&mut self, request_id: &str, answer: Option<&PermissionAnswer>) -> EventBody {
        self.waiting.remove(request_id);
        self.resolved.insert(request_id.to_owned());
        let (outcome, message, updated_input) = match answer {
            Some(PermissionAnswer::Allow { updated_input }) => {
                (PermissionOutcome::Allowed, None, updated_input.clone())
            }
            Some(PermissionAnswer::Deny { message }) => {
                (PermissionOutcome::Denied, message.clone(), None)
            }
            None if self.asks => (
                PermissionOutcome::TimedOut,
                Some(timeout_message(self.limit)),
                None,
            ),
            None => (PermissionOutcome::Denied, Some(NOT_ASKING.to_owned()), None),
        };
        EventBody::PermissionResolved(PermissionResolved {
            request_id: request_id.to_owned(),
            outcome,
            message,
            updated_input,
        })
    }
}
