//! Workflows: phases (plan, implement, review …) as turns of ONE session on ONE worktree,
//! each turn with its phase's agent and model (`turn.json` records the phase), so approve,
//! reject, stop, recover and the event log work on a workflow as on any session.
//!
//! `LocalRunner::run_workflow` checks everything before anything is made (every phase's
//! agent known and its program found, its model, the budget, the isolation), starts the
//! session with the first phase's turn, and hands the rest to a driver in this process: after
//! each turn it checks the phase's rules (a read-only phase changed nothing, a review
//! answered the JSON findings it was asked for, a `verify` gate's tests passed), adds
//! `phase.finished` and each `review.finding` to the log, and plans the next phase's turn;
//! findings above a review's gate go back to the implement phase before it, then the review
//! runs again, at most `rounds` rounds. Then `approval.requested`, as after any run. A phase
//! that broke its rules fails the session (`task.failed`, reason `phase`).
//!
//! The driver runs in the process that started the workflow, holding the run's driver lock
//! (`state.rs`), and keeps where it is in `runs/<id>/workflow.json` (written before each
//! phase's turn is planned and when the workflow ends). If that process dies, the turn under
//! way goes on like any turn, and `recover` ([`resume`]) takes the lock and goes on from the
//! state: the ended turn is checked by the same [`Driver::after_turn`] as a live one (its
//! `phase.finished` not written twice), then the next phases run. Until the state says done,
//! approve is refused ([`check_finished`]).

mod phase;
mod stall;
mod start;
mod state;

use futures::StreamExt;
use tokio::sync::mpsc::UnboundedSender;

use super::control::{RunFiles, SupervisorLock};
use super::parts::{Launcher, LocalRunner};
use super::{TurnPhase, log};
use runner_contract::error::{Error, Result};
use runner_contract::event::{ApprovalRequested, Event, EventBody, PhaseFinished};
use runner_contract::ids::SessionId;
use runner_contract::session::{SessionRecord, SessionState};
use runner_contract::traits::runner::EventStream;
use runner_contract::workflow::{Finding, PhaseKind, findings_text};
pub use stall::WorkflowProgress;
pub(crate) use stall::{progress, relaunch};
pub(super) use state::check_finished;
use state::{DriverLock, WorkflowState};

/// The most of the diff a prompt's `{diff}` holds, in bytes.
const MAX_DIFF_BYTES: usize = 1 << 20;

/// Runs the phases after the first: in the process that started the workflow, or in the
/// one that resumed it ([`resume`]). It holds the driver lock while it lives.
struct Driver {
    runner: LocalRunner,
    id: SessionId,
    files: RunFiles,
    _lock: DriverLock,
    /// Where it is (`workflow.json`): the phase under way, each phase's final text, the
    /// findings, and each agent's conversation in this session (a later phase of the same
    /// agent continues it: an agent keys its conversation by the session, so a second fresh
    /// one could clash with the first).
    state: WorkflowState,
    /// Why it stopped short of its end, if it did for a cause of its own.
    trouble: Option<String>,
}

/// How a phase's turn ended.
#[derive(Default)]
struct TurnOutcome {
    /// The turn's number (the seq of its `phase.started`).
    turn: Option<u64>,
    /// The agent's final text and cost, when it finished.
    finished: Option<(String, Option<f64>)>,
    /// The agent's id of the conversation, when its `task.started` said it.
    conversation: Option<String>,
}

impl Driver {
    /// Drives the phases from the turn of `first` on; why it stopped short, if it did.
    async fn drive(mut self, first: EventStream, tx: UnboundedSender<Event>) -> Option<String> {
        let mut stream = first;
        loop {
            let outcome = forward(&mut stream, &tx).await;
            match self.after_turn(outcome, false, &tx).await {
                Some(next) => stream = next,
                None => return self.trouble,
            }
        }
    }

    /// After the turn of the phase under way ended with `outcome` (`logged`: a driver
    /// before this one already wrote its `phase.finished`): checks the phase's rules, and
    /// starts the next phase's turn (its stream), or asks for approval, or fails the
    /// session; `None` once the workflow has ended or cannot go on.
    async fn after_turn(
        &mut self,
        outcome: TurnOutcome,
        logged: bool,
        tx: &UnboundedSender<Event>,
    ) -> Option<EventStream> {
        let (index, round) = (self.state.index, self.state.round);
        if let Some(conversation) = outcome.conversation.clone() {
            let agent = self.state.workflow.phases[index].agent.clone();
            self.state.conversations.insert(agent, conversation);
        }
        let Some((text, cost)) = outcome.finished else {
            // Failed, stopped, or the stream ended early: the session says which.
            return None;
        };
        match self
            .after_phase(index, round, outcome.turn, text, cost, logged)
            .await
        {
            Ok((events, Next::Phase(i, r))) => {
                send(tx, events);
                self.state.index = i;
                self.state.round = r;
            }
            Ok((events, Next::Approval)) => {
                send(tx, events);
                match self.request_approval().await {
                    Ok(events) => {
                        self.finish();
                        send(tx, events);
                    }
                    Err(e) => self.trouble(format!("cannot ask for approval: {e}")),
                }
                return None;
            }
            Err(Broken::Rules { events, message }) => {
                send(tx, events);
                match phase::fail(self.runner.records(), &self.id, message).await {
                    Ok(events) => {
                        self.finish();
                        send(tx, events);
                    }
                    Err(e) => self.trouble(format!("cannot fail the phase: {e}")),
                }
                return None;
            }
            Err(Broken::Stop(e)) if e.kind() == runner_contract::error::ErrorKind::IllegalMove => {
                // Decided or changed by another command: nothing of its own went wrong.
                tracing::warn!(session = %self.id, "the workflow cannot go on: {e}");
                return None;
            }
            Err(Broken::Stop(e)) => {
                self.trouble(format!("the workflow cannot go on: {e}"));
                return None;
            }
        }
        self.plan_next().await
    }

    /// Saves the state, then plans the turn of the phase it names next.
    async fn plan_next(&mut self) -> Option<EventStream> {
        let (index, round) = (self.state.index, self.state.round);
        let record = match self.runner.records().store.get(&self.id) {
            Ok(record) if record.state == SessionState::AwaitingApproval => record,
            Ok(_) | Err(_) => return None,
        };
        let logged = match log::scan(&self.files.events(), u64::MAX, |_| false) {
            Ok(scan) => scan.last_seq.max(record.last_seq),
            Err(e) => {
                self.trouble(format!("the workflow cannot go on: {e}"));
                return None;
            }
        };
        self.state.logged_before = logged;
        if let Err(e) = self.state.save(&self.files) {
            self.trouble(format!("the workflow cannot go on: {e}"));
            return None;
        }
        let prompt = self.prompt_of(index).await;
        let phase = &self.state.workflow.phases[index];
        let verify = phase.gate.is_some_and(|g| g.verify);
        let turn_phase = self.turn_phase(index, round);
        // The same agent's conversation goes on, when it can continue one.
        let resume_from = self
            .state
            .conversations
            .get(&phase.agent)
            .filter(|_| {
                self.runner
                    .agent(&phase.agent)
                    .is_ok_and(|a| a.capabilities().resume)
            })
            .cloned();
        match self
            .runner
            .another_turn(
                &record,
                prompt,
                resume_from,
                verify,
                Some(turn_phase),
                "phase",
            )
            .await
        {
            Ok(next) => Some(next),
            Err(e) => {
                let message = format!("cannot start phase {:?}: {e}", phase.name);
                self.trouble(message);
                None
            }
        }
    }

    /// Says why the workflow stops short of its end (in the log of this process, and to
    /// whoever resumed it).
    fn trouble(&mut self, message: String) {
        tracing::warn!(session = %self.id, "{message}");
        self.trouble = Some(message);
    }

    /// Records that the workflow has ended.
    fn finish(&mut self) {
        self.state.done = true;
        if let Err(e) = self.state.save(&self.files) {
            self.trouble(format!("cannot record the workflow's end: {e}"));
        }
    }

    /// Checks the phase that just ran, and says what comes next (`logged`: its events are
    /// in the log already, from a driver before this one).
    async fn after_phase(
        &mut self,
        index: usize,
        round: u32,
        turn: Option<u64>,
        text: String,
        cost: Option<f64>,
        logged: bool,
    ) -> std::result::Result<(Vec<Event>, Next), Broken> {
        let records = self.runner.records();
        let phase = self.state.workflow.phases[index].clone();
        let record = records.store.get(&self.id).map_err(Broken::Stop)?;
        let files = super::RunFiles::in_home(&records.home, &self.id);
        let mut broken = None;
        if phase.read_only() {
            broken = match turn {
                Some(turn) => {
                    super::fingerprint::wrote_anyway(&files, &record.worktree_path, turn).await
                }
                None => Some("the read-only phase's turn has no phase.started to check".into()),
            };
        }
        let mut bodies = Vec::new();
        let mut findings = Vec::new();
        if broken.is_none() && phase.kind == PhaseKind::Review {
            match runner_contract::workflow::parse_findings(&text) {
                Ok(found) => findings = found,
                Err(e) => broken = Some(format!("{}: ask it again or fix its prompt", e.message())),
            }
            bodies.extend(findings.iter().cloned().map(EventBody::ReviewFinding));
        }
        if broken.is_none()
            && phase.gate.is_some_and(|g| g.verify)
            && let Some(verdict) = super::verify::Verdict::load(&records.home, &self.id)
                .ok()
                .flatten()
            && verdict.outcome != super::verify::Outcome::Passed
        {
            broken = Some(format!("its gate's tests did not pass: {}", verdict.reason));
        }
        bodies.push(EventBody::PhaseFinished(PhaseFinished {
            name: phase.name.clone(),
            agent: phase.agent.clone(),
            model: phase.model.clone(),
            cost_usd: cost,
            round,
        }));
        let events = if logged {
            Vec::new()
        } else {
            phase::append_between(records, &self.id, bodies)
                .await
                .map_err(Broken::Stop)?
        };
        if let Some(why) = broken {
            return Err(Broken::Rules {
                events,
                message: format!(
                    "phase {:?} ({}) broke its rules: {why}; the change is kept for \
                     inspection (`codehands diff {}`), reject it to remove it",
                    phase.name, phase.agent, self.id
                ),
            });
        }
        self.state.texts.insert(index, text);
        let gate = phase.gate.and_then(|g| g.max_severity);
        if phase.kind == PhaseKind::Review {
            let above: Vec<Finding> = findings
                .into_iter()
                .filter(|f| gate.is_some_and(|max| f.severity > max))
                .collect();
            let back = self.state.workflow.implement_before(index);
            if !above.is_empty()
                && round < self.state.workflow.rounds
                && let Some(back) = back
            {
                self.state.findings = above;
                return Ok((events, Next::Phase(back, round + 1)));
            }
            self.state.findings = above;
        }
        if index + 1 < self.state.workflow.phases.len() {
            Ok((events, Next::Phase(index + 1, round)))
        } else {
            Ok((events, Next::Approval))
        }
    }

    /// `approval.requested` for the change the phases made.
    async fn request_approval(&self) -> Result<Vec<Event>> {
        let (records, adapters) = (self.runner.records(), self.runner.adapters());
        let record = records.store.get(&self.id)?;
        let diff = adapters.vcs.diff(&record.worktree_spec()).await?;
        phase::append_between(
            records,
            &self.id,
            vec![EventBody::ApprovalRequested(ApprovalRequested {
                branch: record.branch.clone(),
                diff_stat: diff.stat,
            })],
        )
        .await
    }

    /// The prompt of phase `index`: its template with `{task}`, `{previous}` (the final
    /// text of the phase before it, in its last run), `{diff}` (the worktree against the
    /// base; left empty before the session exists) and `{findings}`.
    async fn prompt_of(&self, index: usize) -> String {
        let phase = &self.state.workflow.phases[index];
        let diff = if phase.prompt.iter().any(|p| p == "{diff}") {
            self.diff_text().await
        } else {
            String::new()
        };
        let previous = index
            .checked_sub(1)
            .and_then(|i| self.state.texts.get(&i))
            .cloned()
            .unwrap_or_else(|| "(none)".into());
        let findings = findings_text(&self.state.findings);
        phase.render(|placeholder| match placeholder {
            "{task}" => self.state.task.clone(),
            "{previous}" => previous.clone(),
            "{diff}" => diff.clone(),
            "{findings}" => findings.clone(),
            _ => String::new(),
        })
    }

    async fn diff_text(&self) -> String {
        let (records, adapters) = (self.runner.records(), self.runner.adapters());
        let Ok(record) = records.store.get(&self.id) else {
            return "(no change yet)".into();
        };
        match adapters.vcs.diff(&record.worktree_spec()).await {
            Ok(diff) if diff.patch.is_empty() => "(no change)".into(),
            Ok(diff) if diff.patch.len() > MAX_DIFF_BYTES => {
                let mut end = MAX_DIFF_BYTES;
                while !diff.patch.is_char_boundary(end) {
                    end -= 1;
                }
                format!("{}\n… (the diff is cut here)", &diff.patch[..end])
            }
            Ok(diff) => diff.patch,
            Err(e) => format!("(the diff cannot be read: {e})"),
        }
    }

    fn turn_phase(&self, index: usize, round: u32) -> TurnPhase {
        let phase = &self.state.workflow.phases[index];
        TurnPhase {
            name: phase.name.clone(),
            kind: phase.kind,
            agent: phase.agent.clone(),
            model: phase.model.clone(),
            read_only: phase.read_only(),
            round,
            timeout_ms: self.state.workflow.timeout_ms(index, None),
        }
    }
}

/// What follows a phase.
enum Next {
    /// Phase `index` in round `round`.
    Phase(usize, u32),
    /// Nothing: the change awaits approval.
    Approval,
}

/// Why the workflow ends before approval.
enum Broken {
    /// A phase broke its rules: the session fails (after `events`, already in the log).
    Rules { events: Vec<Event>, message: String },
    /// The session cannot go on (decided by another command, its log unreadable …).
    Stop(Error),
}

/// Passes a turn's events on until its stream ends; how it ended.
async fn forward(stream: &mut EventStream, tx: &UnboundedSender<Event>) -> TurnOutcome {
    let mut outcome = TurnOutcome::default();
    while let Some(event) = stream.next().await {
        outcome.note(&event);
        let _ = tx.send(event);
    }
    outcome
}

impl TurnOutcome {
    /// Takes in one event of the turn (live, or read back from the log).
    fn note(&mut self, event: &Event) {
        match &event.body {
            EventBody::PhaseStarted(_) => self.turn = Some(event.seq),
            EventBody::TaskStarted(started) if started.agent_session_id.is_some() => {
                self.conversation = started.agent_session_id.clone()
            }
            EventBody::TaskFinished(done) => {
                self.finished = Some((done.result.clone().unwrap_or_default(), done.cost_usd))
            }
            EventBody::TaskFailed(_) | EventBody::TaskStopped(_) => self.finished = None,
            _ => {}
        }
    }
}

/// Goes on with the workflow of session `record`, whose driver died: when the session
/// awaits approval, its `workflow.json` says not done, nobody drives it (the driver lock is
/// free) and no turn is under way. The turn that ended is checked as the live driver would
/// have (`Driver::after_turn`), or the phase planned next is started, and the rest is driven
/// to its end here. Whether it was resumed; an error when it could not go on for a cause of
/// its own (a phase's agent that cannot start …), not when the session was decided, failed
/// or stopped meanwhile.
pub(super) async fn resume(launcher: &Launcher, record: &SessionRecord) -> Result<bool> {
    if record.state != SessionState::AwaitingApproval {
        return Ok(false);
    }
    let id = record.session_id;
    let files = RunFiles::in_home(&launcher.run.records.home, &id);
    match WorkflowState::load(&files)? {
        Some(state) if !state.done => {}
        _ => return Ok(false),
    }
    let Some(lock) = DriverLock::try_acquire(&files)? else {
        return Ok(false);
    };
    if SupervisorLock::is_held(&files) || files.turn().is_some() {
        return Ok(false);
    }
    // Read again under the lock: a driver may have gone on meanwhile.
    let Some(state) = WorkflowState::load(&files)?.filter(|s| !s.done) else {
        return Ok(false);
    };
    if launcher.run.records.store.get(&id)?.state != SessionState::AwaitingApproval {
        return Ok(false);
    }
    let events = log::read_all(&files.events())?;
    let mut driver = Driver {
        runner: LocalRunner::driver(launcher),
        id,
        files,
        _lock: lock,
        state,
        trouble: None,
    };
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let started = events.iter().position(|e| {
        e.seq > driver.state.logged_before && matches!(e.body, EventBody::PhaseStarted(_))
    });
    let next = match started {
        // The phase planned next never started: start it.
        None => driver.plan_next().await,
        Some(at) => {
            if let EventBody::PhaseStarted(p) = &events[at].body
                && (p.name != driver.state.next_phase() || p.round != driver.state.round)
            {
                return Err(Error::new(
                    runner_contract::error::ErrorKind::CorruptRecord,
                    format!(
                        "session {id}'s log started phase {:?} (round {}) where its workflow                          state says {:?} (round {})",
                        p.name,
                        p.round,
                        driver.state.next_phase(),
                        driver.state.round
                    ),
                ));
            }
            let mut outcome = TurnOutcome::default();
            let (mut logged, mut asked) = (false, false);
            for event in &events[at..] {
                outcome.note(event);
                match event.body {
                    EventBody::PhaseFinished(_) => logged = true,
                    EventBody::ApprovalRequested(_) => asked = true,
                    _ => {}
                }
            }
            if asked {
                // Approval was asked for: only the end was not recorded.
                driver.finish();
                return Ok(true);
            }
            driver.after_turn(outcome, logged, &tx).await
        }
    };
    let trouble = match next {
        Some(stream) => driver.drive(stream, tx).await,
        None => driver.trouble,
    };
    match trouble {
        Some(why) => Err(Error::internal(format!(
            "the workflow of session {id} stopped short of its end: {why}; `codehands recover` \
             tries again"
        ))),
        None => Ok(true),
    }
}

fn send(tx: &UnboundedSender<Event>, events: Vec<Event>) {
    for event in events {
        let _ = tx.send(event);
    }
}
