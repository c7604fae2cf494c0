//! What a caller says to a session after it started: a follow-up turn, a message that steers
//! the turn in flight, an answer to a permission request, an interrupt. Steering, answers
//! and interrupts go through the run's inbox (`inbox.rs`) to whichever process supervises
//! the turn; the caller returns once the agent has been given the request (the line is in
//! the turn's input file) or, for an answer, once the log says how the request ended.

use std::time::Duration;

use tokio::time::Instant;

use super::control::RunFiles;
use super::inbox::{self, Request};
use super::parts::{LocalRunner, MAX_PROMPT_BYTES};
use super::requests::{agent_of, remote_takes_no_input};
use super::{log, run};
use runner_contract::error::{Error, ErrorKind, Result};
use runner_contract::event::{EventBody, PermissionOutcome};
use runner_contract::ids::SessionId;
use runner_contract::session::{SessionRecord, SessionState};
use runner_contract::traits::agent::{Agent, AgentInput, AgentRequest};
use runner_contract::{Sent, options::PermissionAnswer};

/// How often a caller looks whether its request has reached the agent.
const POLL: Duration = Duration::from_millis(5);

impl LocalRunner {
    /// [`crate::Runner::send`].
    pub(super) async fn send_text(&self, id: &SessionId, text: String) -> Result<Sent> {
        AgentRequest::check_prompt(&text)?;
        if text.len() > MAX_PROMPT_BYTES {
            return Err(Error::invalid_input(format!(
                "the message is {} bytes, over the limit of {}: shorten it",
                text.len(),
                MAX_PROMPT_BYTES
            )));
        }
        let record = self.healed(self.records().store.get(id)?).await?;
        match record.state {
            SessionState::AwaitingApproval => self.follow_up(id, text).await.map(Sent::FollowUp),
            SessionState::Running => self.steer(&record, text).await,
            SessionState::Stopped => Err(not_now(
                id,
                SessionState::Stopped,
                "it takes no message: resume it with the text as the prompt (`codehands resume ID TEXT`), or reject it",
            )),
            other => Err(not_now(
                id,
                other,
                "it takes no more messages: start a new session",
            )),
        }
    }

    /// A follow-up turn of a session awaiting approval, in the same worktree and the same
    /// conversation of its agent.
    async fn follow_up(
        &self,
        id: &SessionId,
        text: String,
    ) -> Result<runner_contract::EventStream> {
        let (records, adapters) = (self.records(), self.adapters());
        // Not while an approve or reject of the same session is under way.
        let _lock = super::journal::SessionLock::acquire(&records.home, id).await?;
        let record = super::journal::settle(records, adapters, records.store.get(id)?).await?;
        record.state.check_move(
            SessionState::Running,
            SessionState::Running,
            "send a follow-up to",
        )?;
        // A session that was verified is verified again: the change is a new one.
        let verify = matches!(super::verify::Verdict::load(&records.home, id), Ok(Some(_)));
        self.next_turn(&record, text, verify, "follow-up").await
    }

    /// Another turn of `record`'s conversation, with the agent's resume, in the same
    /// worktree: a resume of a stopped session, or a follow-up of one awaiting approval
    /// (`what` names it in a refusal). The session goes back to the state it was in when the
    /// turn cannot be planned.
    pub(super) async fn next_turn(
        &self,
        record: &SessionRecord,
        prompt: String,
        verify: bool,
        what: &str,
    ) -> Result<runner_contract::EventStream> {
        let id = record.session_id;
        self.continuable(record, what)?;
        let resume_from = record
            .agent_session_id
            .clone()
            .unwrap_or_else(|| id.to_string());
        self.another_turn(record, prompt, Some(resume_from), verify, None, what)
            .await
    }

    /// Whether session `id` can take another turn of its agent's conversation (a follow-up,
    /// a resume): its agent can continue conversations, and the agent did not say, as its
    /// last turn started, that this one cannot (an ACP agent that offers neither
    /// `session/load` nor `session/resume`).
    pub async fn can_continue(&self, id: &SessionId) -> Result<bool> {
        let record = self.records().store.get(id)?;
        match self.continuable(&record, "follow-up") {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == ErrorKind::Unsupported => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Refuses, before anything is touched, another turn (`what`) of a session whose agent
    /// cannot continue its conversation.
    fn continuable(&self, record: &SessionRecord, what: &str) -> Result<()> {
        let agent = self.agent(&record.agent)?;
        let fix = format!(
            "approve or reject session {} (`codehands approve`, `codehands reject`: its \
             change is kept until then), or start a new one",
            record.session_id
        );
        if !agent.capabilities().resume {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "the {} agent cannot continue a conversation, so it takes no {what}: {fix}",
                    record.agent
                ),
            ));
        }
        let files = RunFiles::in_home(&self.records().home, &record.session_id);
        let scan = log::scan(
            &files.events(),
            0,
            |body| matches!(body, EventBody::TaskStarted(s) if s.can_continue.is_some()),
        )?;
        let said = scan.kept.into_iter().rev().find_map(|e| match e.body {
            EventBody::TaskStarted(s) => s.can_continue,
            _ => None,
        });
        if said == Some(false) {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "the {} agent said, as this session started, that it cannot continue it \
                     (it offers neither session/load nor session/resume), so the session takes \
                     no {what}: {fix}",
                    record.agent
                ),
            ));
        }
        Ok(())
    }

    /// Plans another turn of `record` in the same worktree (continuing the agent's
    /// conversation `resume_from`, or a fresh one) and hands it to a supervisor; `phase`
    /// names a workflow's phase the turn runs. The session goes back to the state it was
    /// in when the turn cannot be planned.
    pub(super) async fn another_turn(
        &self,
        record: &SessionRecord,
        prompt: String,
        resume_from: Option<String>,
        verify: bool,
        phase: Option<super::TurnPhase>,
        what: &str,
    ) -> Result<runner_contract::EventStream> {
        let (records, adapters) = (self.records(), self.adapters());
        let id = record.session_id;
        if !record.worktree_path.exists() {
            return Err(Error::not_found(format!(
                "the worktree of session {id} is gone: it takes no {what}"
            )));
        }
        super::preflight::isolation(
            adapters.confinement.as_deref(),
            record.isolation,
            record.engine,
        )?;
        let files = RunFiles::in_home(&records.home, &id);
        files.prepare()?;
        // The supervisor of the turn before may still be clearing its files (the record
        // said the turn was over just before): plan this one once it has let go, or its
        // clearing would take this turn's plan and reserve with it.
        let deadline = Instant::now() + run::SETTLE_WAIT;
        while super::control::SupervisorLock::is_held(&files) {
            if Instant::now() >= deadline {
                return Err(Error::new(
                    ErrorKind::Locked,
                    format!(
                        "the supervisor of session {id}'s last turn has not let go of it within {}: try again, or run `codehands recover`",
                        super::watched::human(run::SETTLE_WAIT)
                    ),
                ));
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        // The room the turn keeps for its end on a full disk (`disk.rs`).
        files.make_reserve().map_err(|e| {
            if super::disk::is_full(&e) {
                super::disk::full(records.home.root(), e.message(), "try again")
            } else {
                e
            }
        })?;
        let back_to = record.state;
        let record = records
            .store
            .move_to(&id, SessionState::Running, what)
            .inspect_err(|_| {
                files.release_reserve();
            })?;
        self.begin_turn(&record, prompt, resume_from, verify, phase)
            .inspect_err(|_| {
                // Nothing runs: back to where it was.
                files.release_reserve();
                let _ = records
                    .store
                    .update(&id, |r| r.move_to(back_to, "take the turn back"));
            })
    }

    /// Gives `text` to the running turn's agent; a turn that ends before its agent took it
    /// gets it as a follow-up instead.
    async fn steer(&self, record: &SessionRecord, text: String) -> Result<Sent> {
        let agent = self.capable(
            record,
            |c| c.steer,
            "take a message while it runs: wait for \
             the turn to end (the session then awaits approval) and send it as a follow-up",
        )?;
        let id = fresh_id();
        let line = agent.input_line(&AgentInput::User {
            id: id.clone(),
            text: text.clone(),
        })?;
        let (files, turn) = self.current_turn(record)?;
        inbox::post(
            &files,
            &Request::Send {
                id,
                turn,
                text: text.clone(),
            },
        )?;
        match self.until_given(record, &files, turn, &line).await? {
            true => Ok(Sent::Steered),
            false => {
                let now = self.records().store.get(&record.session_id)?;
                if now.state == SessionState::AwaitingApproval {
                    self.follow_up(&record.session_id, text)
                        .await
                        .map(Sent::FollowUp)
                } else {
                    Err(not_now(
                        &record.session_id,
                        now.state,
                        "its turn ended before the agent took the message in; nothing was sent",
                    ))
                }
            }
        }
    }

    /// [`crate::Runner::interrupt`].
    pub(super) async fn interrupt_turn(&self, id: &SessionId) -> Result<()> {
        let record = self.healed(self.records().store.get(id)?).await?;
        if record.state != SessionState::Running {
            return Err(not_now(id, record.state, "no turn is running to interrupt"));
        }
        let agent = self.capable(
            &record,
            |c| c.interrupt,
            "be interrupted: stop the \
             session instead (`stop`), then resume it",
        )?;
        let request = fresh_id();
        let (files, turn) = self.current_turn(&record)?;
        let agent_session_id = agent_session_of_turn(&files, &record)?;
        let line = agent.input_line(&AgentInput::Interrupt {
            id: request.clone(),
            agent_session_id: agent_session_id.clone(),
        })?;
        inbox::post(
            &files,
            &Request::Interrupt {
                id: request,
                turn,
                agent_session_id,
            },
        )?;
        match self.until_given(&record, &files, turn, &line).await? {
            true => Ok(()),
            false => Err(not_now(
                id,
                self.records().store.get(id)?.state,
                "its turn ended before the interrupt reached the agent",
            )),
        }
    }

    /// [`crate::Runner::answer`].
    pub(super) async fn answer_request(
        &self,
        id: &SessionId,
        request_id: &str,
        answer: PermissionAnswer,
    ) -> Result<()> {
        let record = self.healed(self.records().store.get(id)?).await?;
        let files = RunFiles::in_home(&self.records().home, id);
        if let Some(outcome) = resolution(&files, request_id)? {
            return Err(already(request_id, outcome));
        }
        if record.state != SessionState::Running {
            return Err(not_now(
                id,
                record.state,
                "no turn is running, so no permission request waits for an answer",
            ));
        }
        self.capable(&record, |c| c.ask_permission, "ask for permission")?;
        let (files, turn) = self.current_turn(&record)?;
        let asked = log::scan(
            &files.events(),
            0,
            |body| matches!(body, EventBody::PermissionRequested(r) if r.request_id == request_id),
        )?;
        let start = files.turn().map_or(0, |plan| plan.seq_start);
        if !asked.kept.is_empty() && asked.kept.iter().all(|e| e.seq <= start) {
            return Err(Error::invalid_input(format!(
                "permission request {request_id:?} belongs to an earlier turn of session {id}, \
                 which is over: answer one of the running turn"
            )));
        }
        if asked.kept.is_empty() {
            return Err(Error::not_found(format!(
                "session {id} has no permission request {request_id:?}: answer one that a \
                 `permission.requested` event names (`codehands events {id}`)"
            )));
        }
        let wanted = match answer {
            PermissionAnswer::Allow { .. } => PermissionOutcome::Allowed,
            PermissionAnswer::Deny { .. } => PermissionOutcome::Denied,
        };
        inbox::post(
            &files,
            &Request::Answer {
                id: fresh_id(),
                turn,
                request_id: request_id.to_owned(),
                answer,
            },
        )?;
        let deadline = Instant::now() + run::SETTLE_WAIT;
        // Only what the log gains is read on each look.
        let mut log = log::LogReader::new(files.events());
        let mut resolved = || -> Result<Option<PermissionOutcome>> {
            Ok(log.read_new()?.into_iter().find_map(|e| match e.body {
                EventBody::PermissionResolved(r) if r.request_id == request_id => Some(r.outcome),
                _ => None,
            }))
        };
        loop {
            let mut outcome = resolved()?;
            let state = self.records().store.get(id)?.state;
            if outcome.is_none() && state != SessionState::Running {
                // Resolved just before the turn ended?
                outcome = resolved()?;
            }
            match outcome {
                Some(outcome) if outcome == wanted => return Ok(()),
                Some(outcome) => return Err(already(request_id, outcome)),
                None => {}
            }
            if state != SessionState::Running {
                return Err(not_now(
                    id,
                    state,
                    "its turn ended before the answer reached the agent",
                ));
            }
            if Instant::now() >= deadline {
                return Err(Error::internal(format!(
                    "the answer to {request_id:?} did not reach session {id}'s agent within {}: \
                     its supervisor may hang; run `codehands recover`",
                    super::watched::human(run::SETTLE_WAIT)
                )));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// The session's agent, when its capabilities (`can`) allow what is asked.
    fn capable(
        &self,
        record: &SessionRecord,
        can: impl Fn(&runner_contract::AgentCapabilities) -> bool,
        what: &str,
    ) -> Result<std::sync::Arc<dyn Agent>> {
        if record.engine != runner_contract::options::Engine::Local {
            return Err(remote_takes_no_input(
                record.engine,
                &format!(
                    "wait for the turn to end, or stop it (`stop`), instead of asking it to {what}"
                ),
            ));
        }
        // A workflow's turn may run another agent than the session's first.
        let files = RunFiles::in_home(&self.records().home, &record.session_id);
        let name = match files.turn() {
            Some(plan) => agent_of(record, &plan).clone(),
            None => record.agent.clone(),
        };
        let agent = self.agent(&name)?;
        if !can(&agent.capabilities()) {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!("the {name} agent cannot {what}"),
            ));
        }
        Ok(agent)
    }

    /// The run files and the number of the running turn.
    fn current_turn(&self, record: &SessionRecord) -> Result<(RunFiles, u64)> {
        let files = RunFiles::in_home(&self.records().home, &record.session_id);
        let plan = files.turn().ok_or_else(|| {
            Error::new(
                ErrorKind::IllegalMove,
                format!(
                    "session {} has no turn under way: wait for it to start, or send a follow-up once it awaits approval",
                    record.session_id
                ),
            )
        })?;
        Ok((files, plan.turn))
    }

    /// Waits until `line` is in the turn's input file (`true`) or the turn ended without it
    /// (`false`).
    async fn until_given(
        &self,
        record: &SessionRecord,
        files: &RunFiles,
        turn: u64,
        line: &str,
    ) -> Result<bool> {
        let deadline = Instant::now() + run::SETTLE_WAIT;
        loop {
            if inbox::delivered(files, turn, line) {
                return Ok(true);
            }
            let now = self.records().store.get(&record.session_id)?;
            let same_turn = files.turn().is_some_and(|t| t.turn == turn);
            if now.state != SessionState::Running || !same_turn {
                return Ok(inbox::delivered(files, turn, line));
            }
            if Instant::now() >= deadline {
                return Err(Error::internal(format!(
                    "session {}'s agent was not given the message within {}: its supervisor may hang; run `codehands recover`",
                    record.session_id,
                    super::watched::human(run::SETTLE_WAIT)
                )));
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

/// The agent's id of the conversation as the running turn's `task.started` says it, else as
/// the record keeps it from an earlier turn.
fn agent_session_of_turn(files: &RunFiles, record: &SessionRecord) -> Result<Option<String>> {
    let start = files.turn().map_or(0, |plan| plan.seq_start);
    let scan = log::scan(
        &files.events(),
        start,
        |body| matches!(body, EventBody::TaskStarted(s) if s.agent_session_id.is_some()),
    )?;
    let started = scan.kept.into_iter().rev().find_map(|e| match e.body {
        EventBody::TaskStarted(s) => s.agent_session_id,
        _ => None,
    });
    Ok(started.or_else(|| record.agent_session_id.clone()))
}

/// How the log says permission request `request_id` ended, if it did.
fn resolution(files: &RunFiles, request_id: &str) -> Result<Option<PermissionOutcome>> {
    let scan = log::scan(
        &files.events(),
        0,
        |body| matches!(body, EventBody::PermissionResolved(r) if r.request_id == request_id),
    )?;
    Ok(scan.kept.iter().find_map(|e| match &e.body {
        EventBody::PermissionResolved(r) => Some(r.outcome),
        _ => None,
    }))
}

fn already(request_id: &str, outcome: PermissionOutcome) -> Error {
    let how = match outcome {
        PermissionOutcome::Allowed => "allowed",
        PermissionOutcome::Denied => "denied",
        PermissionOutcome::TimedOut => "denied for want of an answer in time",
    };
    Error::invalid_input(format!(
        "permission request {request_id:?} was already {how}: an answer counts only once"
    ))
}

/// Refuses what a session in `state` cannot take, saying why.
fn not_now(id: &SessionId, state: SessionState, why: &str) -> Error {
    Error::new(
        ErrorKind::IllegalMove,
        format!("session {id} is {state}: {why}"),
    )
}

fn fresh_id() -> String {
    uuid::Uuid::new_v4().to_string()
}
